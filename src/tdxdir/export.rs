//! `tdx export`: the `tdx sync` store written out as the TDX client's
//! files. Per security and period the file keeps its records from before
//! the store's first bar and after its last one (history the store does
//! not have), and the store's bars replace the rest; where the store only
//! adds bars after the file's last, the new file is the old bytes with
//! records appended. Every file is written whole to a temporary and
//! renamed over the old one: the client never sees part of a file.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::json;
use tdx_engine::files::day::{read_daily, write_daily, DailyRecord};
use tdx_engine::files::gbbq::{read_gbbq, write_gbbq};
use tdx_engine::files::layout::GBBQ_PATH;
use tdx_engine::files::minute::{read_minutes, write_minutes, MinuteForm, MinuteRecord};
use tdx_engine::files::{whole_records, FileKind, FileLayout};
use tdx_engine::proto::commands::{Bar, CapitalChange, Period};
use tdx_engine::proto::{Category, DateTime, PriceScale, SecurityCode};

use super::detect::resolve;
use super::{remove_leftovers, write_whole, ExportArgs};
use crate::output::{Cell, Format, Table};
use crate::sync::store::Store;
use crate::CliError;

/// What writing one file did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// The file did not exist.
    Created,
    /// The old bytes, then new records.
    Appended,
    /// Records before the end changed (an unfinished day, a torn tail).
    Rewritten,
    /// Nothing to change: not written.
    Unchanged,
}

/// The bar files of `code` that hold `period`: the old `.5` form (`--five`)
/// only where its 0.01 yuan tick holds the code's prices (no 3-decimal fund).
fn kinds(period: Period, code: SecurityCode, five: bool) -> Vec<FileKind> {
    match period {
        Period::Day => vec![FileKind::Day],
        Period::Min5 if five && FileLayout::for_code(code).price == PriceScale::HUNDREDTHS => {
            vec![FileKind::Lc5, FileKind::Five]
        }
        Period::Min5 => vec![FileKind::Lc5],
        Period::Min1 => vec![FileKind::Lc1],
        _ => Vec::new(),
    }
}

/// The securities with a bars file of `period` in the store (the files are
/// the truth; the manifest only summarises them).
fn stored_codes(store_dir: &Path, period: Period) -> Vec<SecurityCode> {
    let mut out = Vec::new();
    let Ok(markets) = std::fs::read_dir(store_dir.join(format!("bars/period={period}"))) else { return out };
    for market in markets.flatten() {
        let Ok(files) = std::fs::read_dir(market.path()) else { continue };
        for file in files.flatten() {
            let name = file.file_name().to_string_lossy().into_owned();
            if let Some(code) = name.strip_suffix(".parquet").and_then(|s| s.parse().ok()) {
                out.push(code);
            }
        }
    }
    out.sort();
    out
}

/// A file's records, decoded, by stamp; a torn tail is left out (and the
/// file then rewritten without it).
enum Records {
    Daily(Vec<DailyRecord>),
    Minutes(Vec<MinuteRecord>),
}

fn form(kind: FileKind, layout: FileLayout) -> MinuteForm {
    if kind == FileKind::Five {
        MinuteForm::Hundredths
    } else {
        MinuteForm::Float(layout.price)
    }
}

fn decode(kind: FileKind, layout: FileLayout, bytes: &[u8]) -> Result<Records, String> {
    Ok(match kind {
        FileKind::Day => Records::Daily(read_daily(bytes, layout).map_err(|e| e.to_string())?),
        _ => Records::Minutes(read_minutes(bytes, form(kind, layout)).map_err(|e| e.to_string())?),
    })
}

