//! The store at `s3://BUCKET/PREFIX`: the same files under the prefix,
//! written with one PUT each (docs/SCALING.md, "Object storage").
//!
//! A PUT of a whole object is atomic on S3 (a reader gets the old object
//! or the new one, never a part), which is what the local store's temp
//! file and rename give: the data files are put first and the manifest
//! last, so its PUT is the run's commit. Endpoint, region and credentials
//! come from the standard `AWS_*` variables (`AmazonS3Builder::from_env`).
//!
//! `object_store` is async and the store's callers are not: requests run
//! on one small runtime of this module's, and the caller's thread waits
//! for the answer (as it waits for a local file's `write`).

use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use object_store::aws::AmazonS3Builder;
use object_store::path::Path as Key;
use object_store::{ClientOptions, ObjectStore, ObjectStoreExt, PutPayload, RetryConfig};
use tdx_engine::runtime::connector::{is_loopback_host, loopback_only, LOOPBACK_ONLY_ENV};

/// Why a store on object storage cannot be used; the store's own error
/// carries it (`StoreError::Url`, `Access`, `Object`).
#[derive(Debug)]
pub enum ObjectError {
    /// The URL is not `s3://BUCKET/PREFIX`.
    Url { url: String, why: String },
    /// A variable, the credentials or the bucket.
    Access { url: String, why: String },
    /// A request failed after its retries.
    Request { url: String, why: String },
}

/// The URL scheme of a store on object storage.
pub const SCHEME: &str = "s3://";

/// The bucket of a store on S3 and its prefix.
#[derive(Debug)]
pub struct Objects {
    client: Arc<dyn ObjectStore>,
    bucket: String,
    /// Without leading or trailing `/`; empty for the bucket's root.
    prefix: String,
}

/// A runtime for every store's requests, made once, never dropped (a
/// runtime dropped inside a caller's async task would panic).
fn runtime() -> Result<&'static tokio::runtime::Runtime, String> {
    static RT: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("tdx-store-s3")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the object storage runtime: {e}"))
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// Runs `f` on the store's runtime and waits for it on this thread, from
/// inside an async task or outside one alike.
fn block<T: Send + 'static>(f: impl Future<Output = T> + Send + 'static) -> Result<T, String> {
    let rt = runtime()?;
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    rt.spawn(async move {
        let _ = tx.send(f.await);
    });
    rx.recv().map_err(|_| "the object storage request was dropped".to_owned())
}

/// The `AWS_*` settings: the caller's (the Python package's
/// `storage_options`), else the process environment's.
struct Settings<'a>(&'a [(String, String)]);

impl Settings<'_> {
    fn get(&self, name: &str) -> Option<String> {
        let given = self.0.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        given.or_else(|| std::env::var(name).ok())
    }

    fn set(&self, name: &str) -> bool {
        self.get(name).is_some_and(|v| !v.trim().is_empty())
    }

    /// `AWS_ALLOW_HTTP` and friends: true for `true`/`1`/`yes` (any case).
    fn yes(&self, name: &str) -> bool {
        self.get(name).is_some_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "true" | "1" | "yes"))
    }
}

/// One line for an object_store error: its message without line breaks
/// (S3 answers carry XML), cut to a readable length.
fn one_line(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    let mut line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.len() > 400 {
        let cut = (0..=400).rev().find(|i| line.is_char_boundary(*i)).unwrap_or(0);
        line.truncate(cut);
        line.push_str("...");
    }
    line
}

