//! Columnar results: a `Table` of named, typed columns that iterates as
//! records (dicts) and exports itself through the Arrow C data interface
//! (`__arrow_c_schema__`, `__arrow_c_array__`, `__arrow_c_stream__`), so
//! pyarrow, polars and pandas read it without copying row by row.

use std::ffi::CString;
use std::sync::{Arc, OnceLock};

use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{
    Array, ArrayRef, Date32Array, Decimal128Array, Float64Array, Int64Array, RecordBatch, RecordBatchIterator,
    StringArray, StructArray, Time32SecondArray, TimestampMillisecondArray,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use pyo3::exceptions::{PyIndexError, PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyList};
use pyo3::IntoPyObjectExt;
use tdx_engine::proto::{Date, DateTime, Price, TimeOfDay};

/// Exact prices carry three decimals (milli-yuan, the engine's `Price`).
const PRICE_SCALE: i8 = 3;
const PRICE_PRECISION: u8 = 18;

/// One column's values; `None` is a null.
#[derive(Debug, Clone)]
pub enum Col {
    Int(Vec<Option<i64>>),
    Float(Vec<Option<f64>>),
    Text(Vec<Option<String>>),
    /// Milli-units, exported as `decimal128(18, 3)`.
    Decimal(Vec<Option<i64>>),
    /// Days since 1970-01-01.
    Date(Vec<Option<i32>>),
    /// Milliseconds since 1970-01-01T00:00 (exchange local time, no zone).
    Timestamp(Vec<Option<i64>>),
    /// Seconds since midnight.
    Time(Vec<Option<i32>>),
}

impl Col {
    /// `other`'s values after this column's; `false` (and nothing moved)
    /// when the two hold different types.
    fn append(&mut self, other: &Col) -> bool {
        match (self, other) {
            (Col::Int(a), Col::Int(b))
            | (Col::Decimal(a), Col::Decimal(b))
            | (Col::Timestamp(a), Col::Timestamp(b)) => a.extend_from_slice(b),
            (Col::Float(a), Col::Float(b)) => a.extend_from_slice(b),
            (Col::Text(a), Col::Text(b)) => a.extend_from_slice(b),
            (Col::Date(a), Col::Date(b)) | (Col::Time(a), Col::Time(b)) => a.extend_from_slice(b),
            _ => return false,
        }
        true
    }

    fn len(&self) -> usize {
        match self {
            Col::Int(v) | Col::Decimal(v) | Col::Timestamp(v) => v.len(),
            Col::Float(v) => v.len(),
            Col::Text(v) => v.len(),
            Col::Date(v) | Col::Time(v) => v.len(),
        }
    }

    fn data_type(&self) -> DataType {
        match self {
            Col::Int(_) => DataType::Int64,
            Col::Float(_) => DataType::Float64,
            Col::Text(_) => DataType::Utf8,
            Col::Decimal(_) => DataType::Decimal128(PRICE_PRECISION, PRICE_SCALE),
            Col::Date(_) => DataType::Date32,
            Col::Timestamp(_) => DataType::Timestamp(TimeUnit::Millisecond, None),
            Col::Time(_) => DataType::Time32(TimeUnit::Second),
        }
    }

    fn array(&self) -> Result<ArrayRef, arrow_schema::ArrowError> {
        Ok(match self {
            Col::Int(v) => Arc::new(Int64Array::from(v.clone())),
            Col::Float(v) => Arc::new(Float64Array::from(v.clone())),
            Col::Text(v) => Arc::new(StringArray::from(v.clone())),
            Col::Decimal(v) => Arc::new(
                Decimal128Array::from(v.iter().map(|x| x.map(i128::from)).collect::<Vec<_>>())
                    .with_precision_and_scale(PRICE_PRECISION, PRICE_SCALE)?,
            ),
            Col::Date(v) => Arc::new(Date32Array::from(v.clone())),
            Col::Timestamp(v) => Arc::new(TimestampMillisecondArray::from(v.clone())),
            Col::Time(v) => Arc::new(Time32SecondArray::from(v.clone())),
        })
    }

    /// Row `i` as text for a notebook's HTML view (empty for a null).
    fn text(&self, i: usize) -> String {
        fn day(days: i64) -> String {
            Date::from_days_since_epoch(days).map_or_else(|| format!("day {days}"), |d| d.to_string())
        }
        let clock = |s: i64| format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
        match self {
            Col::Int(v) => v[i].map(|x| x.to_string()),
            Col::Float(v) => v[i].map(|x| x.to_string()),
            Col::Text(v) => v[i].clone(),
            Col::Decimal(v) => v[i].map(|x| Price(x).to_string()),
            Col::Date(v) => v[i].map(|x| day(i64::from(x))),
            Col::Timestamp(v) => v[i].map(|ms| {
                let (days, rest) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
                let millis = if rest % 1000 == 0 { String::new() } else { format!(".{:03}", rest % 1000) };
                format!("{} {}{millis}", day(days), clock(rest / 1000))
            }),
            Col::Time(v) => v[i].map(|x| clock(i64::from(x))),
        }
        .unwrap_or_default()
    }

    /// Row `i` as a Python value.
    fn value(&self, py: Python<'_>, m: &Modules<'_>, i: usize) -> PyResult<Py<PyAny>> {
        fn obj<'py, T: IntoPyObject<'py>>(py: Python<'py>, v: T) -> PyResult<Py<PyAny>> {
            v.into_py_any(py)
        }
        match self {
            Col::Int(v) => obj(py, v[i]),
            Col::Float(v) => obj(py, v[i]),
            Col::Text(v) => obj(py, v[i].as_deref()),
            Col::Decimal(v) => match v[i] {
                None => Ok(py.None()),
                Some(milli) => Ok(m.decimal.call1((Price(milli).to_string(),))?.unbind()),
            },
            Col::Date(v) => match v[i] {
                None => Ok(py.None()),
                Some(days) => {
                    let (y, mo, d) = civil_from_days(i64::from(days))?;
                    Ok(m.date.call1((y, mo, d))?.unbind())
                }
            },
            Col::Timestamp(v) => match v[i] {
                None => Ok(py.None()),
                Some(ms) => {
                    let days = ms.div_euclid(86_400_000);
                    let rest = ms.rem_euclid(86_400_000);
                    let (y, mo, d) = civil_from_days(days)?;
                    let (h, mi, s, micro) =
                        (rest / 3_600_000, rest / 60_000 % 60, rest / 1000 % 60, rest % 1000 * 1000);
                    Ok(m.datetime.call1((y, mo, d, h, mi, s, micro))?.unbind())
                }
            },
            Col::Time(v) => match v[i] {
                None => Ok(py.None()),
                Some(s) => Ok(m.time.call1((s / 3600, s / 60 % 60, s % 60))?.unbind()),
            },
        }
    }
}

/// The Python constructors record conversion needs, looked up once per call.
struct Modules<'py> {
    decimal: Bound<'py, PyAny>,
    date: Bound<'py, PyAny>,
    datetime: Bound<'py, PyAny>,
    time: Bound<'py, PyAny>,
}

