//! `tdx mcp`: the engine's commands as MCP tools over stdio, for AI
//! agents (the official Rust SDK, `rmcp`).
//!
//! Tools come from the engine's command list, one per command, with the
//! gateway's parameters (`calls::params`) as their JSON Schema. A result is
//! a compact table, `{"columns": [...], "rows": [[...], ...]}`, bounded in
//! rows and bytes: a cut result says so in `note` and `truncated`. A bad
//! argument or a failed request is a tool error (`isError`) whose
//! `error.parameter` names the field at fault.

use std::sync::Arc;

use clap::Args;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Map, Value};
use tdx_engine::table::Table;
use tdx_engine::{Client, CommandInfo, COMMANDS};
use tokio::sync::mpsc;

use crate::calls::{self, ParamError, ParamKind};
use crate::{CliError, Global};

/// `tdx mcp`'s options.
#[derive(Args, Debug, Clone)]
pub struct McpArgs {
    /// Most rows one tool result carries; longer results are cut, with a note.
    #[arg(long, default_value_t = 2000, value_parser = crate::at_least_one, allow_negative_numbers = true)]
    pub max_rows: usize,
    /// Most bytes of JSON one tool result carries; larger results are cut, with a note.
    #[arg(long, default_value_t = 256 * 1024, value_parser = at_least_1024, allow_negative_numbers = true)]
    pub max_bytes: usize,
}

/// The MCP server: the engine and the result bounds.
#[derive(Clone)]
struct Server {
    client: Client,
    tools: Arc<Vec<Tool>>,
    max_rows: usize,
    max_bytes: usize,
}

/// A tool's input schema: an object of its parameters (code lists as arrays).
fn input_schema(info: &CommandInfo) -> Map<String, Value> {
    let params = calls::params(info);
    let properties: Map<String, Value> = params.iter().map(|p| (p.name.to_owned(), p.schema())).collect();
    let required: Vec<&str> = params.iter().filter(|p| p.required).map(|p| p.name).collect();
    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), Value::Object(properties));
    schema.insert("required".into(), json!(required));
    schema.insert("additionalProperties".into(), json!(false));
    schema
}

fn tool(info: &'static CommandInfo) -> Tool {
    let doc = info.doc.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ");
    let paged = if info.paging.is_some() {
        " Paged: start and count choose the rows; all=true asks every page (the result is cut at the server's bound)."
    } else {
        ""
    };
    let description = format!(
        "{doc}{paged} Returns {{\"columns\": [...], \"rows\": [[...]]}}: prices in yuan, times exchange-local."
    );
    Tool::new(info.method, description, input_schema(info))
        .with_annotations(ToolAnnotations::with_title(info.method).read_only(true).destructive(false))
}

/// A tool call's arguments as the (name, text) pairs `calls::parse` reads:
/// a list is comma-joined, numbers and booleans written out.
fn text_args(info: &CommandInfo, arguments: Option<&Map<String, Value>>) -> Result<Vec<(String, String)>, ParamError> {
    let params = calls::params(info);
    let mut pairs = Vec::new();
    for (name, value) in arguments.into_iter().flatten() {
        let is_list = params.iter().any(|p| p.name == name && p.kind == ParamKind::Codes);
        let text = match value {
            Value::Null => continue,
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Array(items) if is_list => items
                .iter()
                .map(|i| i.as_str().map(str::to_owned).ok_or_else(|| bad(name, format!("{i} is not a code"))))
                .collect::<Result<Vec<_>, _>>()?
                .join(","),
            other => {
                return Err(bad(
                    name,
                    format!("{other} is not a {}", if is_list { "list of codes" } else { "single value" }),
                ))
            }
        };
        pairs.push((name.clone(), text));
    }
    Ok(pairs)
}

fn bad(param: &str, reason: String) -> ParamError {
    ParamError { param: param.to_owned(), reason }
}

/// A tool error: `{"error": {"kind", "message", "parameter"?}}`.
fn tool_error(kind: &str, message: String, parameter: Option<String>) -> CallToolResult {
    let mut error = json!({ "kind": kind, "message": message });
    if let Some(p) = parameter {
        error["parameter"] = json!(p);
    }
    CallToolResult::structured_error(json!({ "error": error }))
}

