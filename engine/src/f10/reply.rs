//! The gateway's reply: a JSON object with an `ErrorCode` and `ResultSets`,
//! each result set a list of column names (`ColName`, or `ColDes` objects
//! with a `Name`) and rows (`Content`, arrays of values). [`parse_reply`]
//! turns it into [`F10Table`]s; it never panics on any input (the
//! `f10_reply` fuzz target holds it to that).

use serde_json::{Map, Value};

use super::error::F10Error;

/// One cell. Typed as the gateway's JSON types it: numbers are numbers,
/// strings stay text (the gateway sends some figures as text, for example
/// the valuation entry's; [`F10Value::as_f64`] reads those too).
#[derive(Debug, Clone, PartialEq)]
pub enum F10Value {
    /// JSON `null`, or a cell past the end of a short row.
    Null,
    /// JSON `true`/`false`.
    Bool(bool),
    /// A JSON integer that fits in 64 bits.
    Int(i64),
    /// Any other JSON number.
    Float(f64),
    /// A JSON string; nested arrays and objects as their compact JSON text.
    Text(String),
}

impl F10Value {
    /// The value as a number: numbers, and text that reads as one.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Self::Int(n) => Some(*n as f64),
            Self::Float(x) => Some(*x),
            Self::Text(s) => s.trim().parse().ok().filter(|x: &f64| x.is_finite()),
            Self::Null | Self::Bool(_) => None,
        }
    }

    /// The value as text, when it is text.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::Text(s) => Some(s),
            _ => None,
        }
    }

    /// The value as it is shown: text as is, numbers in full, null empty.
    pub fn display(&self) -> String {
        match self {
            Self::Null => String::new(),
            Self::Bool(b) => b.to_string(),
            Self::Int(n) => n.to_string(),
            Self::Float(x) => x.to_string(),
            Self::Text(s) => s.clone(),
        }
    }

    /// The JSON value again.
    pub fn to_json(&self) -> Value {
        match self {
            Self::Null => Value::Null,
            Self::Bool(b) => Value::Bool(*b),
            Self::Int(n) => Value::from(*n),
            Self::Float(x) => serde_json::Number::from_f64(*x).map_or(Value::Null, Value::Number),
            Self::Text(s) => Value::String(s.clone()),
        }
    }

    /// The cell a JSON value makes.
    pub fn from_json(v: &Value) -> Self {
        match v {
            Value::Null => Self::Null,
            Value::Bool(b) => Self::Bool(*b),
            Value::Number(n) => n.as_i64().map_or_else(|| Self::Float(n.as_f64().unwrap_or(f64::NAN)), Self::Int),
            Value::String(s) => Self::Text(s.clone()),
            nested => Self::Text(nested.to_string()),
        }
    }
}

/// One result set: its key, its columns as the gateway names them
/// (duplicates and blanks kept), and its rows, each as long as `columns`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct F10Table {
    /// `ResultSetKey`, or `tableN` (its index) when the gateway sends none.
    pub key: String,
    /// Column names in order, as sent.
    pub columns: Vec<String>,
    /// Rows of cells, one per column.
    pub rows: Vec<Vec<F10Value>>,
}

impl F10Table {
    /// The index of the first column named `name`.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }

    /// Row `row`'s value in the first column named `name`.
    pub fn value(&self, row: usize, name: &str) -> Option<&F10Value> {
        self.rows.get(row)?.get(self.column(name)?)
    }

    /// Column names made unique for records: a blank name becomes
    /// `col_N` (its index), a repeated one `NAME__2`, `NAME__3`, ...
    pub fn unique_columns(&self) -> Vec<String> {
        let mut used: std::collections::HashSet<String> = std::collections::HashSet::new();
        self.columns
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let base = if name.is_empty() { format!("col_{i}") } else { name.clone() };
                // A server may also send a name like `T1__2` literally: skip taken ones.
                let name = (1..)
                    .map(|n| if n == 1 { base.clone() } else { format!("{base}__{n}") })
                    .find(|candidate| !used.contains(candidate))
                    .expect("an unbounded range has an unused name");
                used.insert(name.clone());
                name
            })
            .collect()
    }

    /// `{"key": ..., "columns": [...], "rows": [{column: value}, ...]}`,
    /// rows keyed by [`unique_columns`](Self::unique_columns).
    pub fn to_json(&self) -> Value {
        let names = self.unique_columns();
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|row| Value::Object(names.iter().cloned().zip(row.iter().map(F10Value::to_json)).collect()))
            .collect();
        serde_json::json!({ "key": self.key, "columns": self.columns, "rows": rows })
    }
}