impl<'py> Modules<'py> {
    fn new(py: Python<'py>) -> PyResult<Self> {
        let dt = py.import("datetime")?;
        Ok(Self {
            decimal: py.import("decimal")?.getattr("Decimal")?,
            date: dt.getattr("date")?,
            datetime: dt.getattr("datetime")?,
            time: dt.getattr("time")?,
        })
    }
}

/// A day count since 1970-01-01 as (year, month, day), by the engine's calendar.
fn civil_from_days(days: i64) -> PyResult<(u16, u8, u8)> {
    Date::from_days_since_epoch(days)
        .map(|d| (d.year(), d.month(), d.day()))
        .ok_or_else(|| pyo3::exceptions::PyValueError::new_err(format!("day {days} since 1970 is out of range")))
}

fn date_days(d: Date) -> i32 {
    d.days_since_epoch() as i32
}

fn time_secs(t: TimeOfDay) -> i32 {
    i32::from(t.hour()) * 3600 + i32::from(t.minute()) * 60 + i32::from(t.second())
}

/// Builds a [`Table`] column by column; every column must have one value per row.
#[derive(Debug, Default)]
pub struct Builder {
    cols: Vec<(String, Col)>,
}

impl Builder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn col(mut self, name: impl Into<String>, col: Col) -> Self {
        self.cols.push((name.into(), col));
        self
    }

    pub fn int<I: Into<i64>>(self, name: &str, values: impl IntoIterator<Item = I>) -> Self {
        self.col(name, Col::Int(values.into_iter().map(|v| Some(v.into())).collect()))
    }

    pub fn float<F: Into<f64>>(self, name: &str, values: impl IntoIterator<Item = F>) -> Self {
        self.col(name, Col::Float(values.into_iter().map(|v| Some(v.into())).collect()))
    }

    pub fn text<S: Into<String>>(self, name: &str, values: impl IntoIterator<Item = S>) -> Self {
        self.col(name, Col::Text(values.into_iter().map(|v| Some(v.into())).collect()))
    }

    /// A price as two columns: `name` (float yuan) and `name_decimal`
    /// (the engine's exact milli-yuan as `decimal128(18, 3)`).
    pub fn price(self, name: &str, values: impl IntoIterator<Item = Price> + Clone) -> Self {
        self.float(name, values.clone().into_iter().map(Price::yuan))
            .col(format!("{name}_decimal"), Col::Decimal(values.into_iter().map(|p| Some(p.milli())).collect()))
    }

    pub fn date(self, name: &str, values: impl IntoIterator<Item = Option<Date>>) -> Self {
        self.col(name, Col::Date(values.into_iter().map(|d| d.map(date_days)).collect()))
    }

    pub fn datetime(self, name: &str, values: impl IntoIterator<Item = DateTime>) -> Self {
        self.col(
            name,
            Col::Timestamp(
                values
                    .into_iter()
                    .map(|t| {
                        Some(
                            i64::from(date_days(t.date)) * 86_400_000
                                + i64::from(time_secs(t.time)) * 1000
                                + i64::from(t.time.millis()),
                        )
                    })
                    .collect(),
            ),
        )
    }

    /// Date-times with nulls.
    pub fn optional_datetime(self, name: &str, values: impl IntoIterator<Item = Option<DateTime>>) -> Self {
        let millis = |t: DateTime| {
            i64::from(date_days(t.date)) * 86_400_000 + i64::from(time_secs(t.time)) * 1000 + i64::from(t.time.millis())
        };
        self.col(name, Col::Timestamp(values.into_iter().map(|t| t.map(millis)).collect()))
    }

    pub fn time(self, name: &str, values: impl IntoIterator<Item = Option<TimeOfDay>>) -> Self {
        self.col(name, Col::Time(values.into_iter().map(|t| t.map(time_secs)).collect()))
    }

    pub fn build(self) -> Table {
        let rows = self.cols.first().map_or(0, |(_, c)| c.len());
        debug_assert!(self.cols.iter().all(|(_, c)| c.len() == rows), "ragged table");
        Table { cols: Arc::new(self.cols), rows, batch: OnceLock::new() }
    }
}

