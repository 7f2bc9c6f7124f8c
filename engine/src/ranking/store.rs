//! The ranking file: where it lives, and crash-safe reads and writes.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::{Ranking, SCHEMA_VERSION};

/// Environment variable that overrides the data directory.
pub const DATA_DIR_ENV: &str = "TDX_ENGINE_DATA_DIR";
const FILE_NAME: &str = "ranking.json";

/// The engine's data directory: `$TDX_ENGINE_DATA_DIR` when set and not
/// empty, else `tdx-engine/` in the platform data directory; `None` when
/// neither exists. The ranking and the trading calendar are kept there.
pub fn engine_data_dir() -> Option<PathBuf> {
    engine_dir_in(std::env::var_os(DATA_DIR_ENV), dirs::data_dir())
}

fn engine_dir_in(override_dir: Option<std::ffi::OsString>, data_dir: Option<PathBuf>) -> Option<PathBuf> {
    match override_dir {
        Some(dir) if !dir.is_empty() => Some(PathBuf::from(dir)),
        _ => Some(data_dir?.join("tdx-engine")),
    }
}

/// The steps of an atomic save, in order; a save interrupted after any of
/// them leaves the old file or the new one in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaveStep {
    /// The temp file was created.
    Created,
    /// Half the bytes were written.
    HalfWritten,
    /// All bytes were written.
    Written,
    /// The temp file was synced.
    Synced,
    /// The temp file was renamed over the ranking file.
    Renamed,
}

/// Reads and writes one ranking file.
#[derive(Debug, Clone)]
pub struct RankingStore {
    path: PathBuf,
}

impl RankingStore {
    /// The store at the default location: `$TDX_ENGINE_DATA_DIR/ranking.json`
    /// or `<platform data dir>/tdx-engine/ranking.json`; `None` when neither
    /// exists.
    pub fn default_location() -> Option<Self> {
        Self::location_in(std::env::var_os(DATA_DIR_ENV), dirs::data_dir())
    }

    /// Where the file goes given the override variable's value and the
    /// platform data dir: the override when set and not empty, else
    /// `tdx-engine/` in the data dir.
    fn location_in(override_dir: Option<std::ffi::OsString>, data_dir: Option<PathBuf>) -> Option<Self> {
        Some(Self::at(engine_dir_in(override_dir, data_dir)?.join(FILE_NAME)))
    }

    /// The store at `path`.
    pub fn at(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The saved ranking, or an empty one when the file is missing, from
    /// another schema, or corrupt (with a warning): never an error.
    pub fn load(&self) -> Ranking {
        let bytes = match fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ranking::new(),
            Err(e) => {
                tracing::warn!(path = %self.path.display(), error = %e, "cannot read the ranking file; starting afresh");
                return Ranking::new();
            }
        };
        match serde_json::from_slice::<Ranking>(&bytes) {
            Ok(r) if r.schema_version == SCHEMA_VERSION => r,
            Ok(r) => {
                tracing::warn!(path = %self.path.display(), version = r.schema_version, "ranking file has another schema; rebuilding");
                Ranking::new()
            }
            Err(e) => {
                tracing::warn!(path = %self.path.display(), error = %e, "ranking file is corrupt; rebuilding");
                Ranking::new()
            }
        }
    }

    /// Saves atomically: temp file in the same directory, fsync, rename,
    /// directory fsync.
    pub fn save(&self, ranking: &Ranking) -> io::Result<()> {
        self.save_until(ranking, None)
    }

