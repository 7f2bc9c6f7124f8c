//! `tdx sync --shard I/N` and `--merge-manifests`: one store written by N
//! processes (a CI matrix, a Kubernetes indexed Job, a Slurm array).
//!
//! A security belongs to shard `fnv1a64(code) % N` (the code as text,
//! `sz000001`), so the split depends on nothing but the code: re-runs
//! take the same share, and a new listing moves no other security. A
//! sharded run writes only its securities' files and, instead of
//! `manifest.json`, a fragment `shards/I-of-N.json` holding its
//! securities' entries. The merge checks that every fragment of one N is
//! there and holds only its own securities, writes `manifest.json` once
//! (atomically, after every file it names), then removes the fragments.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tdx_engine::proto::ex::ExCode;
use tdx_engine::proto::SecurityCode;

use crate::manifest::{Manifest, ManifestError};
use crate::store::{Store, StoreError};

/// The most shards a store is split into: far past what one server list
/// allows at once, and small enough to list the fragments in one directory.
pub const SHARDS_MAX: u32 = 4096;
/// The directory of the fragments, in the store's root.
pub const FRAGMENT_DIR: &str = "shards";

/// Shard `index` of `count` (`index` from 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// `--shard I/N`: `0 <= I < N <= SHARDS_MAX`.
pub fn parse_shard(s: &str) -> Result<Shard, String> {
    let (index, count) = s.split_once('/').ok_or_else(|| format!("{s:?} is not I/N (e.g. 0/3)"))?;
    let index: u32 = index.trim().parse().map_err(|_| format!("{s:?}: {index:?} is not a shard index"))?;
    let count: u32 = count.trim().parse().map_err(|_| format!("{s:?}: {count:?} is not a shard count"))?;
    if count == 0 || count > SHARDS_MAX {
        return Err(format!("{s:?}: the shard count runs from 1 to {SHARDS_MAX}"));
    }
    if index >= count {
        return Err(format!("{s:?}: the index runs from 0 to N-1"));
    }
    Ok(Shard { index, count })
}

impl Shard {
    /// The shard of `count` that `code` belongs to: FNV-1a (64 bits) of the
    /// code's text, modulo `count`. Other tools (the Dask driver) compute
    /// the same split from this definition.
    pub fn of(code: SecurityCode, count: u32) -> u32 {
        Self::of_text(&code.to_string(), count)
    }

    /// [`of`](Self::of) for any code's text: an extended-market
    /// instrument's is `47#IFL0`.
    pub fn of_text(code: &str, count: u32) -> u32 {
        assert!(count >= 1, "a split has at least one shard");
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in code.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        (h % u64::from(count)) as u32
    }

    pub fn owns(&self, code: SecurityCode) -> bool {
        debug_assert!(self.index < self.count);
        Self::of(code, self.count) == self.index
    }

    /// True when this shard keeps the extended-market instrument `code`.
    pub fn owns_ex(&self, code: &ExCode) -> bool {
        Self::of_text(&code.to_string(), self.count) == self.index
    }

    /// `shards/I-of-N.json`, relative to the store's root.
    pub fn fragment_file(&self) -> PathBuf {
        Path::new(FRAGMENT_DIR).join(format!("{}-of-{}.json", self.index, self.count))
    }

    /// True for a file name (`sz000001.parquet`, or a temporary copy's
    /// original name) that this shard writes: its securities' files and
    /// its own fragment.
    pub fn writes(&self, name: &str) -> bool {
        let fragment = format!("{}-of-{}.json", self.index, self.count);
        if name == fragment {
            return true;
        }
        let stem = name.strip_suffix(".parquet").unwrap_or(name);
        if let Some(code) = crate::manifest::ex_code_of_stem(stem) {
            return self.owns_ex(&code);
        }
        stem.parse::<SecurityCode>().is_ok_and(|code| self.owns(code))
    }

    /// The entries of `manifest` that belong to this shard's securities.
    pub fn restrict(&self, manifest: &Manifest) -> Manifest {
        let by_code = |code: Option<SecurityCode>| code.is_some_and(|c| self.owns(c));
        let bars_entry = |key: &str| match entry_ex_code(key) {
            Some(code) => self.owns_ex(&code),
            None => by_code(entry_code(key)),
        };
        Manifest {
            schema_version: manifest.schema_version,
            bars: keep(&manifest.bars, bars_entry),
            corporate: keep(&manifest.corporate, |k| by_code(k.parse().ok())),
            files: keep(&manifest.files, |k| by_code(path_code(k))),
            f10: keep(&manifest.f10, |k| by_code(entry_code(k))),
            imported: keep(&manifest.imported, |k| by_code(entry_code(k))),
        }
    }
}