/// A columnar result: iterates as records (dicts), indexes by row, and
/// converts with `to_arrow()`, `to_pandas()` and `to_polars()` (through the
/// Arrow PyCapsule interface; none of those packages is required).
#[pyclass(frozen, module = "tdx_engine._native")]
pub struct Table {
    cols: Arc<Vec<(String, Col)>>,
    rows: usize,
    batch: OnceLock<RecordBatch>,
}

impl Table {
    /// The rows of every part, in order, under a first column `code`
    /// naming each row's part. Every part comes from the same converter,
    /// so they share their columns; a part that does not is left out of
    /// the columns it lacks (a bug, caught by the debug assertion).
    pub fn with_codes(parts: Vec<(String, Table)>) -> Table {
        let rows: usize = parts.iter().map(|(_, t)| t.rows).sum();
        let mut codes = Vec::with_capacity(rows);
        let mut cols: Vec<(String, Col)> = Vec::new();
        for (i, (code, table)) in parts.iter().enumerate() {
            codes.extend(std::iter::repeat_n(Some(code.clone()), table.rows));
            if i == 0 {
                cols = table.cols.as_ref().clone();
                continue;
            }
            for ((name, col), (other_name, other)) in cols.iter_mut().zip(table.cols.iter()) {
                let same = name == other_name && col.append(other);
                debug_assert!(same, "parts of one code list share their columns");
            }
        }
        let mut out = vec![("code".to_owned(), Col::Text(codes))];
        out.extend(cols);
        debug_assert!(out.iter().all(|(_, c)| c.len() == rows), "ragged table");
        Table { cols: Arc::new(out), rows, batch: OnceLock::new() }
    }
}

fn arrow_err(e: arrow_schema::ArrowError) -> PyErr {
    PyValueError::new_err(format!("arrow: {e}"))
}

impl Table {
    fn schema(&self) -> SchemaRef {
        Arc::new(Schema::new(
            self.cols.iter().map(|(n, c)| Field::new(n.as_str(), c.data_type(), true)).collect::<Vec<_>>(),
        ))
    }

    fn batch(&self) -> PyResult<&RecordBatch> {
        if let Some(b) = self.batch.get() {
            return Ok(b);
        }
        let arrays = self.cols.iter().map(|(_, c)| c.array()).collect::<Result<Vec<_>, _>>().map_err(arrow_err)?;
        let batch = RecordBatch::try_new(self.schema(), arrays).map_err(arrow_err)?;
        Ok(self.batch.get_or_init(|| batch))
    }

