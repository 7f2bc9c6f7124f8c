//! A command's tables written as JSON, CSV, an Arrow IPC stream or
//! Parquet, page by page: each page is encoded and sent as it comes, so a
//! long result never sits whole in memory as text (a Parquet row group
//! or an Arrow record batch per page).

use std::sync::Arc;

use arrow_array::{
    ArrayRef, BinaryArray, Date32Array, Float64Array, Int64Array, RecordBatch, StringArray, Time32MillisecondArray,
    TimestampMillisecondArray,
};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef, TimeUnit};
use bytes::Bytes;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use tdx_engine::table::{ColumnType, Table, Values};

use crate::sync::store::{date32, epoch_millis, timestamp_type};

/// The result formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Csv,
    Arrow,
    Parquet,
}

impl Format {
    pub const ALL: [Format; 4] = [Format::Json, Format::Csv, Format::Arrow, Format::Parquet];

    /// The `?format=` name.
    pub fn name(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Csv => "csv",
            Format::Arrow => "arrow",
            Format::Parquet => "parquet",
        }
    }

    /// The `Content-Type` it is sent with.
    pub fn media_type(self) -> &'static str {
        match self {
            Format::Json => "application/json",
            Format::Csv => "text/csv; charset=utf-8",
            Format::Arrow => "application/vnd.apache.arrow.stream",
            Format::Parquet => "application/vnd.apache.parquet",
        }
    }

    /// The format of a `?format=` name.
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name.trim().to_ascii_lowercase())
    }

    /// The format of one `Accept` media type (parameters ignored); `*/*`
    /// and `application/*` are JSON.
    fn from_media_type(media: &str) -> Option<Format> {
        let base = media.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        match base.as_str() {
            "application/json" | "*/*" | "application/*" => Some(Format::Json),
            "text/csv" | "text/*" => Some(Format::Csv),
            "application/vnd.apache.arrow.stream" => Some(Format::Arrow),
            "application/vnd.apache.parquet" | "application/x-parquet" | "application/parquet" => Some(Format::Parquet),
            _ => None,
        }
    }

    /// The format an `Accept` header asks for: the first listed, by
    /// descending `q`, that is one of ours; `None` when none is (and the
    /// header lists something). No header: JSON.
    pub fn from_accept(accept: Option<&str>) -> Option<Format> {
        let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else { return Some(Format::Json) };
        let mut ranges: Vec<(f32, usize, &str)> = accept
            .split(',')
            .enumerate()
            .map(|(i, range)| {
                let q = range
                    .split(';')
                    .skip(1)
                    .filter_map(|p| p.trim().strip_prefix("q="))
                    .find_map(|q| q.trim().parse::<f32>().ok())
                    .unwrap_or(1.0);
                (q, i, range)
            })
            .filter(|(q, _, _)| *q > 0.0)
            .collect();
        ranges.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        ranges.into_iter().find_map(|(_, _, range)| Format::from_media_type(range))
    }
}

/// Encoding failed (an Arrow or Parquet writer error).
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    #[error("arrow: {0}")]
    Arrow(#[from] ArrowError),
    #[error("parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
}

/// Writes one result's pages; the first page fixes the columns.
pub trait Encoder: Send {
    /// The bytes of one more page.
    fn page(&mut self, table: &Table) -> Result<Bytes, EncodeError>;
    /// The closing bytes.
    fn finish(self: Box<Self>) -> Result<Bytes, EncodeError>;
}

/// A new encoder for `format`.
pub fn encoder(format: Format) -> Box<dyn Encoder> {
    match format {
        Format::Json => Box::new(JsonRows { opened: false, rows: 0 }),
        Format::Csv => Box::new(CsvRows { header: false }),
        Format::Arrow => Box::new(ArrowStream { writer: None }),
        Format::Parquet => Box::new(ParquetFile { writer: None }),
    }
}

/// A JSON array of objects, one per row, keys in column order.
struct JsonRows {
    opened: bool,
    rows: usize,
}

impl Encoder for JsonRows {
    fn page(&mut self, table: &Table) -> Result<Bytes, EncodeError> {
        let mut out = Vec::with_capacity(64 + table.rows() * 32 * table.columns.len());
        if !self.opened {
            out.push(b'[');
            self.opened = true;
        }
        for i in 0..table.rows() {
            if self.rows > 0 {
                out.push(b',');
            }
            out.push(b'\n');
            serde_json::to_writer(&mut out, &table.row_json(i))?;
            self.rows += 1;
        }
        Ok(out.into())
    }

