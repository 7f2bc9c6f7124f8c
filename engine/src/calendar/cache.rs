//! The calendar kept between runs: `calendar.json` in the engine's data
//! directory (`$TDX_ENGINE_DATA_DIR`, or `tdx-engine/` in the platform data
//! directory), beside the ranking. A cache only: a missing, corrupt or
//! foreign file is ignored and rebuilt from the server, and every refresh
//! checks the cached days against the server's newest ones before using
//! them ([`TradingCalendar::extended`]).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{TradingCalendar, CALENDAR_INDEX};
use crate::proto::Date;

const FILE_NAME: &str = "calendar.json";
/// Bumped when the file's meaning changes.
const SCHEMA_VERSION: u32 = 1;

/// What the file holds.
#[derive(Debug, Serialize, Deserialize)]
struct CacheFile {
    schema_version: u32,
    /// The index the days are the daily bars of.
    index: String,
    /// Whether `days` starts at the index's first bar.
    complete: bool,
    /// YYYYMMDD, oldest first.
    days: Vec<u32>,
}

/// A calendar as cached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cached {
    /// The days.
    pub calendar: TradingCalendar,
    /// Whether they start at the first day the server has.
    pub complete: bool,
}

/// One calendar file.
#[derive(Debug, Clone)]
pub struct CalendarCache {
    path: PathBuf,
}

impl CalendarCache {
    /// The file at `path`.
    pub fn at(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// `calendar.json` in the engine's data directory; `None` without one.
    pub fn default_location() -> Option<Self> {
        crate::ranking::engine_data_dir().map(|dir| Self::at(dir.join(FILE_NAME)))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The cached calendar; `None` when the file is missing or not ours
    /// (another schema, another index, days out of order).
    pub fn load(&self) -> Option<Cached> {
        let bytes = match fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::warn!(path = %self.path.display(), error = %e, "cannot read the calendar cache");
                return None;
            }
        };
        let file: CacheFile = match serde_json::from_slice(&bytes) {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!(path = %self.path.display(), error = %e, "calendar cache is corrupt; rebuilding");
                return None;
            }
        };
        if file.schema_version != SCHEMA_VERSION || file.index != CALENDAR_INDEX {
            return None;
        }
        let days: Option<Vec<Date>> = file.days.iter().map(|&d| Date::from_yyyymmdd(d)).collect();
        let days = days?;
        if days.is_empty() || days.windows(2).any(|w| w[0] >= w[1]) {
            return None;
        }
        Some(Cached { calendar: TradingCalendar::new(days), complete: file.complete })
    }

    /// Saves atomically: a temp file in the same directory, fsync, rename.
    pub fn save(&self, cached: &Cached) -> io::Result<()> {
        let dir = self.path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        fs::create_dir_all(dir)?;
        let file = CacheFile {
            schema_version: SCHEMA_VERSION,
            index: CALENDAR_INDEX.to_owned(),
            complete: cached.complete,
            days: cached.calendar.days().iter().map(|d| d.yyyymmdd()).collect(),
        };
        let bytes = serde_json::to_vec(&file).map_err(io::Error::other)?;
        static SAVES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let save = SAVES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let temp = dir.join(format!(".{FILE_NAME}.{}.{save}.tmp", std::process::id()));
        let mut out = OpenOptions::new().write(true).create(true).truncate(true).open(&temp)?;
        out.write_all(&bytes)?;
        out.sync_all()?;
        drop(out);
        fs::rename(&temp, &self.path)?;
        File::open(dir)?.sync_all()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saves_and_loads_and_ignores_what_is_not_ours() {
        let dir = std::env::temp_dir().join(format!("tdx-calendar-cache-{}", std::process::id()));
        let cache = CalendarCache::at(dir.join("calendar.json"));
        assert_eq!(cache.load(), None);
        let days = [20240102u32, 20240103, 20240105].map(|d| Date::from_yyyymmdd(d).unwrap());
        let cached = Cached { calendar: TradingCalendar::new(days), complete: true };
        cache.save(&cached).unwrap();
        assert_eq!(cache.load(), Some(cached));
        fs::write(cache.path(), b"{\"schema_version\":1,\"index\":\"sz399001\",\"complete\":true,\"days\":[20240102]}")
            .unwrap();
        assert_eq!(cache.load(), None, "another index");
        fs::write(
            cache.path(),
            b"{\"schema_version\":1,\"index\":\"sh000001\",\"complete\":true,\"days\":[20240103,20240102]}",
        )
        .unwrap();
        assert_eq!(cache.load(), None, "out of order");
        fs::write(cache.path(), b"not json").unwrap();
        assert_eq!(cache.load(), None);
        fs::remove_dir_all(dir).unwrap();
    }
}
