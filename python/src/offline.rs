//! `tdx_engine.offline`: the TDX client's own files read into [`Table`]s
//! and written from rows, through the engine's `tdx_engine::files`
//! readers and writers. Bar tables have the columns of `client.bars.get`,
//! so a table read from a file and one fetched from a server compare
//! (and write) alike. Writers write whole files: a temporary beside the
//! file, renamed over it.

use std::path::{Path, PathBuf};

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use tdx_engine::files::blocks::{
    encode_block_file, parse_block_file, read_blk, read_custom_blocks_cfg, write_blk, write_custom_blocks_cfg, Board,
    CustomBlockEntry,
};
use tdx_engine::files::day::{read_daily, read_ex_daily, write_daily, write_ex_daily, DailyRecord, ExDailyRecord};
use tdx_engine::files::finance::{
    read_finance, write_finance_dat, write_finance_zip, FinanceFile, FinanceHeader, FinanceRecord,
};
use tdx_engine::files::gbbq::{read_gbbq, write_gbbq};
use tdx_engine::files::industry::{read_industry, write_industry, IndustryEntry};
use tdx_engine::files::minute::{read_minutes, write_minutes, MinuteForm, MinuteRecord};
use tdx_engine::files::{whole_records, FileError, FileKind, FileLayout};
use tdx_engine::proto::commands::{Bar, Breadth, CapitalChange};
use tdx_engine::proto::{Date, DateTime, Price, SecurityCode, TimeOfDay};

use crate::convert;
use crate::table::{Builder, Table};

fn file_error(path: &Path, e: FileError) -> PyErr {
    PyValueError::new_err(format!("{}: {e}", path.display()))
}

fn read(path: &Path) -> PyResult<Vec<u8>> {
    std::fs::read(path).map_err(|e| PyOSError::new_err(format!("{}: {e}", path.display())))
}

/// Writes `bytes` whole: a temporary in the same directory, renamed over `path`.
fn write_whole(path: &Path, bytes: &[u8]) -> PyResult<()> {
    let io = |e: std::io::Error| PyOSError::new_err(format!("{}: {e}", path.display()));
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io)?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    std::fs::write(&temp, bytes).map_err(io)?;
    std::fs::rename(&temp, path).map_err(io)
}

/// The security a bar file is of: `code` when given, else its name's.
fn code_of(path: &Path, code: Option<&str>) -> PyResult<SecurityCode> {
    if let Some(c) = code {
        return c.trim().parse().map_err(|e| PyValueError::new_err(format!("code: {e}")));
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    FileKind::parse_name(&name).map(|(c, _)| c).ok_or_else(|| {
        PyValueError::new_err(format!("{}: the name is not CODE.day/.lc1/.lc5/.5; pass code=", path.display()))
    })
}

/// The minute form a file's extension names.
fn minute_form(path: &Path, layout: FileLayout) -> PyResult<MinuteForm> {
    match path.extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).as_deref() {
        Some("lc1" | "lc5") => Ok(MinuteForm::Float(layout.price)),
        Some("5") => Ok(MinuteForm::Hundredths),
        _ => Err(PyValueError::new_err(format!("{}: minute files end in .lc1, .lc5 or .5", path.display()))),
    }
}

/// A `.day` file's bars (a torn last record is left out, as the client does).
#[pyfunction]
#[pyo3(signature = (path, code=None))]
pub fn read_daily_file(path: PathBuf, code: Option<&str>) -> PyResult<Table> {
    let layout = FileLayout::for_code(code_of(&path, code)?);
    let bytes = read(&path)?;
    let records = read_daily(whole_records(&bytes, 32).0, layout).map_err(|e| file_error(&path, e))?;
    Ok(convert::bars(&records.iter().map(|r| r.to_bar(layout)).collect::<Vec<_>>()))
}

