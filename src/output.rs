//! Results as rows of typed cells, written as an aligned table, JSON or CSV.

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
    pub columns: Vec<&'static str>,
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    pub fn new(columns: &[&'static str]) -> Self {
        Self { columns: columns.to_vec(), rows: Vec::new() }
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
        let map: Map<String, Value> = self.columns.iter().zip(row).map(|(c, v)| ((*c).to_owned(), v.json())).collect();
        Value::Object(map)
    }

    fn write_table(&self, out: &mut impl Write, header: bool) -> io::Result<()> {
        let texts: Vec<Vec<String>> = self.rows.iter().map(|r| r.iter().map(Cell::text).collect()).collect();
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
            writeln!(out, "{}", line(self.columns.iter().map(|c| (*c).to_owned()).collect()))?;
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

pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
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
}