/// Rows as arrays in column order, cut to the bounds; the JSON result.
fn compact(tables: Vec<Table>, more: bool, max_rows: usize, max_bytes: usize) -> Value {
    let columns: Vec<String> =
        tables.first().map(|t| t.columns.iter().map(|c| c.name.clone()).collect()).unwrap_or_default();
    let mut rows: Vec<Value> = Vec::new();
    let mut bytes = 64;
    let mut cut = more;
    'tables: for t in &tables {
        for i in 0..t.rows() {
            if rows.len() >= max_rows {
                cut = true;
                break 'tables;
            }
            let row = Value::Array(t.columns.iter().map(|c| c.values.cell(i).to_json()).collect());
            let size = row.to_string().len() + 1;
            if bytes + size > max_bytes {
                cut = true;
                break 'tables;
            }
            bytes += size;
            rows.push(row);
        }
    }
    let mut out = json!({ "columns": columns, "row_count": rows.len(), "rows": rows, "truncated": cut });
    if cut {
        out["note"] = json!(format!(
            "cut after {} rows: the result exceeds this server's bound ({max_rows} rows, {max_bytes} bytes); \
             ask for the rest with start/count",
            out["row_count"]
        ));
    }
    out
}

impl Server {
    async fn call(&self, info: &'static CommandInfo, arguments: Option<&Map<String, Value>>) -> CallToolResult {
        let call = match text_args(info, arguments).and_then(|pairs| calls::parse(info, &pairs, &[])) {
            Ok(call) => call,
            Err(e) => return tool_error("BadParameter", e.to_string(), Some(e.param)),
        };
        let (tx, mut rx) = mpsc::channel(2);
        let client = self.client.clone();
        let task = tokio::spawn(async move { calls::run(&client, call, tx).await });
        let mut tables = Vec::new();
        let mut rows = 0;
        let mut more = false;
        while let Some(t) = rx.recv().await {
            rows += t.rows();
            tables.push(t);
            if rows > self.max_rows {
                // Enough to fill the result: stop paging.
                more = true;
                break;
            }
        }
        drop(rx);
        match task.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) if tables.is_empty() || !more => {
                let kind = crate::gateway::error_kind(&e);
                return tool_error(kind, e.to_string(), None);
            }
            Ok(Err(_)) => {}
            Err(e) => return tool_error("Internal", format!("the call failed: {e}"), None),
        }
        CallToolResult::structured(compact(tables, more, self.max_rows, self.max_bytes))
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("tdx", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Chinese equity market data (quotes, bars, ticks, minute lines, code lists, corporate actions) \
                 from TDX market-data servers. Codes are like sz000001 or sh600000; dates YYYYMMDD. Each tool \
                 returns a table {columns, rows}; prices are in yuan.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(info) = calls::command(&request.name) else {
            return Err(ErrorData::invalid_params(format!("no tool named {:?}", request.name), None));
        };
        Ok(self.call(info, request.arguments.as_ref()).await.into())
    }
}

/// A result bound in bytes: room for at least the note that says it was cut.
fn at_least_1024(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n >= 1024 => Ok(n),
        _ => Err(format!("{s:?} is not a whole number of at least 1024")),
    }
}

/// Serves MCP on stdin and stdout until the client closes them.
pub async fn run(global: &Global, args: McpArgs) -> Result<(), CliError> {
    let ctx = global.connect()?;
    let server = Server {
        client: ctx.client.clone(),
        tools: Arc::new(COMMANDS.iter().map(tool).collect()),
        max_rows: args.max_rows,
        max_bytes: args.max_bytes,
    };
    let running =
        server.serve(rmcp::transport::stdio()).await.map_err(|e| CliError::new(format!("MCP start failed: {e}")))?;
    let ended = running.waiting().await;
    ctx.client.close().await;
    ended.map(|_| ()).map_err(|e| CliError::new(format!("MCP server failed: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_become_the_gateway_parameters() {
        let quotes = calls::command("quotes").unwrap();
        let args = json!({"codes": ["sz000001", "sh600000"]});
        let pairs = text_args(quotes, args.as_object()).unwrap();
        assert_eq!(pairs, vec![("codes".to_owned(), "sz000001,sh600000".to_owned())]);
        let bars = calls::command("bars").unwrap();
        let args = json!({"code": "sz000001", "count": 5, "all": false});
        let pairs = text_args(bars, args.as_object()).unwrap();
        assert!(calls::parse(bars, &pairs, &[]).is_ok());
        let err = text_args(bars, json!({"code": ["sz000001"]}).as_object()).unwrap_err();
        assert_eq!(err.param, "code");
        let schema = input_schema(bars);
        assert_eq!(schema["required"], json!(["code"]));
        assert_eq!(schema["properties"]["period"]["default"], "day");
    }

    #[test]
    fn results_are_cut_with_a_note() {
        let rows: Vec<i64> = (0..10).collect();
        let t = Table::of(&rows).int("n", |n| *n).build();
        let whole = compact(vec![t.clone()], false, 100, 10_000);
        assert_eq!((whole["row_count"].as_u64(), whole["truncated"].as_bool()), (Some(10), Some(false)));
        assert_eq!(whole["rows"][3], json!([3]));
        let cut = compact(vec![t], false, 4, 10_000);
        assert_eq!(cut["row_count"], 4);
        assert!(cut["note"].as_str().unwrap().contains("cut after 4 rows"));
    }
}