/// A `.lc1`, `.lc5` or `.5` file's bars.
#[pyfunction]
#[pyo3(signature = (path, code=None))]
pub fn read_minute_file(path: PathBuf, code: Option<&str>) -> PyResult<Table> {
    let layout = FileLayout::for_code(code_of(&path, code)?);
    let form = minute_form(&path, layout)?;
    let bytes = read(&path)?;
    let records = read_minutes(whole_records(&bytes, 32).0, form).map_err(|e| file_error(&path, e))?;
    Ok(convert::bars(&records.iter().map(|r| r.to_bar(layout)).collect::<Vec<_>>()))
}

/// An extended-market `.day` file: float prices; the amount slot both ways.
#[pyfunction]
pub fn read_ex_daily_file(path: PathBuf) -> PyResult<Table> {
    let bytes = read(&path)?;
    let r = read_ex_daily(whole_records(&bytes, 32).0).map_err(|e| file_error(&path, e))?;
    Ok(Builder::new()
        .date("date", r.iter().map(|x| Some(x.date)))
        .float("open", r.iter().map(|x| x.open))
        .float("high", r.iter().map(|x| x.high))
        .float("low", r.iter().map(|x| x.low))
        .float("close", r.iter().map(|x| x.close))
        .int("amount", r.iter().map(|x| x.amount_integer()))
        .float("amount_float", r.iter().map(|x| x.amount_float()))
        .int("volume", r.iter().map(|x| x.volume))
        .float("settlement", r.iter().map(|x| x.settlement))
        .build())
}

/// gbbq's capital changes: `client.corporate.capital_changes`' columns, and
/// each value word's bits (`raw1`..`raw4`).
#[pyfunction]
pub fn read_gbbq_file(path: PathBuf) -> PyResult<Table> {
    let r = read_gbbq(&read(&path)?).map_err(|e| file_error(&path, e))?;
    let values: Vec<[f64; 4]> = r.iter().map(CapitalChange::values).collect();
    let mut b = Builder::new()
        .text("code", r.iter().map(|c| c.code.to_string()))
        .date("date", r.iter().map(CapitalChange::date))
        .int("category", r.iter().map(|c| c.category))
        .text("name", r.iter().map(|c| c.category_name()));
    for i in 0..4 {
        b = b.float(&format!("c{}", i + 1), values.iter().map(move |v| v[i]));
    }
    for i in 0..4 {
        b = b.int(&format!("raw{}", i + 1), r.iter().map(move |c| c.words[i]));
    }
    Ok(b.build())
}

/// A board file (`block_gn.dat`, ...): one row per board.
#[pyfunction]
pub fn read_block_file(path: PathBuf) -> PyResult<Table> {
    let boards =
        parse_block_file(&read(&path)?).map_err(|e| PyValueError::new_err(format!("{}: {e}", path.display())))?;
    Ok(convert::boards(&boards))
}

/// The user's blocks in `dir` (`blocknew.cfg` and its `.blk` files): a list
/// of dicts `name`, `file`, `codes`.
#[pyfunction]
pub fn read_custom_blocks_dir<'py>(py: Python<'py>, dir: PathBuf) -> PyResult<Bound<'py, PyList>> {
    let cfg = dir.join("blocknew.cfg");
    let entries = read_custom_blocks_cfg(&read(&cfg)?).map_err(|e| file_error(&cfg, e))?;
    let out = PyList::empty(py);
    for e in entries {
        let blk = dir.join(format!("{}.blk", e.stem));
        let codes = match std::fs::read(&blk) {
            Ok(bytes) => read_blk(&bytes).map_err(|err| file_error(&blk, err))?,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(err) => return Err(PyOSError::new_err(format!("{}: {err}", blk.display()))),
        };
        let d = PyDict::new(py);
        d.set_item("name", e.name)?;
        d.set_item("file", format!("{}.blk", e.stem))?;
        d.set_item("codes", codes.iter().map(ToString::to_string).collect::<Vec<_>>())?;
        out.append(d)?;
    }
    Ok(out)
}

