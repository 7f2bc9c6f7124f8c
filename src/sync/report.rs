//! What `tdx sync` tells: the counts of a run, its progress, its summary,
//! and the plan of a dry run.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use tdx_engine::proto::commands::Period;

use super::store::Manifest;
use crate::output::{Cell, Format, Table};
use crate::{CliError, Context};

/// Counters of one run.
#[derive(Debug, Default)]
pub struct Tally {
    pub requests: AtomicU64,
    /// Per period name: new bars, fixed bars, files written, bytes written.
    pub periods: Mutex<BTreeMap<String, [u64; 4]>>,
    pub factor_files: AtomicU64,
    pub xdxr_files: AtomicU64,
    pub view_files: AtomicU64,
    pub bytes: AtomicU64,
    /// Stored files not trusted (damaged, or changed since the manifest) and written again.
    pub repaired: AtomicU64,
}

impl Tally {
    pub fn add(&self, period: Period, new: u64, fixed: u64, files: u64, bytes: u64) {
        let mut p = self.periods.lock().unwrap_or_else(|e| e.into_inner());
        let row = p.entry(period.to_string()).or_default();
        for (slot, v) in row.iter_mut().zip([new, fixed, files, bytes]) {
            *slot += v;
        }
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }
}

/// The progress bar of a run (hidden for JSON output).
pub fn progress_bar(len: u64, format: Format) -> Result<ProgressBar, CliError> {
    if format == Format::Json {
        return Ok(ProgressBar::hidden());
    }
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template("{bar:40.cyan/blue} {pos}/{len} securities  {msg}")
            .map_err(|e| CliError::new(e.to_string()))?,
    );
    Ok(bar)
}

/// What a run did: per period, then the totals.
pub fn summary(
    ctx: &Context,
    out_dir: &Path,
    tally: &Tally,
    securities: usize,
    failed: &[(String, String)],
    elapsed: Duration,
) -> Result<(), CliError> {
    let periods = tally.periods.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let d = ctx.client.diagnostics();
    let (retries, timeouts, read) = (d.supervisor.counters.retries, d.supervisor.counters.timeouts, d.bytes_read);
    let mut out = std::io::stdout().lock();
    if ctx.format == Format::Json {
        let value = json!({
            "out": out_dir.display().to_string(),
            "securities": securities,
            "requests": tally.requests.load(Ordering::Relaxed),
            "seconds": (elapsed.as_secs_f64() * 1000.0).round() / 1000.0,
            "periods": periods.iter().map(|(p, r)| (p.clone(), json!({
                "new_bars": r[0], "fixed_bars": r[1], "files_written": r[2], "bytes_written": r[3],
            }))).collect::<serde_json::Map<_, _>>(),
            "factor_files_written": tally.factor_files.load(Ordering::Relaxed),
            "xdxr_files_written": tally.xdxr_files.load(Ordering::Relaxed),
            "view_files_written": tally.view_files.load(Ordering::Relaxed),
            "files_repaired": tally.repaired.load(Ordering::Relaxed),
            "bytes_written": tally.bytes.load(Ordering::Relaxed),
            "bytes_read": read,
            "retries": retries,
            "timeouts": timeouts,
            "failed": failed.iter().map(|(c, e)| json!({"code": c, "error": e})).collect::<Vec<_>>(),
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&value).unwrap_or_default())?;
        return Ok(());
    }
    let mut table = Table::new(&["period", "new bars", "fixed bars", "files written", "bytes written"]);
    for (p, r) in &periods {
        table.push(vec![
            Cell::Text(p.clone()),
            Cell::Int(r[0] as i64),
            Cell::Int(r[1] as i64),
            Cell::Int(r[2] as i64),
            Cell::Int(r[3] as i64),
        ]);
    }
    table.write(ctx.format, &mut out)?;
    if ctx.format == Format::Table {
        writeln!(
            out,
            "{securities} securities, {} requests ({retries} retries, {timeouts} timeouts), {:.1} MB read, \
             {} factor files, {} view files, {:.1} MB written, {} failed, {:.1}s",
            tally.requests.load(Ordering::Relaxed),
            read as f64 / 1e6,
            tally.factor_files.load(Ordering::Relaxed),
            tally.view_files.load(Ordering::Relaxed),
            tally.bytes.load(Ordering::Relaxed) as f64 / 1e6,
            failed.len(),
            elapsed.as_secs_f64()
        )?;
    }
    Ok(())
}

/// `--dry-run`: per period, what a run would download in full and what it would update.
pub fn dry_run(
    ctx: &Context,
    periods: &[Period],
    manifest: &Manifest,
    codes: &[super::ex::Item],
) -> Result<(), CliError> {
    let mut table = Table::new(&["period", "full downloads", "updates", "stored bars", "updates since"]);
    let mut rows = Vec::new();
    for &period in periods {
        let (mut full, mut updates, mut stored, mut oldest_last) = (0i64, 0i64, 0i64, None::<String>);
        for item in codes {
            let key = match item {
                super::ex::Item::Stock(code) => Manifest::key(period, *code),
                super::ex::Item::Ex(code) => match super::ex::ex_period(period) {
                    Some(p) => tdx_store::manifest::ex_key(p, code),
                    None => continue,
                },
            };
            match manifest.bars.get(&key) {
                Some(c) if c.rows > 0 => {
                    updates += 1;
                    stored += c.rows as i64;
                    if oldest_last.as_ref().is_none_or(|o| c.last < *o) {
                        oldest_last = Some(c.last.clone());
                    }
                }
                _ => full += 1,
            }
        }
        rows.push(json!({"period": period.to_string(), "full_downloads": full, "updates": updates, "stored_bars": stored, "updates_since": oldest_last}));
        table.push(vec![
            Cell::Text(period.to_string()),
            Cell::Int(full),
            Cell::Int(updates),
            Cell::Int(stored),
            Cell::Text(oldest_last.unwrap_or_else(|| "-".into())),
        ]);
    }
    let mut out = std::io::stdout().lock();
    if ctx.format == Format::Json {
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&json!({"dry_run": true, "securities": codes.len(), "periods": rows}))
                .unwrap_or_default()
        )?;
    } else {
        table.write(ctx.format, &mut out)?;
    }
    Ok(())
}