impl Objects {
    /// The store at `url` (`s3://BUCKET/PREFIX`), checked: the URL's shape
    /// and the endpoint and credentials of `options` (`AWS_*` names, over
    /// the environment's). Makes no request.
    pub fn open(url: &str, options: &[(String, String)]) -> Result<Self, ObjectError> {
        let env_of = Settings(options);
        let bad = |why: String| ObjectError::Url { url: url.to_owned(), why };
        let env = |why: String| ObjectError::Access { url: url.to_owned(), why };
        let rest = url.strip_prefix(SCHEME).ok_or_else(|| bad(format!("not an {SCHEME}BUCKET/PREFIX URL")))?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(bad(format!("no bucket ({SCHEME}BUCKET/PREFIX)")));
        }
        let plain = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-';
        if !(3..=63).contains(&bucket.len()) || !bucket.bytes().all(plain) {
            return Err(bad(format!("bucket {bucket:?} is not a bucket name (3 to 63 of a-z, 0-9, '.' and '-')")));
        }
        let prefix = prefix.trim_matches('/');
        if prefix.split('/').any(|part| part == "." || part == "..")
            || prefix.contains("//")
            || prefix.bytes().any(|b| b.is_ascii_control() || b == b'\\')
        {
            return Err(bad(format!("prefix {prefix:?} is not a plain KEY/PREFIX")));
        }
        if let Some((name, _)) = options.iter().find(|(k, _)| !k.starts_with("AWS_")) {
            return Err(env(format!("option {name:?} is not an AWS_* setting")));
        }
        let endpoint = env_of.get("AWS_ENDPOINT_URL").or_else(|| env_of.get("AWS_ENDPOINT"));
        if let Some(endpoint) = &endpoint {
            if endpoint.starts_with("http://") && !env_of.yes("AWS_ALLOW_HTTP") {
                return Err(env(format!(
                    "AWS_ENDPOINT_URL {endpoint:?} is http://: set AWS_ALLOW_HTTP=true to allow it"
                )));
            }
        }
        // The rule the engine's sockets keep: with it set, no request leaves loopback.
        if loopback_only() {
            let host = endpoint.as_deref().and_then(|e| e.split_once("://")).map(|(_, rest)| {
                let authority = rest.split('/').next().unwrap_or_default();
                match authority.strip_prefix('[').and_then(|a| a.split_once(']')) {
                    Some((v6, _)) => v6,
                    None => authority.split(':').next().unwrap_or_default(),
                }
            });
            if !host.is_some_and(is_loopback_host) {
                return Err(env(match endpoint {
                    Some(e) => format!(
                        "AWS_ENDPOINT_URL {e:?}: refused, {LOOPBACK_ONLY_ENV} is set and this is not a loopback address"
                    ),
                    None => format!("AWS_ENDPOINT_URL is not set (AWS itself): refused, {LOOPBACK_ONLY_ENV} is set"),
                }));
            }
        }
        // Credentials from the variables only: the other sources object_store
        // tries (instance metadata) are network calls a user did not ask for.
        let skip = env_of.yes("AWS_SKIP_SIGNATURE");
        let other_source = [
            "AWS_WEB_IDENTITY_TOKEN_FILE",
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
            "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        ]
        .iter()
        .any(|v| env_of.set(v));
        if !skip && !other_source {
            if !env_of.set("AWS_ACCESS_KEY_ID") {
                return Err(env(
                    "AWS_ACCESS_KEY_ID is not set (the store's credentials: set it and AWS_SECRET_ACCESS_KEY)".into(),
                ));
            }
            if !env_of.set("AWS_SECRET_ACCESS_KEY") {
                return Err(env("AWS_SECRET_ACCESS_KEY is not set (AWS_ACCESS_KEY_ID is)".into()));
            }
        }
        // object_store's reqwest has no TLS provider of its own: ring's (the
        // engine's) serves https endpoints. Fails only if one is installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let retry = RetryConfig { max_retries: 3, retry_timeout: Duration::from_secs(60), ..RetryConfig::default() };
        let mut builder = AmazonS3Builder::from_env();
        for (name, value) in options {
            let key = name.to_ascii_lowercase().parse().map_err(|_| env(format!("{name} is not an S3 setting")))?;
            builder = builder.with_config(key, value);
        }
        let client = builder
            .with_bucket_name(bucket)
            .with_retry(retry)
            .with_client_options(ClientOptions::new().with_allow_http(env_of.yes("AWS_ALLOW_HTTP")))
            .build()
            .map_err(|e| env(one_line(&e)))?;
        Ok(Self { client: Arc::new(client), bucket: bucket.to_owned(), prefix: prefix.to_owned() })
    }

    /// `s3://BUCKET/PREFIX/RELATIVE`, for messages.
    pub fn url(&self, relative: &str) -> String {
        match (self.prefix.is_empty(), relative.is_empty()) {
            (true, _) => format!("{SCHEME}{}/{relative}", self.bucket),
            (false, true) => format!("{SCHEME}{}/{}", self.bucket, self.prefix),
            (false, false) => format!("{SCHEME}{}/{}/{relative}", self.bucket, self.prefix),
        }
    }

    fn key(&self, relative: &str) -> Key {
        let relative = relative.trim_matches('/');
        let joined = if self.prefix.is_empty() { relative.to_owned() } else { format!("{}/{relative}", self.prefix) };
        Key::from(joined.trim_matches('/'))
    }

    fn fail(&self, relative: &str, e: impl std::error::Error) -> ObjectError {
        ObjectError::Request { url: self.url(relative), why: one_line(&e) }
    }

    fn broke(&self, relative: &str, why: String) -> ObjectError {
        ObjectError::Request { url: self.url(relative), why }
    }