/// An entry's answer: the gateway entry asked and its result sets.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct F10Reply {
    /// The gateway entry (`CWServ.tdxf10_gg_cwfx`, ...).
    pub entry: String,
    /// The result sets in the gateway's order.
    pub tables: Vec<F10Table>,
}

impl F10Reply {
    /// The first result set, where most entries put their rows.
    pub fn first(&self) -> Option<&F10Table> {
        self.tables.first()
    }

    /// The result set keyed `key`.
    pub fn table(&self, key: &str) -> Option<&F10Table> {
        self.tables.iter().find(|t| t.key == key)
    }

    /// `{"entry": ..., "tables": [...]}` (see [`F10Table::to_json`]): what
    /// `tdx f10 -o json` and `tdx-sim truth f10` print.
    pub fn to_json(&self) -> Value {
        serde_json::json!({ "entry": self.entry, "tables": self.tables.iter().map(F10Table::to_json).collect::<Vec<_>>() })
    }
}

/// Parses a gateway reply to `entry`: a UTF-8 JSON object (a leading BOM
/// allowed). A non-zero `ErrorCode` is [`F10Error::Gateway`]; anything
/// that is not the result-set document is [`F10Error::Protocol`].
pub fn parse_reply(entry: &str, body: &[u8]) -> Result<F10Reply, F10Error> {
    let body = body.strip_prefix(b"\xef\xbb\xbf").unwrap_or(body);
    let doc: Value = serde_json::from_slice(body).map_err(|e| F10Error::protocol(entry, format!("not JSON: {e}")))?;
    let Value::Object(doc) = doc else {
        return Err(F10Error::protocol(entry, "not a JSON object"));
    };
    let code = error_code(entry, doc.get("ErrorCode"))?;
    if code != 0 {
        let message = ["ErrorInfo", "ErrorMsg", "Message"]
            .iter()
            .find_map(|k| doc.get(*k).and_then(Value::as_str))
            .unwrap_or_default()
            .to_owned();
        return Err(F10Error::Gateway { entry: entry.to_owned(), code, message });
    }
    let sets = match doc.get("ResultSets") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(sets)) => sets.as_slice(),
        Some(_) => return Err(F10Error::protocol(entry, "ResultSets is not an array")),
    };
    let tables = sets.iter().enumerate().map(|(i, set)| result_set(entry, i, set)).collect::<Result<_, _>>()?;
    Ok(F10Reply { entry: entry.to_owned(), tables })
}

/// `ErrorCode`: absent or null is success; a number or numeric text otherwise.
fn error_code(entry: &str, v: Option<&Value>) -> Result<i64, F10Error> {
    match v {
        None | Some(Value::Null) => Ok(0),
        Some(Value::Number(n)) => n.as_i64().ok_or_else(|| F10Error::protocol(entry, format!("ErrorCode {n}"))),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(0),
        Some(Value::String(s)) => s.trim().parse().map_err(|_| F10Error::protocol(entry, format!("ErrorCode {s:?}"))),
        Some(other) => Err(F10Error::protocol(entry, format!("ErrorCode {other}"))),
    }
}

fn result_set(entry: &str, index: usize, set: &Value) -> Result<F10Table, F10Error> {
    let Value::Object(set) = set else {
        return Err(F10Error::protocol(entry, format!("result set {index} is not an object")));
    };
    let key = match set.get("ResultSetKey") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => format!("table{index}"),
    };
    let mut columns = columns(entry, index, set)?;
    let content = match set.get("Content") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(rows)) => rows.as_slice(),
        Some(_) => return Err(F10Error::protocol(entry, format!("result set {index}: Content is not an array"))),
    };
    let mut rows: Vec<Vec<F10Value>> = content
        .iter()
        .map(|row| match row {
            Value::Array(cells) => cells.iter().map(F10Value::from_json).collect(),
            // A row that is one bare value is a row of one cell.
            single => vec![F10Value::from_json(single)],
        })
        .collect();
    // Cells past the named columns get blank names (shown as col_N); short
    // rows are padded with nulls: every row as long as the columns.
    let width = rows.iter().map(Vec::len).max().unwrap_or(0).max(columns.len());
    columns.resize(width, String::new());
    for row in &mut rows {
        row.resize(width, F10Value::Null);
    }
    Ok(F10Table { key, columns, rows })
}

