//! Results as rows of typed cells, written as an aligned table, JSON or CSV.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{self, IsTerminal, Write};

use clap::ValueEnum;
use serde_json::{Map, Value};

/// How results are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned columns (the default on a terminal).
    Table,
    /// A JSON array of objects (the default otherwise); streams are one object per line.
    Json,
    /// Comma-separated values with a header line.
    Csv,
}

impl Format {
    /// The format asked for, or table on a terminal and JSON otherwise.
    pub fn resolve(asked: Option<Format>) -> Format {
        asked.unwrap_or(if io::stdout().is_terminal() { Format::Table } else { Format::Json })
    }
}

/// One value: kept typed so JSON gets numbers.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Text(String),
    Int(i64),
    /// A number printed with a fixed count of decimals.
    Fixed(f64, usize),
    /// A number printed in full (shortest round-trip form).
    Float(f64),
    Missing,
}

impl Cell {
    fn text(&self) -> String {
        match self {
            Cell::Text(s) => s.clone(),
            Cell::Int(n) => n.to_string(),
            Cell::Fixed(x, d) => format!("{x:.d$}"),
            Cell::Float(x) => x.to_string(),
            Cell::Missing => String::new(),
        }
    }

    fn json(&self) -> Value {
        match self {
            Cell::Text(s) => Value::String(s.clone()),
            Cell::Int(n) => Value::from(*n),
            Cell::Fixed(x, d) => {
                // Round to the shown decimals so JSON and the table agree.
                let scale = 10f64.powi(*d as i32);
                serde_json::Number::from_f64((x * scale).round() / scale).map_or(Value::Null, Value::Number)
            }
            Cell::Float(x) => serde_json::Number::from_f64(*x).map_or(Value::Null, Value::Number),
            Cell::Missing => Value::Null,
        }
    }

    fn is_numeric(&self) -> bool {
        matches!(self, Cell::Int(_) | Cell::Fixed(..) | Cell::Float(_))
    }
}

impl From<&str> for Cell {
    fn from(s: &str) -> Self {
        Cell::Text(s.to_owned())
    }
}

impl From<String> for Cell {
    fn from(s: String) -> Self {
        Cell::Text(s)
    }
}

impl From<i64> for Cell {
    fn from(n: i64) -> Self {
        Cell::Int(n)
    }
}

impl From<u64> for Cell {
    fn from(n: u64) -> Self {
        i64::try_from(n).map_or(Cell::Fixed(n as f64, 0), Cell::Int)
    }
}

impl From<usize> for Cell {
    fn from(n: usize) -> Self {
        Cell::from(n as u64)
    }
}

