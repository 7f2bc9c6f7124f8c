//! `tdx import` and `tdx export`: the TDX desktop client's own files
//! (docs/FILES.md) brought into the `tdx sync` store, and the store
//! written out as them; `--detect` finds an install.
//!
//! Both work on files only, no server: the formats are the engine's
//! `tdx_engine::files`, the store is `tdx sync`'s.

mod detect;
mod export;
mod import;

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use tdx_engine::proto::commands::Period;
use tdx_engine::proto::{Market, SecurityCode};

pub use detect::detect;
pub use export::export;
pub use import::import;

use crate::CliError;

/// `tdx import` options.
#[derive(Args, Clone, Debug)]
pub struct ImportArgs {
    /// The TDX install: the directory holding `vipdoc/` and `T0002/`.
    #[arg(long, conflicts_with = "detect")]
    pub tdx_dir: Option<PathBuf>,
    /// Find an install in the usual places (Wine prefixes too) and say what
    /// it holds; with --out, import the first one found.
    #[arg(long)]
    pub detect: bool,
    /// The store's directory (created if missing); `tdx sync --out` the
    /// same directory later continues from the imported bars.
    #[arg(long, required_unless_present = "detect")]
    pub out: Option<PathBuf>,
    /// Periods to import: day (.day), 5m (.lc5, or the old .5), 1m (.lc1).
    #[arg(long, value_delimiter = ',', default_value = "day,5m,1m", value_parser = parse_file_period)]
    pub periods: Vec<Period>,
    /// Markets whose files to import.
    #[arg(long, value_delimiter = ',', default_value = "sz,sh,bj")]
    pub markets: Vec<Market>,
    /// Only these securities.
    #[arg(long, value_delimiter = ',')]
    pub codes: Vec<SecurityCode>,
    /// Also store xdxr: the raw capital-change records of T0002/hq_cache/gbbq.
    #[arg(long = "with", value_delimiter = ',', value_parser = ["xdxr"])]
    pub with: Vec<String>,
}

/// `tdx export` options.
#[derive(Args, Clone, Debug)]
pub struct ExportArgs {
    /// The `tdx sync` store to write out.
    #[arg(long)]
    pub store: PathBuf,
    /// The TDX install to write into (created if missing).
    #[arg(long, required_unless_present = "detect", conflicts_with = "detect")]
    pub tdx_dir: Option<PathBuf>,
    /// Write into the first install found in the usual places.
    #[arg(long)]
    pub detect: bool,
    /// Periods to write: day (.day), 5m (.lc5), 1m (.lc1).
    #[arg(long, value_delimiter = ',', default_value = "day,5m,1m", value_parser = parse_file_period)]
    pub periods: Vec<Period>,
    /// Only these securities.
    #[arg(long, value_delimiter = ',')]
    pub codes: Vec<SecurityCode>,
    /// Also write five-minute bars in the old `.5` form beside `.lc5` (for
    /// codes on a 0.01 yuan tick: the form cannot hold a 3-decimal fund).
    #[arg(long)]
    pub five: bool,
}

/// The periods the client keeps files of.
pub const FILE_PERIODS: [Period; 3] = [Period::Day, Period::Min5, Period::Min1];

fn parse_file_period(s: &str) -> Result<Period, String> {
    let period = crate::parse_period(s)?;
    FILE_PERIODS
        .contains(&period)
        .then_some(period)
        .ok_or_else(|| format!("{s:?}: the client keeps day, 5m and 1m files"))
}

/// Writes `bytes` to `path` so that no reader ever sees part of it: a
/// hidden temporary in the same directory, fsynced, renamed over `path`,
/// the directory fsynced. Returns the bytes written.
fn write_whole(path: &Path, bytes: &[u8]) -> Result<u64, CliError> {
    let io = |e: std::io::Error| CliError::new(format!("{}: {e}", path.display()));
    let dir = path.parent().ok_or_else(|| CliError::new(format!("{}: no directory", path.display())))?;
    fs::create_dir_all(dir).map_err(io)?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let mut file = File::create(&temp).map_err(io)?;
    file.write_all(bytes).map_err(io)?;
    file.sync_all().map_err(io)?;
    drop(file);
    fs::rename(&temp, path).map_err(io)?;
    File::open(dir).and_then(|d| d.sync_all()).map_err(io)?;
    Ok(bytes.len() as u64)
}

/// Removes the temporaries a killed export left in `dir` (never a file
/// the client wrote: only hidden `.NAME.tmp-PID` names).
fn remove_leftovers(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') && name.contains(".tmp-") {
            let _ = fs::remove_file(entry.path());
        }
    }
}