    /// Checks that the bucket is there and these credentials may list it:
    /// one clear line before a run writes anything.
    pub fn probe(&self) -> Result<(), ObjectError> {
        let (client, key) = (self.client.clone(), self.key(""));
        let listed =
            block(async move { client.list_with_delimiter(Some(&key)).await }).map_err(|w| self.broke("", w))?;
        let e = match listed {
            Ok(_) => return Ok(()),
            Err(e) => e,
        };
        // A listing's errors come back as `Generic` with S3's answer inside.
        let (line, full) = (one_line(&e), format!("{e:?}"));
        let missing = matches!(e, object_store::Error::NotFound { .. })
            || full.contains("NoSuchBucket")
            || full.contains("404 Not Found");
        let refused =
            matches!(e, object_store::Error::PermissionDenied { .. } | object_store::Error::Unauthenticated { .. })
                || ["AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "403 Forbidden"]
                    .iter()
                    .any(|w| full.contains(w));
        let access = |why: String| ObjectError::Access { url: self.url(""), why };
        if missing {
            Err(access(format!("bucket {:?} does not exist at this endpoint (create it first)", self.bucket)))
        } else if refused {
            Err(access(format!("AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY: refused ({line})")))
        } else {
            Err(self.broke("", line))
        }
    }

    /// The object's bytes, or `None` when there is none.
    pub fn get(&self, relative: &str) -> Result<Option<Bytes>, ObjectError> {
        let (client, key) = (self.client.clone(), self.key(relative));
        let got = block(async move {
            match client.get(&key).await {
                Ok(r) => r.bytes().await.map(Some),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(e),
            }
        })
        .map_err(|w| self.broke(relative, w))?;
        got.map_err(|e| self.fail(relative, e))
    }

    /// The object's size, or `None` when there is none.
    pub fn size(&self, relative: &str) -> Result<Option<u64>, ObjectError> {
        let (client, key) = (self.client.clone(), self.key(relative));
        let head = block(async move { client.head(&key).await }).map_err(|w| self.broke(relative, w))?;
        match head {
            Ok(meta) => Ok(Some(meta.size)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.fail(relative, e)),
        }
    }

    /// Puts the whole object: readers see the old one until it completes.
    pub fn put(&self, relative: &str, bytes: &[u8]) -> Result<(), ObjectError> {
        let (client, key) = (self.client.clone(), self.key(relative));
        let payload = PutPayload::from(Bytes::copy_from_slice(bytes));
        let put = block(async move { client.put(&key, payload).await }).map_err(|w| self.broke(relative, w))?;
        put.map(|_| ()).map_err(|e| self.fail(relative, e))
    }

    /// Deletes the object (none there is not a failure).
    pub fn delete(&self, relative: &str) -> Result<(), ObjectError> {
        let (client, key) = (self.client.clone(), self.key(relative));
        let deleted = block(async move { client.delete(&key).await }).map_err(|w| self.broke(relative, w))?;
        match deleted {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.fail(relative, e)),
        }
    }

    /// The names of the objects directly under `dir` (not deeper).
    pub fn list(&self, dir: &str) -> Result<Vec<String>, ObjectError> {
        let (client, key) = (self.client.clone(), self.key(dir));
        let listed =
            block(async move { client.list_with_delimiter(Some(&key)).await }).map_err(|w| self.broke(dir, w))?;
        let listed = listed.map_err(|e| self.fail(dir, e))?;
        Ok(listed.objects.iter().filter_map(|o| o.location.filename().map(str::to_owned)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn why(url: &str) -> String {
        match Objects::open(url, &[]) {
            Err(ObjectError::Url { url: got, why }) => {
                assert_eq!(got, url);
                why
            }
            other => panic!("{url}: {other:?}"),
        }
    }

    /// The URL's shape is checked before any variable or request.
    #[test]
    fn malformed_urls_are_refused_naming_the_part() {
        assert!(why("s3://").contains("no bucket"));
        assert!(why("s3:///prefix").contains("no bucket"));
        assert!(why("s3://ab/x").contains("not a bucket name"));
        assert!(why("s3://Upper_Case/x").contains("not a bucket name"));
        assert!(why("s3://bucket/a/../b").contains("not a plain"));
        assert!(why("s3://bucket/a//b").contains("not a plain"));
    }

    #[test]
    fn an_option_that_is_not_an_aws_setting_is_named() {
        let options = [("endpoint".to_owned(), "http://127.0.0.1:1".to_owned())];
        match Objects::open("s3://bucket/x", &options) {
            Err(ObjectError::Access { why, .. }) => assert!(why.contains("\"endpoint\""), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn keys_and_urls_join_the_prefix() {
        let options = [
            ("AWS_ACCESS_KEY_ID".to_owned(), "k".to_owned()),
            ("AWS_SECRET_ACCESS_KEY".to_owned(), "s".to_owned()),
            ("AWS_ENDPOINT_URL".to_owned(), "http://127.0.0.1:1".to_owned()),
            ("AWS_ALLOW_HTTP".to_owned(), "true".to_owned()),
        ];
        let nested = Objects::open("s3://bucket/a/b/", &options).unwrap();
        assert_eq!(nested.key("bars/x.parquet").as_ref(), "a/b/bars/x.parquet");
        assert_eq!(nested.url("manifest.json"), "s3://bucket/a/b/manifest.json");
        let root = Objects::open("s3://bucket", &options).unwrap();
        assert_eq!(root.key("manifest.json").as_ref(), "manifest.json");
        assert_eq!(root.url("manifest.json"), "s3://bucket/manifest.json");
    }
}