/// `tdxhy.cfg`: one row per security.
#[pyfunction]
pub fn read_industry_file(path: PathBuf) -> PyResult<Table> {
    let rows = read_industry(&read(&path)?).map_err(|e| file_error(&path, e))?;
    Ok(Builder::new()
        .text("code", rows.iter().map(|r| r.code.to_string()))
        .text("tdx_industry", rows.iter().map(|r| r.tdx_industry().to_owned()))
        .text("sw_industry", rows.iter().map(|r| r.sw_industry().to_owned()))
        .text("fields", rows.iter().map(|r| r.fields.join("|")))
        .build())
}

/// A finance history file (`gpcw*.dat` or `.zip`): one row per security,
/// fields `field_1`.. in file order.
#[pyfunction]
pub fn read_finance_file(path: PathBuf) -> PyResult<Table> {
    let file = read_finance(&read(&path)?).map_err(|e| file_error(&path, e))?;
    let r = &file.records;
    let mut b = Builder::new()
        .text("code", r.iter().map(|x| x.code.clone()))
        .int("market_raw", r.iter().map(|x| x.market_raw))
        .date("report_date", r.iter().map(|_| Date::from_yyyymmdd(file.header.report_date)));
    for i in 0..r.first().map_or(0, |x| x.fields.len()) {
        b = b.float(&format!("field_{}", i + 1), r.iter().map(move |x| x.fields[i]));
    }
    Ok(b.build())
}

/// A row's `name` value; `None` when missing or `None`.
fn field<'py>(row: &Bound<'py, PyAny>, name: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
    match row.get_item(name) {
        Ok(v) if v.is_none() => Ok(None),
        Ok(v) => Ok(Some(v)),
        Err(e) if e.is_instance_of::<pyo3::exceptions::PyKeyError>(row.py()) => Ok(None),
        Err(e) => Err(e),
    }
}

fn required<'py>(row: &Bound<'py, PyAny>, name: &str, index: usize) -> PyResult<Bound<'py, PyAny>> {
    field(row, name)?.ok_or_else(|| PyValueError::new_err(format!("row {index}: no {name}")))
}

fn bad_value(name: &str, index: usize) -> impl FnOnce(PyErr) -> PyErr + '_ {
    move |e| PyValueError::new_err(format!("row {index}: {name}: {e}"))
}

/// A price column in yuan (a float or a `Decimal`), exact to the milli-yuan.
fn price(row: &Bound<'_, PyAny>, name: &str, index: usize) -> PyResult<Price> {
    let yuan: f64 = required(row, name, index)?.extract().map_err(bad_value(name, index))?;
    Ok(Price((yuan * 1000.0).round() as i64))
}

/// A row's stamp: `datetime` (a `datetime.datetime`), or a `date` at 15:00.
fn stamp(row: &Bound<'_, PyAny>, index: usize) -> PyResult<DateTime> {
    let at = match row.get_item("datetime") {
        Ok(v) if !v.is_none() => v,
        _ => row.get_item("date").map_err(|_| PyValueError::new_err(format!("row {index}: no datetime or date")))?,
    };
    let part = |name: &str| -> PyResult<u32> { at.getattr(name)?.extract() };
    let bad = || PyValueError::new_err(format!("row {index}: {at} is not a date"));
    let date = Date::new(part("year")? as u16, part("month")? as u8, part("day")? as u8).ok_or_else(bad)?;
    let time = if at.hasattr("hour")? {
        TimeOfDay::new(part("hour")? as u8, part("minute")? as u8, 0, 0).ok_or_else(bad)?
    } else {
        TimeOfDay::new(15, 0, 0, 0).expect("15:00")
    };
    Ok(DateTime { date, time })
}