/// A result: named columns and rows of cells.
#[derive(Debug, Clone, Default)]
pub struct Table {
    pub columns: Vec<Cow<'static, str>>,
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    pub fn new(columns: &[&'static str]) -> Self {
        Self { columns: columns.iter().map(|c| Cow::Borrowed(*c)).collect(), rows: Vec::new() }
    }

    /// A table whose columns are known only at run time (the F10 gateway's).
    pub fn with_columns(columns: Vec<String>) -> Self {
        Self { columns: columns.into_iter().map(Cow::Owned).collect(), rows: Vec::new() }
    }

    pub fn push(&mut self, row: Vec<Cell>) {
        debug_assert_eq!(row.len(), self.columns.len());
        self.rows.push(row);
    }

    /// Writes the whole result.
    pub fn write(&self, format: Format, out: &mut impl Write) -> io::Result<()> {
        match format {
            Format::Table => self.write_table(out, true),
            Format::Csv => self.write_csv(out, true),
            Format::Json => {
                let rows: Vec<Value> = self.rows.iter().map(|r| self.object(r)).collect();
                serde_json::to_writer_pretty(&mut *out, &rows)?;
                writeln!(out)
            }
        }
    }

    /// Writes rows as they come in a stream: the header once (`first`),
    /// then the rows; JSON as one object per line.
    pub fn write_stream(&self, format: Format, first: bool, out: &mut impl Write) -> io::Result<()> {
        match format {
            Format::Table => self.write_table(out, first),
            Format::Csv => self.write_csv(out, first),
            Format::Json => {
                for row in &self.rows {
                    serde_json::to_writer(&mut *out, &self.object(row))?;
                    writeln!(out)?;
                }
                Ok(())
            }
        }
    }

    fn object(&self, row: &[Cell]) -> Value {
        let map: Map<String, Value> = self.columns.iter().zip(row).map(|(c, v)| (c.to_string(), v.json())).collect();
        Value::Object(map)
    }

    fn write_table(&self, out: &mut impl Write, header: bool) -> io::Result<()> {
        // Text a server chose is shown, never obeyed by the terminal.
        let texts: Vec<Vec<String>> =
            self.rows.iter().map(|r| r.iter().map(|c| escape_control(&c.text()).into_owned()).collect()).collect();
        let widths: Vec<usize> = (0..self.columns.len())
            .map(|i| texts.iter().map(|r| width(&r[i])).chain([self.columns[i].len()]).max().unwrap_or(0))
            .collect();
        // A column with numbers in it is right-aligned, header included.
        let right: Vec<bool> = (0..self.columns.len()).map(|i| self.rows.iter().any(|r| r[i].is_numeric())).collect();
        let line = |cells: Vec<String>| {
            let parts: Vec<String> = cells
                .into_iter()
                .enumerate()
                .map(|(i, text)| {
                    let pad = " ".repeat(widths[i].saturating_sub(width(&text)));
                    if right[i] {
                        format!("{pad}{text}")
                    } else {
                        format!("{text}{pad}")
                    }
                })
                .collect();
            parts.join("  ").trim_end().to_owned()
        };
        if header {
            writeln!(out, "{}", line(self.columns.iter().map(|c| c.to_string()).collect()))?;
        }
        for text in texts {
            writeln!(out, "{}", line(text))?;
        }
        Ok(())
    }

    fn write_csv(&self, out: &mut impl Write, header: bool) -> io::Result<()> {
        if header {
            writeln!(out, "{}", self.columns.join(","))?;
        }
        for row in &self.rows {
            let fields: Vec<String> = row.iter().map(|c| csv_field(&c.text())).collect();
            writeln!(out, "{}", fields.join(","))?;
        }
        Ok(())
    }
}

/// Display width: CJK names take two columns each.
fn width(s: &str) -> usize {
    s.chars().map(|c| if (c as u32) >= 0x1100 { 2 } else { 1 }).sum()
}

/// `s` with every control character (C0, DEL, C1: cursor moves, colours,
/// titles, bells, carriage returns) and every bidirectional-text control
/// written as an escape (`\u{1b}`, `\n`, `\r`, `\t`), so text a server
/// chose is shown on a terminal, never obeyed by it. Everything else,
/// CJK included, is kept.
pub fn escape_control(s: &str) -> Cow<'_, str> {
    let hostile = |c: char| {
        c.is_control()
            || matches!(c, '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if !s.chars().any(hostile) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if hostile(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

pub fn csv_field(s: &str) -> String {
    // RFC 4180: a field with a separator, a quote or a line break is quoted
    // whole; the bytes inside stay exact.
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Table {
        let mut t = Table::new(&["code", "name", "price"]);
        t.push(vec!["sz000001".into(), "平安银行".into(), Cell::Fixed(10.5, 2)]);
        t.push(vec!["sh600000".into(), "a,b".into(), Cell::Missing]);
        t
    }

    #[test]
    fn formats_agree() {
        let mut out = Vec::new();
        sample().write(Format::Csv, &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "code,name,price\nsz000001,平安银行,10.50\nsh600000,\"a,b\",\n");
        let mut out = Vec::new();
        sample().write(Format::Json, &mut out).unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v[0]["price"], 10.5);
        assert_eq!(v[1]["price"], Value::Null);
        let mut out = Vec::new();
        sample().write(Format::Table, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "code      name      price");
        assert_eq!(lines[1], "sz000001  平安银行  10.50");
        assert_eq!(lines[2], "sh600000  a,b");
    }

    /// A row of text a hostile server could send: an OSC title change with
    /// a bell, a colour, a cursor move, a carriage return that overwrites
    /// the line, a C1 CSI, a bidi override and a NUL.
    fn hostile() -> Table {
        let mut t = Table::new(&["name", "text"]);
        t.push(vec!["\u{1b}]0;pwned\u{7}平安\u{1b}[31m".into(), "ok\rEVIL\u{9b}2J\u{202e}cba\u{0}\nnext,\"q\"".into()]);
        t
    }

    #[test]
    fn tables_show_control_characters_as_escapes() {
        let mut out = Vec::new();
        hostile().write(Format::Table, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "{text:?}");
        assert_eq!(text.lines().count(), 2, "one header line and one row: {text:?}");
        assert!(text.contains("\\u{1b}]0;pwned\\u{7}平安\\u{1b}[31m"), "{text}");
        assert!(text.contains("ok\\rEVIL\\u{9b}2J\\u{202e}cba\\u{0}\\nnext"), "{text}");
        assert_eq!(escape_control("平安银行 sz000001"), "平安银行 sz000001");
    }

    #[test]
    fn json_and_csv_keep_hostile_text_exact_and_valid() {
        let want = &hostile().rows[0];
        let mut out = Vec::new();
        hostile().write(Format::Json, &mut out).unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v[0]["name"], want[0].text());
        assert_eq!(v[0]["text"], want[1].text());
        let mut out = Vec::new();
        hostile().write(Format::Csv, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            parse_csv(&text),
            vec![vec!["name".to_owned(), "text".to_owned()], vec![want[0].text(), want[1].text()]]
        );
    }

    /// An RFC 4180 reader: quoted fields may hold separators, quotes
    /// (doubled) and line breaks.
    fn parse_csv(text: &str) -> Vec<Vec<String>> {
        let (mut rows, mut row, mut field) = (Vec::new(), Vec::new(), String::new());
        let (mut quoted, mut chars) = (false, text.chars().peekable());
        while let Some(c) = chars.next() {
            match (quoted, c) {
                (true, '"') if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                (true, '"') => quoted = false,
                (true, c) => field.push(c),
                (false, '"') => quoted = true,
                (false, ',') => row.push(std::mem::take(&mut field)),
                (false, '\n') => {
                    row.push(std::mem::take(&mut field));
                    rows.push(std::mem::take(&mut row));
                }
                (false, c) => field.push(c),
            }
        }
        rows
    }
}
