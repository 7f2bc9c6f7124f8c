//! Every listed command's output as a **table**: named, typed columns of
//! equal length. Surfaces that do not speak Rust types (an HTTP gateway,
//! an MCP server, CSV or Arrow writers) present replies through this one
//! form, so a command's columns and their meaning are written once, here
//! (`replies.rs`), and a new command's output cannot reach those surfaces
//! without them: [`Listed::Output`](crate::Listed::Output) must be
//! [`Tabular`].
//!
//! Values keep their engine types (a [`Price`] stays exact milli-yuan, a
//! [`DateTime`] a date and time); [`Cell::to_json`] and [`Cell`]'s
//! `Display` are the one text form every surface shares.

mod ex;
mod mac;
mod replies;

use std::fmt;

use serde_json::Value;

use crate::proto::{Date, DateTime, Price, TimeOfDay};

/// A reply as a table.
pub trait Tabular {
    /// Its columns (present even when there are no rows).
    fn table(&self) -> Table;
}

/// One column's values; `None` is a null.
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    /// Whole numbers (counts, volumes, raw codes).
    Int(Vec<Option<i64>>),
    /// Floating-point numbers (the wire's floats, widened exactly).
    Float(Vec<Option<f64>>),
    /// Exact prices in milli-yuan; shown as yuan.
    Price(Vec<Option<Price>>),
    /// Text (codes, names, labels).
    Text(Vec<Option<String>>),
    /// Calendar days.
    Date(Vec<Option<Date>>),
    /// Exchange-local date and time (no zone; the exchange's is Asia/Shanghai).
    DateTime(Vec<Option<DateTime>>),
    /// Exchange-local times of day.
    Time(Vec<Option<TimeOfDay>>),
    /// Raw bytes; shown as lowercase hex.
    Bytes(Vec<Option<Vec<u8>>>),
}

/// A column's type, without its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum ColumnType {
    /// [`Values::Int`].
    Int,
    /// [`Values::Float`].
    Float,
    /// [`Values::Price`].
    Price,
    /// [`Values::Text`].
    Text,
    /// [`Values::Date`].
    Date,
    /// [`Values::DateTime`].
    DateTime,
    /// [`Values::Time`].
    Time,
    /// [`Values::Bytes`].
    Bytes,
}

macro_rules! each_values {
    ($values:expr, $v:ident => $body:expr) => {
        match $values {
            Values::Int($v) => $body,
            Values::Float($v) => $body,
            Values::Price($v) => $body,
            Values::Text($v) => $body,
            Values::Date($v) => $body,
            Values::DateTime($v) => $body,
            Values::Time($v) => $body,
            Values::Bytes($v) => $body,
        }
    };
}

impl Values {
    /// Number of values.
    pub fn len(&self) -> usize {
        each_values!(self, v => v.len())
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The type of these values.
    pub fn column_type(&self) -> ColumnType {
        match self {
            Values::Int(_) => ColumnType::Int,
            Values::Float(_) => ColumnType::Float,
            Values::Price(_) => ColumnType::Price,
            Values::Text(_) => ColumnType::Text,
            Values::Date(_) => ColumnType::Date,
            Values::DateTime(_) => ColumnType::DateTime,
            Values::Time(_) => ColumnType::Time,
            Values::Bytes(_) => ColumnType::Bytes,
        }
    }

    /// Value `i` (`Cell::Null` past the end).
    pub fn cell(&self, i: usize) -> Cell<'_> {
        match self {
            Values::Int(v) => v.get(i).copied().flatten().map_or(Cell::Null, Cell::Int),
            Values::Float(v) => v.get(i).copied().flatten().map_or(Cell::Null, Cell::Float),
            Values::Price(v) => v.get(i).copied().flatten().map_or(Cell::Null, Cell::Price),
            Values::Text(v) => v.get(i).and_then(Option::as_deref).map_or(Cell::Null, Cell::Text),
            Values::Date(v) => v.get(i).copied().flatten().map_or(Cell::Null, Cell::Date),
            Values::DateTime(v) => v.get(i).copied().flatten().map_or(Cell::Null, Cell::DateTime),
            Values::Time(v) => v.get(i).copied().flatten().map_or(Cell::Null, Cell::Time),
            Values::Bytes(v) => v.get(i).and_then(Option::as_deref).map_or(Cell::Null, Cell::Bytes),
        }
    }