/// Bars from rows of `client.bars.get`'s columns (a `Table`, dicts, ...).
fn bars_from_rows(rows: &Bound<'_, PyAny>) -> PyResult<Vec<Bar>> {
    let mut out = Vec::new();
    for (index, row) in rows.try_iter()?.enumerate() {
        let row = row?;
        let count = |name: &str| -> PyResult<Option<u16>> {
            field(&row, name)?.map(|v| v.extract::<u16>().map_err(bad_value(name, index))).transpose()
        };
        let (up, down) = (count("up_count")?, count("down_count")?);
        let float =
            |name: &str| -> PyResult<f32> { required(&row, name, index)?.extract().map_err(bad_value(name, index)) };
        out.push(Bar {
            time: stamp(&row, index)?,
            open: price(&row, "open", index)?,
            close: price(&row, "close", index)?,
            high: price(&row, "high", index)?,
            low: price(&row, "low", index)?,
            volume: float("volume")?,
            amount: float("amount")?,
            breadth: up.zip(down).map(|(up, down)| Breadth { up, down }),
        });
    }
    Ok(out)
}

/// Writes `rows` (bars, oldest first) as a `.day` file in `code`'s units.
#[pyfunction]
#[pyo3(signature = (path, rows, code=None))]
pub fn write_daily_file(path: PathBuf, rows: &Bound<'_, PyAny>, code: Option<&str>) -> PyResult<usize> {
    let layout = FileLayout::for_code(code_of(&path, code)?);
    let bars = bars_from_rows(rows)?;
    let records: Vec<DailyRecord> = bars
        .iter()
        .enumerate()
        .map(|(i, b)| DailyRecord::from_bar(b, layout, i))
        .collect::<Result<_, _>>()
        .map_err(|e| file_error(&path, e))?;
    write_whole(&path, &write_daily(&records, layout).map_err(|e| file_error(&path, e))?)?;
    Ok(records.len())
}

/// Writes `rows` (bars, oldest first) as a `.lc1`, `.lc5` or `.5` file.
#[pyfunction]
#[pyo3(signature = (path, rows, code=None))]
pub fn write_minute_file(path: PathBuf, rows: &Bound<'_, PyAny>, code: Option<&str>) -> PyResult<usize> {
    let layout = FileLayout::for_code(code_of(&path, code)?);
    let form = minute_form(&path, layout)?;
    let records: Vec<MinuteRecord> = bars_from_rows(rows)?.iter().map(|b| MinuteRecord::from_bar(b, layout)).collect();
    write_whole(&path, &write_minutes(&records, form).map_err(|e| file_error(&path, e))?)?;
    Ok(records.len())
}

/// Writes rows of `read_gbbq`'s columns (`code`, `date`, `category`,
/// `raw1`..`raw4`) as a gbbq file.
#[pyfunction]
pub fn write_gbbq_file(path: PathBuf, rows: &Bound<'_, PyAny>) -> PyResult<usize> {
    let mut records = Vec::new();
    for (index, row) in rows.try_iter()?.enumerate() {
        let row = row?;
        let code: String = required(&row, "code", index)?.extract().map_err(bad_value("code", index))?;
        let code: SecurityCode = code.parse().map_err(|e| PyValueError::new_err(format!("row {index}: {e}")))?;
        let date_raw = match row.get_item("date") {
            Ok(d) if !d.is_none() => {
                let part = |name: &str| -> PyResult<u32> { d.getattr(name)?.extract() };
                part("year")? * 10_000 + part("month")? * 100 + part("day")?
            }
            _ => 0,
        };
        let word = |i: usize| -> PyResult<u32> {
            let name = format!("raw{i}");
            required(&row, &name, index)?.extract().map_err(bad_value(&name, index))
        };
        records.push(CapitalChange {
            code,
            reserved: 0,
            date_raw,
            category: required(&row, "category", index)?.extract().map_err(bad_value("category", index))?,
            words: [word(1)?, word(2)?, word(3)?, word(4)?],
        });
    }
    write_whole(&path, &write_gbbq(&records).map_err(|e| file_error(&path, e))?)?;
    Ok(records.len())
}

/// A row's date column (a `datetime.date`) as a date.
fn row_date(row: &Bound<'_, PyAny>, index: usize) -> PyResult<Date> {
    row_date_named(row, "date", index)
}