fn columns(entry: &str, index: usize, set: &Map<String, Value>) -> Result<Vec<String>, F10Error> {
    let name = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Object(o) => {
            o.get("Name").map(|n| n.as_str().map_or_else(|| n.to_string(), str::to_owned)).unwrap_or_default()
        }
        other => other.to_string(),
    };
    for field in ["ColName", "ColDes"] {
        match set.get(field) {
            None => continue,
            Some(Value::Null) => return Ok(Vec::new()),
            Some(Value::Array(items)) => return Ok(items.iter().map(name).collect()),
            Some(_) => return Err(F10Error::protocol(entry, format!("result set {index}: {field} is not an array"))),
        }
    }
    Ok(Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_sets_parse_with_their_columns() {
        let body = "\u{feff}{\"ErrorCode\":0,\"ResultSets\":[{\"ColName\":[\"rq\",\"T007\",\"T120\",\"T120\"],\
            \"Content\":[[\"2026-09-30\",12.5,1,\"x\"],[\"2026-06-30\"]]},\
            {\"ResultSetKey\":\"meta\",\"ColDes\":[{\"Name\":\"nyear\"},\"flag\"],\"Content\":[[\"2026\",0,7]]}]}";
        let reply = parse_reply("CWServ.x", body.as_bytes()).unwrap();
        assert_eq!(reply.tables.len(), 2);
        let t = &reply.tables[0];
        assert_eq!(t.key, "table0");
        assert_eq!(t.unique_columns(), ["rq", "T007", "T120", "T120__2"]);
        assert_eq!(t.rows[0][1], F10Value::Float(12.5));
        assert_eq!(t.rows[1], [F10Value::Text("2026-06-30".into()), F10Value::Null, F10Value::Null, F10Value::Null]);
        let meta = reply.table("meta").unwrap();
        assert_eq!(meta.unique_columns(), ["nyear", "flag", "col_2"]);
        assert_eq!(meta.value(0, "nyear").and_then(F10Value::as_f64), Some(2026.0));
        assert_eq!(reply.to_json()["tables"][0]["rows"][0]["T120__2"], "x");
    }

    #[test]
    fn a_name_sent_as_a_renamed_one_stays_unique() {
        // The fuzz smoke's find (f10_reply): a literal `T1__2` beside two `T1`s.
        let columns: Vec<String> = ["T1", "T1__2", "T1", "T1", ""].iter().map(|c| (*c).to_owned()).collect();
        let t = F10Table { key: "t".into(), columns, rows: Vec::new() };
        assert_eq!(t.unique_columns(), ["T1", "T1__2", "T1__3", "T1__4", "col_4"]);
        let columns: Vec<String> = ["a", "a", "a__2"].iter().map(|c| (*c).to_owned()).collect();
        let t = F10Table { key: "t".into(), columns, rows: Vec::new() };
        assert_eq!(t.unique_columns(), ["a", "a__2", "a__2__2"]);
    }

    #[test]
    fn malformed_replies_are_typed_errors() {
        for body in [&b"<html>"[..], b"[1,2]", b"{\"ResultSets\":{}}", b"{\"ResultSets\":[1]}", b"{\"ErrorCode\":[]}"] {
            let e = parse_reply("E", body).unwrap_err();
            assert!(e.is_protocol(), "{e}");
        }
        let e = parse_reply("E", br#"{"ErrorCode":-3,"ErrorInfo":"no such entry"}"#).unwrap_err();
        assert_eq!(e, F10Error::Gateway { entry: "E".into(), code: -3, message: "no such entry".into() });
        assert_eq!(parse_reply("E", b"{}").unwrap().tables, []);
    }
}