fn keep<V: Clone>(map: &BTreeMap<String, V>, mine: impl Fn(&str) -> bool) -> BTreeMap<String, V> {
    map.iter().filter(|(k, _)| mine(k)).map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// The code of a `PERIOD/CODE` or `ENTRY/CODE` key.
fn entry_code(key: &str) -> Option<SecurityCode> {
    key.rsplit_once('/')?.1.parse().ok()
}

/// The instrument of an extended-market `PERIOD/MARKET#CODE` key (its code may hold `/`).
fn entry_ex_code(key: &str) -> Option<ExCode> {
    key.split_once('/')?.1.parse().ok()
}

/// The code a per-security file's name carries (`.../sz000001.parquet`);
/// `None` for a file of the whole market (`finance/finance.parquet`).
fn path_code(path: &str) -> Option<SecurityCode> {
    path.rsplit('/').next()?.strip_suffix(".parquet")?.parse().ok()
}

/// A fragment as written: the shard and its securities' entries.
#[derive(Debug, Serialize, Deserialize)]
struct Fragment {
    shard: Shard,
    manifest: serde_json::Value,
}

/// Why fragments could not be merged. Nothing was written: the store's
/// manifest is the one it had before.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// The store cannot be read or written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No fragment to merge: no sharded run wrote one (or a merge already did).
    #[error("{dir}: no manifest fragments to merge (run `tdx sync --shard I/N` first)")]
    NoFragments { dir: PathBuf },
    /// A shard's run did not finish: run that shard again, then merge.
    #[error("fragments of {count} shards, but shard(s) {missing:?} of {count} wrote none: run them, then merge")]
    Missing { count: u32, missing: Vec<u32> },
    /// Fragments of different splits (an old run with another N left some):
    /// remove the stale ones.
    #[error("fragments of splits into {counts:?} shards: keep one split's, remove the others")]
    MixedCounts { counts: Vec<u32> },
    /// A fragment that is damaged, foreign, or names another shard's security.
    #[error("{path}: {why}")]
    Fragment { path: PathBuf, why: String },
}

/// Reads this shard's own fragment, if an earlier (killed) run of it left one.
pub fn read_fragment(store: &Store, shard: Shard) -> Result<Option<Manifest>, MergeError> {
    let path = store.path(&shard.fragment_file());
    match store.read(&shard.fragment_file())? {
        Some(bytes) => parse_fragment(&path, &bytes).map(|(_, m)| Some(m)),
        None => Ok(None),
    }
}

/// Writes this shard's fragment atomically: the entries of `manifest`
/// that belong to it.
pub fn write_fragment(store: &Store, shard: Shard, manifest: &Manifest) -> Result<(), StoreError> {
    let fragment = Fragment { shard, manifest: serde_json::to_value(shard.restrict(manifest)).unwrap_or_default() };
    let mut bytes = serde_json::to_vec_pretty(&fragment).unwrap_or_default();
    bytes.push(b'\n');
    store.write_atomic(&shard.fragment_file(), &bytes).map(|_| ())
}

fn parse_fragment(path: &Path, bytes: &[u8]) -> Result<(Shard, Manifest), MergeError> {
    let bad = |why: String| MergeError::Fragment { path: path.to_owned(), why };
    if bytes.len() > crate::manifest::MANIFEST_BYTES_MAX {
        return Err(bad(ManifestError::TooLarge { len: bytes.len() }.to_string()));
    }
    let fragment: Fragment = serde_json::from_slice(bytes).map_err(|e| bad(format!("not a fragment: {e}")))?;
    let shard = fragment.shard;
    if shard.count == 0 || shard.count > SHARDS_MAX || shard.index >= shard.count {
        return Err(bad(format!("shard {shard} is not a shard")));
    }
    let inner = serde_json::to_vec(&fragment.manifest).map_err(|e| bad(e.to_string()))?;
    let manifest = Manifest::parse(&inner).map_err(|e| bad(e.to_string()))?;
    if shard.restrict(&manifest) != manifest {
        return Err(bad(format!("holds entries of securities outside shard {shard}")));
    }
    Ok((shard, manifest))
}

/// What a merge did.
#[derive(Debug)]
pub struct Merged {
    pub shards: u32,
    pub bars_files: usize,
    pub other_files: usize,
}