/// A row's `name` column (a `datetime.date`) as a date.
fn row_date_named(row: &Bound<'_, PyAny>, name: &str, index: usize) -> PyResult<Date> {
    let d = required(row, name, index)?;
    let part = |name: &str| -> PyResult<u32> { d.getattr(name)?.extract() };
    Date::new(part("year")? as u16, part("month")? as u8, part("day")? as u8)
        .ok_or_else(|| PyValueError::new_err(format!("row {index}: {d} is not a date")))
}

/// Writes rows of `read_ex_daily`'s columns (`date`, `open`, `high`, `low`,
/// `close`, `amount` as the slot's integer, `volume`, `settlement`) as an
/// extended-market `.day` file.
#[pyfunction]
pub fn write_ex_daily_file(path: PathBuf, rows: &Bound<'_, PyAny>) -> PyResult<usize> {
    let mut records = Vec::new();
    for (index, row) in rows.try_iter()?.enumerate() {
        let row = row?;
        let float =
            |name: &str| -> PyResult<f32> { required(&row, name, index)?.extract().map_err(bad_value(name, index)) };
        let word =
            |name: &str| -> PyResult<u32> { required(&row, name, index)?.extract().map_err(bad_value(name, index)) };
        records.push(ExDailyRecord {
            date: row_date(&row, index)?,
            open: float("open")?,
            high: float("high")?,
            low: float("low")?,
            close: float("close")?,
            amount_bits: word("amount")?,
            volume: word("volume")?,
            settlement: float("settlement")?,
        });
    }
    write_whole(&path, &write_ex_daily(&records))?;
    Ok(records.len())
}

/// Writes rows of `read_industry`'s columns (`code`, `fields` joined by
/// `|`) as `tdxhy.cfg`.
#[pyfunction]
pub fn write_industry_file(path: PathBuf, rows: &Bound<'_, PyAny>) -> PyResult<usize> {
    let mut entries = Vec::new();
    for (index, row) in rows.try_iter()?.enumerate() {
        let row = row?;
        let code: String = required(&row, "code", index)?.extract().map_err(bad_value("code", index))?;
        let code: SecurityCode = code.parse().map_err(|e| PyValueError::new_err(format!("row {index}: {e}")))?;
        let fields: String = required(&row, "fields", index)?.extract().map_err(bad_value("fields", index))?;
        entries.push(IndustryEntry { code, fields: fields.split('|').map(str::to_owned).collect() });
    }
    write_whole(&path, &write_industry(&entries).map_err(|e| file_error(&path, e))?)?;
    Ok(entries.len())
}

/// Writes the user's blocks (dicts of `read_custom_blocks`' keys `name`,
/// `file` and `codes`) into `dir`: `blocknew.cfg` and one `.blk` each.
#[pyfunction]
pub fn write_custom_blocks_dir(dir: PathBuf, blocks: &Bound<'_, PyAny>) -> PyResult<usize> {
    let mut entries = Vec::new();
    let mut members = Vec::new();
    for (index, block) in blocks.try_iter()?.enumerate() {
        let block = block?;
        let name: String = required(&block, "name", index)?.extract().map_err(bad_value("name", index))?;
        let file: String = required(&block, "file", index)?.extract().map_err(bad_value("file", index))?;
        let stem = file.strip_suffix(".blk").unwrap_or(&file).to_owned();
        let codes: Vec<String> = required(&block, "codes", index)?.extract().map_err(bad_value("codes", index))?;
        let codes: Vec<SecurityCode> = codes
            .iter()
            .map(|c| c.parse().map_err(|e| PyValueError::new_err(format!("row {index}: {e}"))))
            .collect::<PyResult<_>>()?;
        entries.push(CustomBlockEntry { name, stem });
        members.push(codes);
    }
    let cfg = dir.join("blocknew.cfg");
    let bytes = write_custom_blocks_cfg(&entries).map_err(|e| file_error(&cfg, e))?;
    for (entry, codes) in entries.iter().zip(&members) {
        write_whole(&dir.join(format!("{}.blk", entry.stem)), &write_blk(codes))?;
    }
    write_whole(&cfg, &bytes)?;
    Ok(entries.len())
}

