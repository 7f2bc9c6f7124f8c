//! `tdx import`: a TDX install's bar files (and its gbbq) into the
//! `tdx sync` store. Per security and period the file's bars join what the
//! store holds (the store's bar wins where both have one: it came from a
//! server), the Parquet file is rewritten whole, and the manifest records
//! the coverage and where the bars came from; `tdx sync` continues from
//! the last bar as from its own.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::json;
use tdx_engine::adjust::AdjustmentFactors;
use tdx_engine::files::day::read_daily;
use tdx_engine::files::gbbq::read_gbbq;
use tdx_engine::files::layout::GBBQ_PATH;
use tdx_engine::files::minute::{read_minutes, MinuteForm};
use tdx_engine::files::{whole_records, FileKind, FileLayout};
use tdx_engine::proto::commands::{Bar, CapitalChange, Period};
use tdx_engine::proto::{Category, DateTime, SecurityCode};

use super::detect::resolve;
use super::ImportArgs;
use crate::output::{Cell, Format, Table};
use crate::sync::store::{self, Corporate, Imported, Manifest, Store, SCHEMA_VERSION};
use crate::CliError;

/// The period a bar file holds.
fn period_of(kind: FileKind) -> Period {
    match kind {
        FileKind::Day => Period::Day,
        FileKind::Lc5 | FileKind::Five => Period::Min5,
        FileKind::Lc1 => Period::Min1,
    }
}

/// One file to import.
struct Source {
    code: SecurityCode,
    kind: FileKind,
    path: PathBuf,
}

/// The bar files of `root` that `args` asks for; `.5` only where no `.lc5`.
fn sources(root: &Path, args: &ImportArgs) -> Vec<Source> {
    // Keyed by period name: `Period` has no order.
    let mut found: BTreeMap<(SecurityCode, String), Source> = BTreeMap::new();
    for &market in &args.markets {
        for kind in FileKind::ALL {
            if !args.periods.contains(&period_of(kind)) {
                continue;
            }
            let dir = root.join("vipdoc").join(market.prefix()).join(kind.directory());
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let Some((code, k)) = FileKind::parse_name(&name) else { continue };
                if k != kind || code.market() != market || (!args.codes.is_empty() && !args.codes.contains(&code)) {
                    continue;
                }
                let key = (code, period_of(kind).to_string());
                let better = found.get(&key).is_none_or(|s| s.kind == FileKind::Five && kind == FileKind::Lc5);
                if better {
                    found.insert(key, Source { code, kind, path: entry.path() });
                }
            }
        }
    }
    found.into_values().collect()
}

/// The bars of one file, oldest first, one per stamp; and the bytes of a
/// torn last record it left out.
fn read_bars(source: &Source) -> Result<(Vec<Bar>, usize), String> {
    let bytes = std::fs::read(&source.path).map_err(|e| e.to_string())?;
    let (whole, torn) = whole_records(&bytes, 32);
    let layout = FileLayout::for_code(source.code);
    let bars: Vec<Bar> = match source.kind {
        FileKind::Day => {
            read_daily(whole, layout).map_err(|e| e.to_string())?.iter().map(|r| r.to_bar(layout)).collect()
        }
        FileKind::Lc1 | FileKind::Lc5 => read_minutes(whole, MinuteForm::Float(layout.price))
            .map_err(|e| e.to_string())?
            .iter()
            .map(|r| r.to_bar(layout))
            .collect(),
        FileKind::Five => read_minutes(whole, MinuteForm::Hundredths)
            .map_err(|e| e.to_string())?
            .iter()
            .map(|r| r.to_bar(layout))
            .collect(),
    };
    // Files are oldest first; a repeated stamp keeps its last record.
    let by_time: BTreeMap<DateTime, Bar> = bars.into_iter().map(|b| (b.time, b)).collect();
    Ok((by_time.into_values().collect(), torn))
}

/// Per period: files, bars read, bars stored, torn files.
#[derive(Default)]
struct Counts {
    files: u64,
    read: u64,
    stored: u64,
    torn: u64,
}