/// `tdx sync --merge-manifests`: the store's manifest with every
/// fragment's entries laid over it, written once, then the fragments
/// removed. A merge killed after the manifest and before the removal is
/// run again to the same manifest (its entries are already there).
pub fn merge(store: &Store) -> Result<Merged, MergeError> {
    let dir = store.path(Path::new(FRAGMENT_DIR));
    let mut fragments: BTreeMap<Shard, (PathBuf, Manifest)> = BTreeMap::new();
    for name in store.list(Path::new(FRAGMENT_DIR))? {
        // Temporary copies of a fragment being written are not fragments.
        if !name.ends_with(".json") || name.starts_with('.') {
            continue;
        }
        let relative = Path::new(FRAGMENT_DIR).join(&name);
        let path = store.path(&relative);
        // Listed a moment ago: gone now means another merge took it.
        let Some(bytes) = store.read(&relative)? else { continue };
        let (shard, manifest) = parse_fragment(&path, &bytes)?;
        if Some(std::ffi::OsStr::new(&name)) != shard.fragment_file().file_name() {
            return Err(MergeError::Fragment { path, why: format!("holds shard {shard} under another name") });
        }
        fragments.insert(shard, (relative, manifest));
    }
    let counts: Vec<u32> =
        fragments.keys().map(|s| s.count).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
    let count = match counts.as_slice() {
        [] => return Err(MergeError::NoFragments { dir }),
        [one] => *one,
        _ => return Err(MergeError::MixedCounts { counts }),
    };
    let missing: Vec<u32> = (0..count).filter(|i| !fragments.contains_key(&Shard { index: *i, count })).collect();
    if !missing.is_empty() {
        return Err(MergeError::Missing { count, missing });
    }
    let mut merged = match store.read_manifest() {
        Ok(m) => m,
        // A damaged base is rebuilt from the fragments, as a run rebuilds it from the files.
        Err(StoreError::Manifest { source, .. }) if source.is_repairable() => Manifest::default(),
        Err(e) => return Err(e.into()),
    };
    merged.schema_version = crate::manifest::SCHEMA_VERSION;
    for (_, fragment) in fragments.values() {
        merged.bars.extend(fragment.bars.clone());
        merged.corporate.extend(fragment.corporate.clone());
        merged.files.extend(fragment.files.clone());
        merged.f10.extend(fragment.f10.clone());
        merged.imported.extend(fragment.imported.clone());
    }
    store.write_manifest(&merged)?;
    for (relative, _) in fragments.values() {
        store.remove(relative)?;
    }
    Ok(Merged { shards: count, bars_files: merged.bars.len(), other_files: merged.files.len() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(s: &str) -> SecurityCode {
        s.parse().unwrap()
    }

    /// The split is part of the store's format (other tools compute it):
    /// these values are FNV-1a of the code text, and must never change.
    #[test]
    fn the_split_is_fnv1a_of_the_code_text() {
        let fnv =
            |s: &str| s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
        for (text, count) in [("sz000001", 3), ("sh600000", 3), ("bj430047", 7), ("sz399001", 1)] {
            assert_eq!(u64::from(Shard::of(code(text), count)), fnv(text) % u64::from(count), "{text}");
        }
        assert_eq!(fnv("sz000001"), 0x3c7e_598f_2712_577b);
        let pinned = [("sz000001", 1), ("sz399001", 0), ("sh000001", 2), ("sh600000", 0), ("bj899050", 2)];
        for (text, shard) in pinned {
            assert_eq!(Shard::of(code(text), 3), shard, "{text}");
        }
    }

    #[test]
    fn every_code_has_exactly_one_shard() {
        let codes: Vec<SecurityCode> = (0..3000).map(|i| code(&format!("sz{:06}", i))).collect();
        for count in [1, 2, 3, 10] {
            let shards: Vec<Shard> = (0..count).map(|index| Shard { index, count }).collect();
            let mut sizes = vec![0usize; count as usize];
            for c in &codes {
                let owners: Vec<&Shard> = shards.iter().filter(|s| s.owns(*c)).collect();
                assert_eq!(owners.len(), 1, "{c} in {count} shards");
                sizes[owners[0].index as usize] += 1;
            }
            // FNV-1a spreads six-digit codes: no shard is more than 20% off even.
            let even = codes.len() / count as usize;
            assert!(sizes.iter().all(|n| n.abs_diff(even) * 5 <= even), "{count}: {sizes:?}");
        }
    }

    #[test]
    fn shard_arguments_are_checked() {
        assert_eq!(parse_shard("2/3"), Ok(Shard { index: 2, count: 3 }));
        assert_eq!(parse_shard("0/1"), Ok(Shard { index: 0, count: 1 }));
        for bad in ["3/3", "0/0", "-1/3", "1", "a/3", "1/b", "0/4097", ""] {
            assert!(parse_shard(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn restrict_keeps_only_the_shards_securities() {
        let mut m = Manifest::default();
        for c in ["sz000001", "sh600000", "bj430047", "sz399001"] {
            m.corporate.insert(c.into(), crate::manifest::Corporate { hash: "0".into(), records: 0, factor_rows: 0 });
            m.files.insert(format!("factors/market={}/{c}.parquet", &c[..2]), "0".into());
        }
        m.files.insert("finance/finance.parquet".into(), "0".into());
        let shards: Vec<Shard> = (0..3).map(|index| Shard { index, count: 3 }).collect();
        let parts: Vec<Manifest> = shards.iter().map(|s| s.restrict(&m)).collect();
        assert_eq!(parts.iter().map(|p| p.corporate.len()).sum::<usize>(), 4);
        assert_eq!(parts.iter().map(|p| p.files.len()).sum::<usize>(), 4, "the market-wide file is no shard's");
        for (s, p) in shards.iter().zip(&parts) {
            assert!(p.corporate.keys().all(|c| s.owns(code(c))));
            assert!(s.writes(&format!("{}-of-3.json", s.index)));
            assert!(!s.writes(&format!("{}-of-3.json", (s.index + 1) % 3)));
        }
    }
}