    /// [`save`](Self::save), stopping (as a crash would) right after `stop`.
    /// For crash-safety tests.
    #[doc(hidden)]
    pub fn save_until(&self, ranking: &Ranking, stop: Option<SaveStep>) -> io::Result<()> {
        let dir = self.path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        fs::create_dir_all(dir)?;
        let bytes = serde_json::to_vec_pretty(ranking).map_err(io::Error::other)?;
        // One temp file per save, not per process: two saves at once (the
        // start-up ranking and a caller's refresh) must not rename each
        // other's file away.
        static SAVES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let save = SAVES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let temp = dir.join(format!(".{FILE_NAME}.{}.{save}.tmp", std::process::id()));
        let crash = |step| stop == Some(step);
        let mut file = OpenOptions::new().write(true).create(true).truncate(true).open(&temp)?;
        if crash(SaveStep::Created) {
            return Ok(());
        }
        file.write_all(&bytes[..bytes.len() / 2])?;
        if crash(SaveStep::HalfWritten) {
            return Ok(());
        }
        file.write_all(&bytes[bytes.len() / 2..])?;
        if crash(SaveStep::Written) {
            return Ok(());
        }
        file.sync_all()?;
        drop(file);
        if crash(SaveStep::Synced) {
            return Ok(());
        }
        fs::rename(&temp, &self.path)?;
        if crash(SaveStep::Renamed) {
            return Ok(());
        }
        // Make the rename itself durable.
        File::open(dir)?.sync_all()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ranking::ProbeResult;
    use std::sync::Arc;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("tdx-ranking-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn ranking(order: &[u16]) -> Ranking {
        let mut r = Ranking::new();
        let results: Vec<ProbeResult> = order
            .iter()
            .enumerate()
            .map(|(i, port)| ProbeResult {
                endpoint: format!("127.0.0.1:{port}").parse().unwrap(),
                latency: Some(std::time::Duration::from_millis(1 + i as u64)),
                rejected: None,
            })
            .collect();
        r.apply_probe(&results, 42);
        r
    }

    /// Why: the start-up ranking and a caller's `refresh_ranking` can save at
    /// once; with one temp name per process, one rename took the other's
    /// file away and that save failed.
    #[test]
    fn saves_at_once_do_not_collide() {
        let dir = temp_dir("concurrent");
        let store = Arc::new(RankingStore::at(dir.join("ranking.json")));
        let savers: Vec<_> = (0..4u16)
            .map(|t| {
                let store = store.clone();
                std::thread::spawn(move || (0..50).try_for_each(|_| store.save(&ranking(&[t + 1, t + 11]))))
            })
            .collect();
        for saver in savers {
            saver.join().unwrap().expect("every save succeeds");
        }
        assert!(store.load().servers.len() == 2, "one whole ranking stands");
        let leftovers =
            fs::read_dir(&dir).unwrap().filter(|e| e.as_ref().unwrap().file_name() != "ranking.json").count();
        assert_eq!(leftovers, 0, "no temp file left behind");
        let _ = fs::remove_dir_all(dir);
    }

    #[test]
    fn round_trip_and_corruption() {
        let dir = temp_dir("roundtrip");
        let store = RankingStore::at(dir.join("ranking.json"));
        assert_eq!(store.load(), Ranking::new(), "missing file: empty ranking");
        let r = ranking(&[3, 1, 2]);
        store.save(&r).unwrap();
        assert_eq!(store.load(), r);
        fs::write(store.path(), b"{ \"schema_version\": 1, \"servers\": [ {\"host\": ").unwrap();
        assert_eq!(store.load(), Ranking::new(), "half-written file: ignored");
        fs::write(store.path(), b"{\"schema_version\": 99, \"servers\": []}").unwrap();
        assert_eq!(store.load(), Ranking::new(), "other schema: ignored");
        store.save(&r).unwrap();
        assert_eq!(store.load(), r, "rebuilt");
        let _ = fs::remove_dir_all(dir);
    }

    /// Why: a crash at any step of a save must leave the old ranking or the
    /// new one, never a broken file.
    #[test]
    fn interrupted_saves_leave_old_or_new() {
        let dir = temp_dir("crash");
        let store = RankingStore::at(dir.join("ranking.json"));
        let old = ranking(&[1, 2, 3]);
        let new = ranking(&[3, 2, 1]);
        for step in [SaveStep::Created, SaveStep::HalfWritten, SaveStep::Written, SaveStep::Synced, SaveStep::Renamed] {
            store.save(&old).unwrap();
            store.save_until(&new, Some(step)).unwrap();
            let loaded = store.load();
            assert!(loaded == old || loaded == new, "after a crash at {step:?}: {loaded:?}");
            if step == SaveStep::Renamed {
                assert_eq!(loaded, new);
            } else {
                assert_eq!(loaded, old, "before the rename the old file stands ({step:?})");
            }
        }
        let _ = fs::remove_dir_all(dir);
    }

    /// The variable itself is process-global (tests setting it would race),
    /// so the rule is checked through the function `default_location` uses.
    #[test]
    fn default_location_honours_the_override() {
        let data = Some(PathBuf::from("/data"));
        let at = |o: Option<&str>, d: Option<PathBuf>| {
            RankingStore::location_in(o.map(Into::into), d).map(|s| s.path().to_path_buf())
        };
        assert_eq!(at(Some("/custom/dir"), data.clone()), Some(PathBuf::from("/custom/dir/ranking.json")));
        assert_eq!(at(Some("/custom/dir"), None), Some(PathBuf::from("/custom/dir/ranking.json")));
        assert_eq!(at(Some(""), data.clone()), Some(PathBuf::from("/data/tdx-engine/ranking.json")), "empty is unset");
        assert_eq!(at(None, data), Some(PathBuf::from("/data/tdx-engine/ranking.json")));
        assert_eq!(at(None, None), None, "no data dir and no override: nowhere to keep it");
    }
}