/// Runs `tdx import`.
pub fn import(args: ImportArgs, format: Format) -> Result<(), CliError> {
    let Some(out_dir) = args.out.clone() else {
        return super::detect(format);
    };
    let started = Instant::now();
    let root = resolve(args.tdx_dir.as_deref(), args.detect)?;
    if !root.join("vipdoc").is_dir() {
        return Err(CliError::new(format!("{}: no vipdoc/ here; is it a TDX install?", root.display())));
    }
    let store = Store::new(&out_dir);
    std::fs::create_dir_all(&out_dir).map_err(|e| CliError::new(format!("{}: {e}", out_dir.display())))?;
    store.remove_leftovers().map_err(|e| CliError::new(e.to_string()))?;
    let mut manifest = store.read_manifest().map_err(|e| CliError::new(e.to_string()))?;
    manifest.schema_version = SCHEMA_VERSION;
    let mut counts: BTreeMap<String, Counts> = BTreeMap::new();
    let mut failed: Vec<(String, String)> = Vec::new();
    let mut imported_codes = std::collections::BTreeSet::new();
    for source in sources(&root, &args) {
        let period = period_of(source.kind);
        let c = counts.entry(period.to_string()).or_default();
        let (bars, torn) = match read_bars(&source) {
            Ok(r) => r,
            Err(e) => {
                failed.push((source.path.display().to_string(), e));
                continue;
            }
        };
        c.files += 1;
        c.read += bars.len() as u64;
        c.torn += u64::from(torn > 0);
        if bars.is_empty() {
            continue;
        }
        let stored = store.read_bars(period, source.code).map_err(|e| CliError::new(e.to_string()))?;
        let mut merged: BTreeMap<DateTime, Bar> = bars.iter().map(|b| (b.time, *b)).collect();
        // The store's bars came from a server: they win.
        merged.extend(stored.iter().map(|b| (b.time, *b)));
        let merged: Vec<Bar> = merged.into_values().collect();
        c.stored += (merged.len() - stored.len()) as u64;
        let relative = Store::bars_file(period, source.code);
        let bytes =
            store::encode_bars(source.code, &merged).map_err(|e| CliError::new(format!("{}: {e}", source.code)))?;
        let written = store.write_atomic(&relative, &bytes).map_err(|e| CliError::new(e.to_string()))?;
        let key = Manifest::key(period, source.code);
        manifest.bars.insert(key.clone(), crate::sync::cover(&relative, &merged, written, store::checksum(&bytes)));
        manifest.imported.insert(
            key,
            Imported {
                source: "tdx-client".into(),
                file: source.path.display().to_string(),
                rows: bars.len(),
                first: bars.first().map(|b| store::stamp(b.time)).unwrap_or_default(),
                last: bars.last().map(|b| store::stamp(b.time)).unwrap_or_default(),
            },
        );
        imported_codes.insert(source.code);
    }
    let corporate = import_gbbq(&root, &store, &mut manifest, &imported_codes, args.with.iter().any(|w| w == "xdxr"));
    let corporate = match corporate {
        Ok(n) => n,
        Err(e) => {
            failed.push((root.join(GBBQ_PATH).display().to_string(), e));
            0
        }
    };
    store.write_manifest(&manifest).map_err(|e| CliError::new(e.to_string()))?;
    report(format, &root, &out_dir, &counts, corporate, &failed, started)?;
    if failed.is_empty() {
        return Ok(());
    }
    Err(CliError::new(format!("{} files could not be read; the first: {}: {}", failed.len(), failed[0].0, failed[0].1)))
}

/// The stocks' capital changes from gbbq: factors (and xdxr) files and the
/// manifest's corporate entries, as `tdx sync` would write them from the
/// server's records. Returns the stocks given factors.
fn import_gbbq(
    root: &Path,
    store: &Store,
    manifest: &mut Manifest,
    codes: &std::collections::BTreeSet<SecurityCode>,
    xdxr: bool,
) -> Result<usize, String> {
    let path = root.join(GBBQ_PATH);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e.to_string()),
    };
    let mut by_code: BTreeMap<SecurityCode, Vec<CapitalChange>> = BTreeMap::new();
    for change in read_gbbq(&bytes).map_err(|e| e.to_string())? {
        by_code.entry(change.code).or_default().push(change);
    }
    let mut written = 0;
    for &code in codes.iter().filter(|c| c.category() == Category::AShare) {
        let changes = by_code.remove(&code).unwrap_or_default();
        let factors = AdjustmentFactors::new(code, &changes, None, None);
        if !changes.is_empty() {
            let bytes = store::encode_factors(&factors).map_err(|e| format!("{code}: {e}"))?;
            store.write_atomic(&Store::factors_file(code), &bytes).map_err(|e| e.to_string())?;
            if xdxr {
                let bytes = store::encode_xdxr(code, &changes).map_err(|e| format!("{code}: {e}"))?;
                store.write_atomic(&Store::xdxr_file(code), &bytes).map_err(|e| e.to_string())?;
            }
            written += 1;
        }
        let entry =
            Corporate { hash: store::changes_hash(&changes), records: changes.len(), factor_rows: factors.rows.len() };
        manifest.corporate.insert(code.to_string(), entry);
    }
    Ok(written)
}

fn report(
    format: Format,
    root: &Path,
    out_dir: &Path,
    counts: &BTreeMap<String, Counts>,
    factor_files: usize,
    failed: &[(String, String)],
    started: Instant,
) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    if format == Format::Json {
        let value = json!({
            "tdx_dir": root.display().to_string(),
            "out": out_dir.display().to_string(),
            "periods": counts.iter().map(|(p, c)| (p.clone(), json!({
                "files": c.files, "bars_read": c.read, "bars_added": c.stored, "torn_files": c.torn,
            }))).collect::<serde_json::Map<_, _>>(),
            "factor_files_written": factor_files,
            "failed": failed.iter().map(|(f, e)| json!({"file": f, "error": e})).collect::<Vec<_>>(),
            "seconds": (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&value).unwrap_or_default())?;
        return Ok(());
    }
    let mut table = Table::new(&["period", "files", "bars read", "bars added", "torn files"]);
    for (p, c) in counts {
        table.push(vec![
            Cell::Text(p.clone()),
            Cell::Int(c.files as i64),
            Cell::Int(c.read as i64),
            Cell::Int(c.stored as i64),
            Cell::Int(c.torn as i64),
        ]);
    }
    table.write(format, &mut out)?;
    if format == Format::Table {
        writeln!(
            out,
            "from {} into {}: {factor_files} factor files, {} failed, {:.1}s",
            root.display(),
            out_dir.display(),
            failed.len(),
            started.elapsed().as_secs_f64()
        )?;
    }
    Ok(())
}
