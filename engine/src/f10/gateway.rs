//! The HTTP side: one POST per request to `BASE?Entry=NAME` with a JSON
//! body, under the engine's conventions: the call's one deadline covers the
//! rate cap's wait, the wait for a call slot, connecting, retrying and the
//! reply; at most `max_in_flight` calls at once; per host at most
//! `rate_cap` requests a second; one retry, only for a failed connect or a
//! 5xx status (every entry is a read-only query), and only while the
//! deadline leaves time. Addresses can be overridden hosts-file style, and
//! with `TDX_ENGINE_LOOPBACK_ONLY` set only loopback addresses are reached.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use reqwest::Url;
use tokio::sync::Semaphore;
use tokio::time::Instant;

use super::entries::{Gateway, WireRequest};
use super::error::F10Error;
use super::reply::{parse_reply, F10Reply};
use crate::supervisor::ConfigError;

/// The F10 gateway eltdx verified in 2026.
pub const DEFAULT_F10_BASE_URL: &str = "http://static.tdx.com.cn:7615/TQLEX";
/// The gateway that serves the limit-up ladder (`CWServ.cfg_fx_lbtt`).
pub const DEFAULT_F10_LADDER_BASE_URL: &str = "http://hot.icfqs.com:7615/TQLEX";
/// Requests per second to one gateway host by default: F10 pages are a
/// person's reading, not a bulk feed; a sync of many codes stays polite.
pub const F10_RATE_CAP_PER_SEC: u32 = 5;
/// Calls in flight at once by default.
pub const F10_MAX_IN_FLIGHT: usize = 4;
/// Largest reply body read: far above any F10 page (tens of KiB), far
/// below what would hurt.
pub const F10_REPLY_BYTES_MAX: usize = 16 * 1024 * 1024;

/// The F10 settings of a [`ClientBuilder`](crate::ClientBuilder).
#[derive(Debug, Clone)]
pub struct F10Settings {
    pub(crate) base_url: Option<String>,
    pub(crate) ladder_base_url: Option<String>,
    pub(crate) overrides: Vec<(String, String)>,
    pub(crate) rate_cap_per_sec: Option<u32>,
    pub(crate) max_in_flight: usize,
}

impl Default for F10Settings {
    fn default() -> Self {
        Self {
            base_url: None,
            ladder_base_url: None,
            overrides: Vec::new(),
            rate_cap_per_sec: Some(F10_RATE_CAP_PER_SEC),
            max_in_flight: F10_MAX_IN_FLIGHT,
        }
    }
}

fn config(field: &'static str, reason: impl Into<String>) -> ConfigError {
    ConfigError { field, reason: reason.into() }
}