    fn append(&mut self, other: Values) -> Result<(), Values> {
        match (self, other) {
            (Values::Int(a), Values::Int(b)) => a.extend(b),
            (Values::Float(a), Values::Float(b)) => a.extend(b),
            (Values::Price(a), Values::Price(b)) => a.extend(b),
            (Values::Text(a), Values::Text(b)) => a.extend(b),
            (Values::Date(a), Values::Date(b)) => a.extend(b),
            (Values::DateTime(a), Values::DateTime(b)) => a.extend(b),
            (Values::Time(a), Values::Time(b)) => a.extend(b),
            (Values::Bytes(a), Values::Bytes(b)) => a.extend(b),
            (_, other) => return Err(other),
        }
        Ok(())
    }

    fn truncate(&mut self, n: usize) {
        each_values!(self, v => v.truncate(n))
    }
}

/// One named column.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// Its name (the engine's field name, snake_case).
    pub name: String,
    /// Its values, one per row.
    pub values: Values,
}

/// Named, typed columns of equal length.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Table {
    /// The columns, in order.
    pub columns: Vec<Column>,
}

/// Two tables whose columns differ cannot be joined.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the tables' columns differ: {ours} and {theirs}")]
pub struct SchemaMismatch {
    ours: String,
    theirs: String,
}

impl Table {
    /// Columns built from `rows`, one closure per column.
    pub fn of<T>(rows: &[T]) -> Builder<'_, T> {
        Builder { rows, columns: Vec::new() }
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |c| c.values.len())
    }

    /// The column names and types, in order.
    pub fn schema(&self) -> Vec<(&str, ColumnType)> {
        self.columns.iter().map(|c| (c.name.as_str(), c.values.column_type())).collect()
    }

    /// Appends `other`'s rows (its columns must be the same, in the same order).
    pub fn append(&mut self, other: Table) -> Result<(), SchemaMismatch> {
        if self.columns.is_empty() {
            *self = other;
            return Ok(());
        }
        let show = |t: &Table| format!("{:?}", t.schema());
        if self.schema() != other.schema() {
            return Err(SchemaMismatch { ours: show(self), theirs: show(&other) });
        }
        for (ours, theirs) in self.columns.iter_mut().zip(other.columns) {
            // Same schema, so the same variant: `append` cannot refuse.
            if let Err(values) = ours.values.append(theirs.values) {
                let theirs = format!("{}: {:?}", ours.name, values.column_type());
                return Err(SchemaMismatch { ours: format!("{}: {:?}", ours.name, ours.values.column_type()), theirs });
            }
        }
        Ok(())
    }

    /// Keeps the first `n` rows.
    pub fn truncate(&mut self, n: usize) {
        for c in &mut self.columns {
            c.values.truncate(n);
        }
    }

    /// Removes the first `n` rows.
    pub fn drop_first(&mut self, n: usize) {
        for c in &mut self.columns {
            each_values!(&mut c.values, v => drop(v.drain(..n.min(v.len()))));
        }
    }

    /// Row `i` as a JSON object, columns in order.
    pub fn row_json(&self, i: usize) -> serde_json::Map<String, Value> {
        self.columns.iter().map(|c| (c.name.clone(), c.values.cell(i).to_json())).collect()
    }

    /// Every row as a JSON object.
    pub fn rows_json(&self) -> Vec<Value> {
        (0..self.rows()).map(|i| Value::Object(self.row_json(i))).collect()
    }
}

/// One value of a table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cell<'a> {
    /// No value.
    Null,
    /// A whole number.
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// An exact price.
    Price(Price),
    /// Text.
    Text(&'a str),
    /// A day.
    Date(Date),
    /// A date and time.
    DateTime(DateTime),
    /// A time of day.
    Time(TimeOfDay),
    /// Bytes.
    Bytes(&'a [u8]),
}

impl Cell<'_> {
    /// The JSON form: numbers for numbers (a price in yuan: its milli-yuan
    /// divided by 1000, which reads back to the same milli-yuan), and the
    /// `Display` text for the rest; non-finite floats are `null`.
    pub fn to_json(&self) -> Value {
        match *self {
            Cell::Null => Value::Null,
            Cell::Int(n) => Value::from(n),
            Cell::Float(x) => serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number),
            Cell::Price(p) => serde_json::Number::from_f64(p.yuan()).map_or(Value::Null, Value::Number),
            Cell::Text(s) => Value::String(s.to_owned()),
            _ => Value::String(self.to_string()),
        }
    }
}

/// The text form (CSV, tables): empty for null, prices in yuan (`12.340`
/// style is the caller's; this is the shortest form that reads back),
/// dates `YYYY-MM-DD`, date-times `YYYY-MM-DDTHH:MM:SS`, times `HH:MM`
/// (seconds when not zero), bytes as lowercase hex.
impl fmt::Display for Cell<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Cell::Null => Ok(()),
            Cell::Int(n) => write!(f, "{n}"),
            Cell::Float(x) => write!(f, "{x}"),
            Cell::Price(p) => write!(f, "{}", p.yuan()),
            Cell::Text(s) => f.write_str(s),
            Cell::Date(d) => write!(f, "{d}"),
            Cell::DateTime(t) => write!(f, "{t}"),
            Cell::Time(t) => write!(f, "{t}"),
            Cell::Bytes(b) => b.iter().try_for_each(|x| write!(f, "{x:02x}")),
        }
    }
}