    fn finish(self: Box<Self>) -> Result<Bytes, EncodeError> {
        Ok(Bytes::from_static(match (self.opened, self.rows) {
            (false, _) => b"[]\n",
            (true, 0) => b"]\n",
            (true, _) => b"\n]\n",
        }))
    }
}

/// A header line, then one line per row (RFC 4180 quoting).
struct CsvRows {
    header: bool,
}

impl Encoder for CsvRows {
    fn page(&mut self, table: &Table) -> Result<Bytes, EncodeError> {
        let mut out = String::new();
        if !self.header {
            let names: Vec<String> = table.columns.iter().map(|c| crate::output::csv_field(&c.name)).collect();
            out.push_str(&names.join(","));
            out.push('\n');
            self.header = true;
        }
        for i in 0..table.rows() {
            let fields: Vec<String> =
                table.columns.iter().map(|c| crate::output::csv_field(&c.values.cell(i).to_string())).collect();
            out.push_str(&fields.join(","));
            out.push('\n');
        }
        Ok(out.into())
    }

    fn finish(self: Box<Self>) -> Result<Bytes, EncodeError> {
        Ok(Bytes::new())
    }
}

/// The Arrow type of a column: prices as float64 yuan (as in JSON),
/// date-times as instants in the exchange's zone (as `tdx sync` stores
/// them), times of day to the millisecond.
fn data_type(t: ColumnType) -> DataType {
    match t {
        ColumnType::Int => DataType::Int64,
        ColumnType::Float | ColumnType::Price => DataType::Float64,
        ColumnType::Text => DataType::Utf8,
        ColumnType::Date => DataType::Date32,
        ColumnType::DateTime => timestamp_type(),
        ColumnType::Time => DataType::Time32(TimeUnit::Millisecond),
        ColumnType::Bytes => DataType::Binary,
    }
}

/// The Arrow schema of a table's columns (every column nullable).
pub fn schema(table: &Table) -> SchemaRef {
    Arc::new(Schema::new(
        table.columns.iter().map(|c| Field::new(&c.name, data_type(c.values.column_type()), true)).collect::<Vec<_>>(),
    ))
}

/// One Arrow array of a column.
fn array(values: &Values) -> ArrayRef {
    match values {
        Values::Int(v) => Arc::new(Int64Array::from(v.clone())),
        Values::Float(v) => Arc::new(Float64Array::from(v.clone())),
        Values::Price(v) => Arc::new(Float64Array::from(v.iter().map(|p| p.map(|p| p.yuan())).collect::<Vec<_>>())),
        Values::Text(v) => Arc::new(StringArray::from(v.clone())),
        Values::Date(v) => Arc::new(Date32Array::from(v.iter().map(|d| d.map(date32)).collect::<Vec<_>>())),
        Values::DateTime(v) => Arc::new(
            TimestampMillisecondArray::from(v.iter().map(|t| t.map(epoch_millis)).collect::<Vec<_>>())
                .with_timezone(crate::sync::store::TIME_ZONE),
        ),
        Values::Time(v) => Arc::new(Time32MillisecondArray::from(
            v.iter()
                .map(|t| {
                    t.map(|t| {
                        ((i32::from(t.hour()) * 60 + i32::from(t.minute())) * 60 + i32::from(t.second())) * 1000
                            + i32::from(t.millis())
                    })
                })
                .collect::<Vec<_>>(),
        )),
        Values::Bytes(v) => Arc::new(BinaryArray::from(v.iter().map(|b| b.as_deref()).collect::<Vec<_>>())),
    }
}

/// A table as one Arrow record batch.
pub fn batch(table: &Table) -> Result<RecordBatch, ArrowError> {
    RecordBatch::try_new(schema(table), table.columns.iter().map(|c| array(&c.values)).collect())
}

/// An Arrow IPC stream: the schema, then a record batch per page.
struct ArrowStream {
    writer: Option<arrow_ipc::writer::StreamWriter<Vec<u8>>>,
}

impl Encoder for ArrowStream {
    fn page(&mut self, table: &Table) -> Result<Bytes, EncodeError> {
        let batch = batch(table)?;
        let writer = match &mut self.writer {
            Some(w) => w,
            None => self.writer.insert(arrow_ipc::writer::StreamWriter::try_new(Vec::new(), &batch.schema())?),
        };
        writer.write(&batch)?;
        Ok(std::mem::take(writer.get_mut()).into())
    }

    fn finish(self: Box<Self>) -> Result<Bytes, EncodeError> {
        let Some(mut writer) = self.writer else { return Ok(Bytes::new()) };
        writer.finish()?;
        Ok(writer.into_inner()?.into())
    }
}

/// A Parquet file, a row group per page (Snappy, as `tdx sync` writes).
struct ParquetFile {
    writer: Option<ArrowWriter<Vec<u8>>>,
}