fn parse_base(field: &'static str, url: &str) -> Result<Url, ConfigError> {
    let parsed = Url::parse(url).map_err(|e| config(field, format!("{url:?}: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(config(field, format!("{url:?}: not an http(s) URL with a host")));
    }
    Ok(parsed)
}

/// Checks a gateway base URL as the builder will (an http(s) URL with a
/// host), so a command line can refuse it while parsing its arguments.
pub fn check_base_url(url: &str) -> Result<(), String> {
    parse_base("f10_base_url", url).map(drop).map_err(|e| e.reason)
}

/// `host:port` of a URL, its scheme's port when it names none.
fn authority(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port_or_known_default() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    }
}

/// Paces requests per host: each takes the next free slot, `1/rate` apart.
#[derive(Debug, Default)]
struct RateCap {
    next: Mutex<HashMap<String, Instant>>,
}

impl RateCap {
    /// When a request to `host` may go, reserving that slot.
    fn reserve(&self, host: &str, per_sec: u32) -> Instant {
        let gap = Duration::from_secs(1) / per_sec.max(1);
        let mut next = self.next.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let slot = next.get(host).copied().filter(|t| *t > now).unwrap_or(now);
        next.insert(host.to_owned(), slot + gap);
        slot
    }
}

/// What every F10 call of one client shares.
#[derive(Debug)]
pub(crate) struct Transport {
    base: Url,
    ladder: Url,
    overrides: HashMap<String, String>,
    rate_cap_per_sec: Option<u32>,
    in_flight: Arc<Semaphore>,
    rate: RateCap,
    /// Built on the first call (loading the TLS roots costs milliseconds).
    http: OnceLock<Result<reqwest::Client, String>>,
}

impl Transport {
    /// Checks the settings; nothing is connected yet.
    pub(crate) fn new(s: &F10Settings) -> Result<Self, ConfigError> {
        let base = parse_base("f10_base_url", s.base_url.as_deref().unwrap_or(DEFAULT_F10_BASE_URL))?;
        // Without its own URL the ladder goes where a configured base goes.
        let ladder = match (&s.ladder_base_url, &s.base_url) {
            (Some(url), _) => parse_base("f10_ladder_base_url", url)?,
            (None, Some(_)) => base.clone(),
            (None, None) => parse_base("f10_ladder_base_url", DEFAULT_F10_LADDER_BASE_URL)?,
        };
        let mut overrides = HashMap::new();
        for (from, to) in &s.overrides {
            let endpoint: crate::Endpoint =
                to.parse().map_err(|e: crate::EndpointError| config("f10_override", format!("{to:?}: {e}")))?;
            if endpoint.ip().is_none() {
                return Err(config("f10_override", format!("{to:?}: the target must be IP:PORT")));
            }
            if !from.contains(':') || from.contains('/') {
                return Err(config("f10_override", format!("{from:?}: name the host as HOST:PORT")));
            }
            overrides.insert(from.to_ascii_lowercase(), endpoint.to_string());
        }
        if s.max_in_flight == 0 {
            return Err(config("f10_max_in_flight", "must be at least 1"));
        }
        if s.rate_cap_per_sec == Some(0) {
            return Err(config("f10_rate_cap", "must be positive (None for no cap)"));
        }
        Ok(Self {
            base,
            ladder,
            overrides,
            rate_cap_per_sec: s.rate_cap_per_sec,
            in_flight: Arc::new(Semaphore::new(s.max_in_flight)),
            rate: RateCap::default(),
            http: OnceLock::new(),
        })
    }

    fn http(&self) -> Result<&reqwest::Client, String> {
        self.http.get_or_init(build_http).as_ref().map_err(Clone::clone)
    }

    /// The URL to post `request` to, the connection's target (after an
    /// override) and the `Host` header to keep when overridden.
    fn target(&self, request: &WireRequest) -> Result<(Url, Option<String>), F10Error> {
        let mut url = match request.gateway {
            Gateway::Main => self.base.clone(),
            Gateway::Ladder => self.ladder.clone(),
        };
        url.query_pairs_mut().append_pair("Entry", &request.entry);
        let original = authority(&url);
        let host_header = match self.overrides.get(&original.to_ascii_lowercase()) {
            Some(to) => {
                let endpoint: crate::Endpoint = to.parse().expect("checked at build");
                let ip = endpoint.ip().expect("checked at build");
                let _ = url.set_ip_host(ip);
                let _ = url.set_port(Some(endpoint.port));
                Some(original)
            }
            None => None,
        };
        if crate::runtime::connector::loopback_only()
            && !crate::runtime::connector::is_loopback_host(url.host_str().unwrap_or_default())
        {
            return Err(F10Error::Connect {
                url: url.to_string(),
                reason: format!(
                    "refused, {} is set and this is not a loopback address",
                    crate::runtime::connector::LOOPBACK_ONLY_ENV
                ),
            });
        }
        Ok((url, host_header))
    }

    /// Sends `request` and parses its reply, all before `deadline`.
    pub(crate) async fn send(&self, request: &WireRequest, deadline: Instant) -> Result<F10Reply, F10Error> {
        match tokio::time::timeout_at(deadline, self.send_within(request, deadline)).await {
            Ok(result) => result,
            Err(_) => Err(F10Error::TimedOut),
        }
    }

    async fn send_within(&self, request: &WireRequest, deadline: Instant) -> Result<F10Reply, F10Error> {
        let (url, host_header) = self.target(request)?;
        let http = self.http().map_err(|reason| F10Error::Connect { url: url.to_string(), reason })?;
        let _permit = self.in_flight.acquire().await.map_err(|_| F10Error::Closed)?;
        let body = serde_json::to_vec(&request.body).expect("a JSON value serialises");
        let mut retried = false;
        loop {
            if let Some(per_sec) = self.rate_cap_per_sec {
                let slot = self.rate.reserve(&authority(&url), per_sec);
                if slot >= deadline {
                    return Err(F10Error::TimedOut);
                }
                tokio::time::sleep_until(slot).await;
            }
            let mut post = http
                .post(url.clone())
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .header(reqwest::header::ACCEPT, "application/json")
                .body(body.clone());
            if let Some(host) = &host_header {
                post = post.header(reqwest::header::HOST, host.as_str());
            }
            let outcome = match post.send().await {
                Ok(response) if response.status().is_server_error() => Err(Attempt::Retryable(F10Error::Status {
                    entry: request.entry.to_string(),
                    status: response.status().as_u16(),
                })),
                Ok(response) if !response.status().is_success() => Err(Attempt::Final(F10Error::Status {
                    entry: request.entry.to_string(),
                    status: response.status().as_u16(),
                })),
                Ok(response) => Ok(response),
                Err(e) if e.is_connect() => {
                    Err(Attempt::Retryable(F10Error::Connect { url: url.to_string(), reason: error_chain(&e) }))
                }
                Err(e) => Err(Attempt::Final(transport(&request.entry, &e))),
            };
            match outcome {
                Ok(response) => {
                    let bytes = read_capped(&request.entry, response).await?;
                    return parse_reply(&request.entry, &bytes);
                }
                // Once, and only with time left for it.
                Err(Attempt::Retryable(e)) if !retried && Instant::now() < deadline => {
                    tracing::debug!(entry = %request.entry, error = %e, "F10 call retried once");
                    retried = true;
                }
                Err(Attempt::Retryable(e) | Attempt::Final(e)) => return Err(e),
            }
        }
    }
}

enum Attempt {
    Retryable(F10Error),
    Final(F10Error),
}

/// The reply body, refused past [`F10_REPLY_BYTES_MAX`].
async fn read_capped(entry: &str, mut response: reqwest::Response) -> Result<Vec<u8>, F10Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| transport(entry, &e))? {
        if body.len() + chunk.len() > F10_REPLY_BYTES_MAX {
            return Err(F10Error::protocol(entry, format!("reply longer than {F10_REPLY_BYTES_MAX} bytes")));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn transport(entry: &str, e: &reqwest::Error) -> F10Error {
    F10Error::Transport { entry: entry.to_owned(), reason: error_chain(e) }
}

/// The error and its causes on one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The HTTP client: HTTP/1, no proxies (a proxy would be a hop the
/// loopback rule cannot see), rustls on ring with the platform's verifier.
fn build_http() -> Result<reqwest::Client, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = rustls_platform_verifier::Verifier::new(provider.clone()).map_err(|e| e.to_string())?;
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    reqwest::Client::builder()
        .no_proxy()
        .user_agent(concat!("tdx-engine/", env!("CARGO_PKG_VERSION")))
        .pool_idle_timeout(Duration::from_secs(30))
        .tls_backend_preconfigured(tls)
        .build()
        .map_err(|e| error_chain(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_checked_and_overrides_retarget() {
        let t = Transport::new(&F10Settings {
            overrides: vec![("static.tdx.com.cn:7615".into(), "127.0.0.1:9".into())],
            ..F10Settings::default()
        })
        .unwrap();
        let request = super::super::F10Query::StockInfo { code: "sz000001".parse().unwrap() }.wire().unwrap();
        let (url, host) = t.target(&request).unwrap();
        assert_eq!(url.as_str(), "http://127.0.0.1:9/TQLEX?Entry=CWServ.tdxf10_gg_comreq");
        assert_eq!(host.as_deref(), Some("static.tdx.com.cn:7615"));
        let bad = |s: F10Settings| Transport::new(&s).unwrap_err().field;
        assert_eq!(bad(F10Settings { base_url: Some("ftp://x".into()), ..F10Settings::default() }), "f10_base_url");
        assert_eq!(bad(F10Settings { max_in_flight: 0, ..F10Settings::default() }), "f10_max_in_flight");
        let overrides = vec![("x:1".into(), "example.com:1".into())];
        assert_eq!(bad(F10Settings { overrides, ..F10Settings::default() }), "f10_override");
    }

    #[test]
    fn the_rate_cap_spaces_requests_per_host() {
        let cap = RateCap::default();
        let a = cap.reserve("h:1", 10);
        let b = cap.reserve("h:1", 10);
        let other = cap.reserve("g:1", 10);
        assert_eq!(b - a, Duration::from_millis(100));
        assert!(other <= b);
    }
}