/// Builds a [`Table`] from a slice of rows, one closure per column.
#[derive(Debug)]
pub struct Builder<'a, T> {
    rows: &'a [T],
    columns: Vec<Column>,
}

impl<'a, T> Builder<'a, T> {
    fn push(mut self, name: impl Into<String>, values: Values) -> Self {
        self.columns.push(Column { name: name.into(), values });
        self
    }

    /// A whole-number column.
    pub fn int<V: Into<Option<i64>>>(self, name: impl Into<String>, f: impl Fn(&T) -> V) -> Self {
        let values = self.rows.iter().map(|r| f(r).into()).collect();
        self.push(name, Values::Int(values))
    }

    /// A floating-point column.
    pub fn float<V: Into<Option<f64>>>(self, name: impl Into<String>, f: impl Fn(&T) -> V) -> Self {
        let values = self.rows.iter().map(|r| f(r).into()).collect();
        self.push(name, Values::Float(values))
    }

    /// A price column.
    pub fn price<V: Into<Option<Price>>>(self, name: impl Into<String>, f: impl Fn(&T) -> V) -> Self {
        let values = self.rows.iter().map(|r| f(r).into()).collect();
        self.push(name, Values::Price(values))
    }

    /// A text column.
    pub fn text<V: Into<Option<String>>>(self, name: impl Into<String>, f: impl Fn(&T) -> V) -> Self {
        let values = self.rows.iter().map(|r| f(r).into()).collect();
        self.push(name, Values::Text(values))
    }

    /// A date column.
    pub fn date<V: Into<Option<Date>>>(self, name: impl Into<String>, f: impl Fn(&T) -> V) -> Self {
        let values = self.rows.iter().map(|r| f(r).into()).collect();
        self.push(name, Values::Date(values))
    }

    /// A date-and-time column.
    pub fn datetime<V: Into<Option<DateTime>>>(self, name: impl Into<String>, f: impl Fn(&T) -> V) -> Self {
        let values = self.rows.iter().map(|r| f(r).into()).collect();
        self.push(name, Values::DateTime(values))
    }

    /// A time-of-day column.
    pub fn time<V: Into<Option<TimeOfDay>>>(self, name: impl Into<String>, f: impl Fn(&T) -> V) -> Self {
        let values = self.rows.iter().map(|r| f(r).into()).collect();
        self.push(name, Values::Time(values))
    }

    /// A time-of-day column from each row's index (minute lines: point `i`
    /// is minute `i` of the session).
    pub fn time_by_index(self, name: impl Into<String>, f: impl Fn(usize) -> Option<TimeOfDay>) -> Self {
        let values = (0..self.rows.len()).map(f).collect();
        self.push(name, Values::Time(values))
    }

    /// A bytes column.
    pub fn bytes<V: Into<Option<Vec<u8>>>>(self, name: impl Into<String>, f: impl Fn(&T) -> V) -> Self {
        let values = self.rows.iter().map(|r| f(r).into()).collect();
        self.push(name, Values::Bytes(values))
    }

    /// The table.
    pub fn build(self) -> Table {
        Table { columns: self.columns }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Row {
        n: i64,
        p: Price,
    }

    #[test]
    fn columns_join_and_show_one_way() {
        let rows = [Row { n: 1, p: Price(12_340) }, Row { n: 2, p: Price(-5) }];
        let build = |rows: &[Row]| Table::of(rows).int("n", |r| r.n).price("p", |r| r.p).build();
        let mut t = build(&rows);
        t.append(build(&rows[..1])).unwrap();
        assert_eq!(t.rows(), 3);
        assert_eq!(t.rows_json()[1], serde_json::json!({"n": 2, "p": -0.005}));
        assert_eq!(t.columns[1].values.cell(0).to_string(), "12.34");
        let other = Table::of(&rows).int("n", |r| r.n).build();
        assert!(t.append(other).is_err(), "columns must match");
        t.drop_first(1);
        assert_eq!(t.rows_json()[0], serde_json::json!({"n": 2, "p": -0.005}));
        t.truncate(1);
        assert_eq!(t.rows(), 1);
        let empty = build(&[]);
        assert_eq!(empty.rows(), 0);
        assert_eq!(empty.schema(), vec![("n", ColumnType::Int), ("p", ColumnType::Price)]);
        assert_eq!(Cell::Bytes(&[0x0a, 0xff]).to_json(), "0aff");
    }
}