impl Encoder for ParquetFile {
    fn page(&mut self, table: &Table) -> Result<Bytes, EncodeError> {
        let batch = batch(table)?;
        let writer = match &mut self.writer {
            Some(w) => w,
            None => {
                let props = WriterProperties::builder().set_compression(Compression::SNAPPY).build();
                self.writer.insert(ArrowWriter::try_new(Vec::new(), batch.schema(), Some(props))?)
            }
        };
        writer.write(&batch)?;
        // The row group is written out and the writer's buffer flushed:
        // what the inner Vec holds is final, and taking it does not change
        // the byte count the footer's offsets come from.
        writer.flush()?;
        writer.sync().map_err(parquet::errors::ParquetError::from)?;
        Ok(std::mem::take(writer.inner_mut()).into())
    }

    fn finish(self: Box<Self>) -> Result<Bytes, EncodeError> {
        let Some(writer) = self.writer else { return Ok(Bytes::new()) };
        Ok(writer.into_inner()?.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tdx_engine::proto::{Date, DateTime, Price, TimeOfDay};

    struct Row(i64, Price, &'static str, DateTime);

    fn table(rows: &[Row]) -> Table {
        Table::of(rows)
            .int("n", |r| r.0)
            .price("p", |r| r.1)
            .text("s", |r| r.2.to_owned())
            .datetime("t", |r| r.3)
            .build()
    }

    fn rows() -> Vec<Row> {
        let t = DateTime { date: Date::new(2024, 1, 2).unwrap(), time: TimeOfDay::new(15, 0, 0, 0).unwrap() };
        vec![Row(1, Price(10_500), "a,b", t), Row(2, Price(-1), "say \"hi\"", t)]
    }

    fn all(format: Format, pages: &[Table]) -> Vec<u8> {
        let mut e = encoder(format);
        let mut out = Vec::new();
        for p in pages {
            out.extend_from_slice(&e.page(p).unwrap());
        }
        out.extend_from_slice(&e.finish().unwrap());
        out
    }

    #[test]
    fn json_and_csv_pages_join_into_one_document() {
        let rows = rows();
        let pages = [table(&rows[..1]), table(&rows[1..]), table(&[])];
        let json: serde_json::Value = serde_json::from_slice(&all(Format::Json, &pages)).unwrap();
        assert_eq!(json, serde_json::Value::Array(table(&rows).rows_json()));
        assert_eq!(json[0]["t"], "2024-01-02T15:00:00");
        let empty: serde_json::Value = serde_json::from_slice(&all(Format::Json, &[table(&[])])).unwrap();
        assert_eq!(empty, serde_json::json!([]));
        let csv = String::from_utf8(all(Format::Csv, &pages)).unwrap();
        assert_eq!(
            csv,
            "n,p,s,t\n1,10.5,\"a,b\",2024-01-02T15:00:00\n2,-0.001,\"say \"\"hi\"\"\",2024-01-02T15:00:00\n"
        );
        assert_eq!(all(Format::Csv, &[table(&[])]), b"n,p,s,t\n");
    }

    #[test]
    fn arrow_and_parquet_read_back_as_the_pages() {
        let rows = rows();
        let pages = [table(&rows[..1]), table(&rows[1..])];
        let bytes = all(Format::Arrow, &pages);
        let reader = arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(bytes), None).unwrap();
        let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
        assert_eq!(batches.len(), 2);
        assert_eq!(batches[1], batch(&pages[1]).unwrap());
        let bytes = Bytes::from(all(Format::Parquet, &pages));
        let reader =
            parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(bytes).unwrap().build().unwrap();
        let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
        let rows_read: usize = batches.iter().map(RecordBatch::num_rows).sum();
        assert_eq!(rows_read, 2);
        assert_eq!(
            batches[0].column(1).as_ref(),
            batch(&table(&rows)).unwrap().column(1).slice(0, batches[0].num_rows()).as_ref()
        );
    }

    #[test]
    fn accept_headers_pick_a_format() {
        assert_eq!(Format::from_accept(None), Some(Format::Json));
        assert_eq!(Format::from_accept(Some("text/csv")), Some(Format::Csv));
        assert_eq!(Format::from_accept(Some("text/html, application/vnd.apache.parquet;q=0.9")), Some(Format::Parquet));
        assert_eq!(Format::from_accept(Some("application/json;q=0.1, text/csv")), Some(Format::Csv));
        assert_eq!(Format::from_accept(Some("image/png")), None);
        assert_eq!(Format::from_accept(Some("*/*")), Some(Format::Json));
    }
}