/// Writes rows of `read_blocks`' columns (`name`, `kind_raw`, `codes`
/// joined by `,`; `member_count`, if given, must match) as a board file
/// whose header holds `title`.
#[pyfunction]
#[pyo3(signature = (path, rows, title=""))]
pub fn write_block_file(path: PathBuf, rows: &Bound<'_, PyAny>, title: &str) -> PyResult<usize> {
    let mut boards = Vec::new();
    for (index, row) in rows.try_iter()?.enumerate() {
        let row = row?;
        let name: String = required(&row, "name", index)?.extract().map_err(bad_value("name", index))?;
        let kind_raw: u16 = match field(&row, "kind_raw")? {
            Some(v) => v.extract().map_err(bad_value("kind_raw", index))?,
            None => 2,
        };
        let codes: String = required(&row, "codes", index)?.extract().map_err(bad_value("codes", index))?;
        let codes: Vec<String> = codes.split(',').filter(|c| !c.is_empty()).map(str::to_owned).collect();
        if let Some(count) = field(&row, "member_count")? {
            let count: usize = count.extract().map_err(bad_value("member_count", index))?;
            if count != codes.len() {
                return Err(PyValueError::new_err(format!(
                    "row {index}: member_count {count} but {} codes",
                    codes.len()
                )));
            }
        }
        boards.push(Board { name, kind_raw, codes });
    }
    let bytes =
        encode_block_file(title, &boards).map_err(|e| PyValueError::new_err(format!("{}: {e}", path.display())))?;
    write_whole(&path, &bytes)?;
    Ok(boards.len())
}

/// Writes rows of `read_finance`'s columns (`code`, `market_raw`,
/// `report_date`, `field_1`..) as a finance history file: a `.zip` holding
/// `gpcwYYYYMMDD.dat` when the path ends in `.zip`, else the `.dat` itself.
/// Every row must hold the same fields and report date (or give
/// `report_date` as YYYYMMDD); the header's three words of unknown meaning
/// are written 0.
#[pyfunction]
#[pyo3(signature = (path, rows, report_date=None))]
pub fn write_finance_file(path: PathBuf, rows: &Bound<'_, PyAny>, report_date: Option<u32>) -> PyResult<usize> {
    let mut records = Vec::new();
    let mut date = report_date;
    for (index, row) in rows.try_iter()?.enumerate() {
        let row = row?;
        let code: String = required(&row, "code", index)?.extract().map_err(bad_value("code", index))?;
        let market_raw: u8 = required(&row, "market_raw", index)?.extract().map_err(bad_value("market_raw", index))?;
        if field(&row, "report_date")?.is_some() {
            let row_date = row_date_named(&row, "report_date", index)?.yyyymmdd();
            match date {
                Some(d) if d != row_date => {
                    return Err(PyValueError::new_err(format!(
                        "row {index}: report_date {row_date} differs from {d}; one file holds one report date"
                    )))
                }
                _ => date = Some(row_date),
            }
        }
        let mut fields = Vec::new();
        while let Some(v) = field(&row, &format!("field_{}", fields.len() + 1))? {
            let name = format!("field_{}", fields.len() + 1);
            fields.push(v.extract::<f32>().map_err(bad_value(&name, index))?);
        }
        records.push(FinanceRecord { code, market_raw, fields });
    }
    let report_date =
        date.ok_or_else(|| PyValueError::new_err("report_date: no row holds one; pass report_date=YYYYMMDD"))?;
    if Date::from_yyyymmdd(report_date).is_none() {
        return Err(PyValueError::new_err(format!("report_date: {report_date} is not a date (YYYYMMDD)")));
    }
    let file = FinanceFile { header: FinanceHeader { report_date, ..FinanceHeader::default() }, records };
    let zipped = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("zip"));
    let bytes =
        if zipped { write_finance_zip(&format!("gpcw{report_date}.dat"), &file) } else { write_finance_dat(&file) }
            .map_err(|e| file_error(&path, e))?;
    write_whole(&path, &bytes)?;
    Ok(file.records.len())
}