/// The new file: the old records before the store's first bar and after
/// its last, the store's bars between.
fn merged_file(kind: FileKind, code: SecurityCode, bars: &[Bar], old: &[u8]) -> Result<Vec<u8>, String> {
    let layout = FileLayout::for_code(code);
    let (first, last) = match (bars.first(), bars.last()) {
        (Some(f), Some(l)) => (f.time, l.time),
        _ => return Ok(old.to_vec()),
    };
    let outside = |t: DateTime| t < first || t > last;
    match decode(kind, layout, old)? {
        Records::Daily(old) => {
            let mut all: BTreeMap<DateTime, DailyRecord> = BTreeMap::new();
            for r in old {
                let t = r.to_bar(layout).time;
                if outside(t) {
                    all.insert(t, r);
                }
            }
            for (i, b) in bars.iter().enumerate() {
                all.insert(b.time, DailyRecord::from_bar(b, layout, i).map_err(|e| e.to_string())?);
            }
            let records: Vec<DailyRecord> = all.into_values().collect();
            write_daily(&records, layout).map_err(|e| e.to_string())
        }
        Records::Minutes(old) => {
            let mut all: BTreeMap<DateTime, MinuteRecord> =
                old.into_iter().filter(|r| outside(r.time)).map(|r| (r.time, r)).collect();
            all.extend(bars.iter().map(|b| (b.time, MinuteRecord::from_bar(b, layout))));
            let records: Vec<MinuteRecord> = all.into_values().collect();
            write_minutes(&records, form(kind, layout)).map_err(|e| e.to_string())
        }
    }
}

/// Writes one security's file of `kind` from its stored bars.
fn export_file(root: &Path, kind: FileKind, code: SecurityCode, bars: &[Bar]) -> Result<(Outcome, u64), String> {
    let path = root.join(kind.path(code));
    let old = match std::fs::read(&path) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e.to_string()),
    };
    let (whole, torn) = old.as_deref().map_or((&[][..], 0), |b| whole_records(b, 32));
    let new = merged_file(kind, code, bars, whole)?;
    let outcome = match &old {
        None => Outcome::Created,
        Some(old) if *old == new => return Ok((Outcome::Unchanged, 0)),
        Some(_) if torn == 0 && new.starts_with(whole) => Outcome::Appended,
        Some(_) => Outcome::Rewritten,
    };
    let n = write_whole(&path, &new).map_err(|e| e.to_string())?;
    Ok((outcome, n))
}