    fn record<'py>(&self, py: Python<'py>, m: &Modules<'py>, i: usize) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (name, col) in self.cols.iter() {
            d.set_item(name, col.value(py, m, i)?)?;
        }
        Ok(d)
    }

    fn records<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let m = Modules::new(py)?;
        let out = PyList::empty(py);
        for i in 0..self.rows {
            out.append(self.record(py, &m, i)?)?;
        }
        Ok(out)
    }
}

/// Rows a notebook shows of a Table (the shape line gives the rest).
const HTML_ROWS_MAX: usize = 10;

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn capsule_name(name: &str) -> CString {
    CString::new(name).expect("capsule names have no NUL")
}

#[pymethods]
impl Table {
    fn __len__(&self) -> usize {
        self.rows
    }

    fn __repr__(&self) -> String {
        let names: Vec<&str> = self.cols.iter().map(|(n, _)| n.as_str()).collect();
        format!("Table({} rows; {})", self.rows, names.join(", "))
    }

    /// Jupyter's view: the first rows as an HTML table, then the shape.
    fn _repr_html_(&self) -> String {
        let shown = self.rows.min(HTML_ROWS_MAX);
        let mut out = String::from("<table class=\"tdx-table\"><thead><tr>");
        for (name, _) in self.cols.iter() {
            out += &format!("<th>{}</th>", html_escape(name));
        }
        out += "</tr></thead><tbody>";
        for i in 0..shown {
            out += "<tr>";
            for (_, col) in self.cols.iter() {
                out += &format!("<td>{}</td>", html_escape(&col.text(i)));
            }
            out += "</tr>";
        }
        if shown < self.rows {
            out += &format!("<tr><td colspan=\"{}\">…</td></tr>", self.cols.len().max(1));
        }
        out + &format!("</tbody></table><p>{} rows × {} columns</p>", self.rows, self.cols.len())
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.records(py)?.try_iter().map(Bound::into_any)
    }

    fn __getitem__<'py>(&self, py: Python<'py>, index: isize) -> PyResult<Bound<'py, PyDict>> {
        let i = if index < 0 { index + self.rows as isize } else { index };
        if i < 0 || i as usize >= self.rows {
            return Err(PyIndexError::new_err("table index out of range"));
        }
        self.record(py, &Modules::new(py)?, i as usize)
    }

    /// The column names, in order.
    #[getter]
    fn columns(&self) -> Vec<String> {
        self.cols.iter().map(|(n, _)| n.clone()).collect()
    }

    /// Number of rows.
    #[getter]
    fn num_rows(&self) -> usize {
        self.rows
    }

    /// One column's values as a list.
    fn column<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyList>> {
        let (_, col) = self
            .cols
            .iter()
            .find(|(n, _)| n == name)
            .ok_or_else(|| PyKeyError::new_err(format!("no column {name:?}")))?;
        let m = Modules::new(py)?;
        let out = PyList::empty(py);
        for i in 0..self.rows {
            out.append(col.value(py, &m, i)?)?;
        }
        Ok(out)
    }

    /// Every row as a dict, in order.
    fn to_pylist<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.records(py)
    }

    /// A `pyarrow.Table` (needs pyarrow).
    fn to_arrow<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        slf.py().import("pyarrow")?.call_method1("table", (slf,))
    }

    /// A `pandas.DataFrame` (needs pandas and pyarrow).
    fn to_pandas<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        Self::to_arrow(slf)?.call_method0("to_pandas")
    }

    /// A `polars.DataFrame` (needs polars).
    fn to_polars<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        slf.py().import("polars")?.call_method1("DataFrame", (slf,))
    }

    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        let schema = FFI_ArrowSchema::try_from(self.schema().as_ref()).map_err(arrow_err)?;
        PyCapsule::new(py, schema, Some(capsule_name("arrow_schema")))
    }

    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)> {
        // The schema is fixed; a consumer that asked for another casts itself.
        let _ = requested_schema;
        let data = StructArray::from(self.batch()?.clone()).into_data();
        let schema = FFI_ArrowSchema::try_from(data.data_type()).map_err(arrow_err)?;
        let array = FFI_ArrowArray::new(&data);
        Ok((
            PyCapsule::new(py, schema, Some(capsule_name("arrow_schema")))?,
            PyCapsule::new(py, array, Some(capsule_name("arrow_array")))?,
        ))
    }

    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let batch = self.batch()?.clone();
        let reader = RecordBatchIterator::new([Ok(batch)], self.schema());
        let stream = FFI_ArrowArrayStream::new(Box::new(reader));
        PyCapsule::new(py, stream, Some(capsule_name("arrow_array_stream")))
    }
}