/// Runs `tdx export`.
pub fn export(args: ExportArgs, format: Format) -> Result<(), CliError> {
    let started = Instant::now();
    let root = resolve(args.tdx_dir.as_deref(), args.detect)?;
    let store = Store::new(&args.store);
    if !args.store.join(crate::sync::store::MANIFEST).is_file() {
        return Err(CliError::new(format!("{}: no manifest.json; is it a tdx sync store?", args.store.display())));
    }
    let mut tally: BTreeMap<(String, &'static str), u64> = BTreeMap::new();
    let mut failed: Vec<(String, String)> = Vec::new();
    let mut exported = BTreeSet::new();
    let mut cleaned = BTreeSet::new();
    for &period in &args.periods {
        for code in stored_codes(&args.store, period) {
            if !args.codes.is_empty() && !args.codes.contains(&code) {
                continue;
            }
            let bars = store.read_bars(period, code).map_err(|e| CliError::new(e.to_string()))?;
            for kind in kinds(period, code, args.five) {
                let dir = root.join(kind.path(code)).parent().map(Path::to_path_buf).unwrap_or_default();
                if cleaned.insert(dir.clone()) {
                    remove_leftovers(&dir);
                }
                match export_file(&root, kind, code, &bars) {
                    Ok((outcome, bytes)) => {
                        let name = match outcome {
                            Outcome::Created => "created",
                            Outcome::Appended => "appended",
                            Outcome::Rewritten => "rewritten",
                            Outcome::Unchanged => "unchanged",
                        };
                        *tally.entry((kind.to_string(), name)).or_default() += 1;
                        *tally.entry((kind.to_string(), "bytes")).or_default() += bytes;
                        exported.insert(code);
                    }
                    Err(e) => failed.push((format!("{code}{kind}"), e)),
                }
            }
        }
    }
    let gbbq = match export_gbbq(&root, &store, &exported) {
        Ok(n) => n,
        Err(e) => {
            failed.push((GBBQ_PATH.to_owned(), e));
            None
        }
    };
    report(format, &root, &tally, gbbq, &failed, started)?;
    if failed.is_empty() {
        return Ok(());
    }
    Err(CliError::new(format!(
        "{} files could not be written; the first: {}: {}",
        failed.len(),
        failed[0].0,
        failed[0].1
    )))
}

/// The stored capital changes (`--with xdxr` stores) into gbbq: the
/// exported stocks' records replace theirs, every other record is kept.
/// Returns the records written, `None` when the store has none.
fn export_gbbq(root: &Path, store: &Store, codes: &BTreeSet<SecurityCode>) -> Result<Option<usize>, String> {
    let mut ours: BTreeMap<SecurityCode, Vec<CapitalChange>> = BTreeMap::new();
    for &code in codes.iter().filter(|c| c.category() == Category::AShare) {
        let changes = store.read_xdxr(code).map_err(|e| e.to_string())?;
        if store.path(&Store::xdxr_file(code)).is_file() {
            ours.insert(code, changes);
        }
    }
    if ours.is_empty() {
        return Ok(None);
    }
    let path: PathBuf = root.join(GBBQ_PATH);
    let old = match std::fs::read(&path) {
        Ok(b) => read_gbbq(&b).map_err(|e| e.to_string())?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e.to_string()),
    };
    let mut all: Vec<CapitalChange> = old.into_iter().filter(|c| !ours.contains_key(&c.code)).collect();
    all.extend(ours.into_values().flatten());
    // The client's order: by market, code and date (stable: same-day records keep theirs).
    all.sort_by_key(|c| (c.code.market().id(), c.code.code_bytes(), c.date_raw));
    let bytes = write_gbbq(&all).map_err(|e| e.to_string())?;
    if std::fs::read(&path).ok().as_deref() != Some(&bytes[..]) {
        write_whole(&path, &bytes).map_err(|e| e.to_string())?;
    }
    Ok(Some(all.len()))
}

fn report(
    format: Format,
    root: &Path,
    tally: &BTreeMap<(String, &'static str), u64>,
    gbbq: Option<usize>,
    failed: &[(String, String)],
    started: Instant,
) -> Result<(), CliError> {
    let kinds: BTreeSet<&String> = tally.keys().map(|(k, _)| k).collect();
    let get = |k: &String, what| tally.get(&(k.clone(), what)).copied().unwrap_or(0);
    let columns = ["created", "appended", "rewritten", "unchanged", "bytes"];
    let mut out = std::io::stdout().lock();
    if format == Format::Json {
        let files: serde_json::Map<String, serde_json::Value> = kinds
            .iter()
            .map(|k| ((*k).clone(), columns.iter().map(|c| ((*c).to_owned(), json!(get(k, c)))).collect()))
            .collect();
        let value = json!({
            "tdx_dir": root.display().to_string(),
            "files": files,
            "gbbq_records": gbbq,
            "failed": failed.iter().map(|(f, e)| json!({"file": f, "error": e})).collect::<Vec<_>>(),
            "seconds": (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&value).unwrap_or_default())?;
        return Ok(());
    }
    let mut table = Table::new(&["files", "created", "appended", "rewritten", "unchanged", "bytes written"]);
    for k in kinds {
        let mut row = vec![Cell::Text(format!("*{k}"))];
        row.extend(columns.iter().map(|c| Cell::Int(get(k, c) as i64)));
        table.push(row);
    }
    table.write(format, &mut out)?;
    if format == Format::Table {
        let gbbq = gbbq.map_or("no gbbq".to_owned(), |n| format!("gbbq with {n} records"));
        writeln!(
            out,
            "into {}: {gbbq}, {} failed, {:.1}s",
            root.display(),
            failed.len(),
            started.elapsed().as_secs_f64()
        )?;
    }
    Ok(())
}
