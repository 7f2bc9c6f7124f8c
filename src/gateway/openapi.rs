//! `/openapi.json` and `/docs`, both generated from the engine's command
//! list: a path per command with its parameters' schemas (`calls::params`),
//! the result formats, and the error statuses; `/docs` is the same list
//! as a page (no scripts, nothing loaded from elsewhere) with a form per
//! command to try it.

use serde_json::{json, Map, Value};
use tdx_engine::{CommandInfo, COMMANDS};

use super::encode::Format;
use crate::calls::{self, ParamKind};

/// A command's first doc line.
pub fn summary(info: &CommandInfo) -> String {
    info.doc.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or(info.method).to_owned()
}

/// A command's whole doc comment as one paragraph.
fn description(info: &CommandInfo) -> String {
    info.doc.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ")
}

fn error_response(description: &str) -> Value {
    json!({
        "description": description,
        "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } },
    })
}

fn format_param() -> Value {
    let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
    json!({
        "name": "format",
        "in": "query",
        "required": false,
        "description": "The result format; overrides the Accept header (default: JSON).",
        "schema": { "type": "string", "enum": names },
    })
}

fn operation(info: &CommandInfo) -> Value {
    let mut parameters: Vec<Value> = calls::params(info)
        .iter()
        .map(|p| {
            let mut param = json!({
                "name": p.name,
                "in": "query",
                "required": p.required,
                "description": p.about,
                "schema": p.schema(),
            });
            if p.kind == ParamKind::Codes {
                // `codes=sz000001,sh600000`.
                param["style"] = json!("form");
                param["explode"] = json!(false);
            }
            param
        })
        .collect();
    parameters.push(format_param());
    let rows = json!({ "type": "array", "items": { "type": "object" } });
    let binary = json!({ "type": "string", "contentMediaType": "application/octet-stream" });
    let mut content = Map::new();
    for f in Format::ALL {
        let base = f.media_type().split(';').next().unwrap_or_default().to_owned();
        let schema = match f {
            Format::Json => rows.clone(),
            Format::Csv => json!({ "type": "string" }),
            Format::Arrow | Format::Parquet => binary.clone(),
        };
        content.insert(base, json!({ "schema": schema }));
    }
    let paging = match info.paging {
        Some(_) => " Paged: `start` and `count` choose the rows, `all=true` pages to the end; the pages stream.",
        None => "",
    };
    json!({
        "operationId": info.method,
        "summary": summary(info),
        "description": format!("{} Wire command {} (0x{:04x}).{paging}", description(info), info.command, info.msg_type),
        "tags": ["commands"],
        "parameters": parameters,
        "responses": {
            "200": { "description": "The result's rows (columns: the engine's table of this command).", "content": Value::Object(content) },
            "400": error_response("A parameter is missing, unknown or bad (`parameter` names it)."),
            "401": error_response("No or a wrong bearer token (when the gateway has one)."),
            "406": error_response("The Accept header lists no format the gateway writes."),
            "429": error_response("This client sent too many requests, or has too many in progress (see Retry-After)."),
            "502": error_response("The server failed: the connection was lost, or the reply did not parse."),
            "503": error_response("PoolBusy: the engine's queue is full (see Retry-After); or the engine is closed."),
            "504": error_response("TimedOut: no reply within the gateway's timeout."),
        },
    })
}

fn plain(summary: &str, media: &str, schema: Value) -> Value {
    json!({
        "get": {
            "summary": summary,
            "tags": ["service"],
            "responses": {
                "200": { "description": summary, "content": { media: { "schema": schema } } },
                "401": error_response("No or a wrong bearer token (when the gateway has one)."),
            },
        }
    })
}

/// The OpenAPI 3.1 document; `token`: whether requests need a bearer token.
pub fn document(token: bool) -> Value {
    let mut paths = Map::new();
    for info in COMMANDS {
        paths.insert(format!("/api/{}", info.method), json!({ "get": operation(info) }));
    }
    let object = json!({ "type": "object" });
    paths.insert("/api".into(), plain("The commands and their parameters.", "application/json", object.clone()));
    paths.insert("/health".into(), plain("The gateway and its engine are up.", "application/json", object.clone()));
    paths
        .insert("/diagnostics".into(), plain("The engine's diagnostics snapshot.", "application/json", object.clone()));
    paths.insert(
        "/metrics".into(),
        plain("Counters in Prometheus' text format.", "text/plain", json!({ "type": "string" })),
    );
    paths.insert("/openapi.json".into(), plain("This document.", "application/json", object));
    let mut ws = plain(
        "Live quotes over a WebSocket (send {\"subscribe\": [codes]}).",
        "application/json",
        json!({ "type": "object" }),
    );
    ws["get"]["description"] = json!(
        "Upgrade to a WebSocket. Messages: subscribed, quote (the columns of /api/refresh_quotes), dropped (quotes lost to a slow reader), error."
    );
    ws["get"]["parameters"] = json!([{
        "name": "codes", "in": "query", "required": false, "style": "form", "explode": false,
        "description": "Codes to subscribe at once.",
        "schema": { "type": "array", "items": { "type": "string" } },
    }]);
    ws["get"]["responses"]["101"] = json!({ "description": "Switching to the WebSocket protocol." });
    paths.insert("/ws".into(), ws);
    let mut doc = json!({
        "openapi": "3.1.0",
        "info": {
            "title": "tdx gateway",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The tdx engine's commands over HTTP: one GET endpoint per command, results as JSON, CSV, an Arrow IPC stream or Parquet.",
        },
        "paths": Value::Object(paths),
        "components": {
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["error"],
                    "properties": {
                        "error": {
                            "type": "object",
                            "required": ["kind", "message"],
                            "properties": {
                                "kind": { "type": "string", "description": "The engine's error kind (PoolBusy, TimedOut, ...) or the gateway's (BadParameter, Unauthorized, ...)." },
                                "message": { "type": "string" },
                                "parameter": { "type": "string", "description": "The bad parameter, for BadParameter." },
                            },
                        },
                    },
                },
            },
            "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer" } },
        },
    });
    if token {
        doc["security"] = json!([{ "bearer": [] }]);
    }
    doc
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// `/docs`: every command, its parameters and a form that calls it.
pub fn docs_page() -> String {
    let mut sections = String::new();
    let mut index = String::new();
    for info in COMMANDS {
        let m = info.method;
        index.push_str(&format!("<li><a href=\"#{m}\">{m}</a></li>"));
        let mut rows = String::new();
        let mut inputs = String::new();
        for p in calls::params(info) {
            let default = p.default.clone().unwrap_or_default();
            let kind = match &p.kind {
                ParamKind::Choice(names) => names.join(" | "),
                ParamKind::Code => "code".into(),
                ParamKind::Codes => "codes, comma-separated".into(),
                ParamKind::Date => "YYYYMMDD".into(),
                ParamKind::Text => "text".into(),
                ParamKind::Integer { min, max } => format!("{min}..={max}"),
                ParamKind::Boolean => "true | false".into(),
            };
            let need = if p.required { "required" } else { "optional" };
            rows.push_str(&format!(
                "<tr><td><code>{}</code></td><td>{}</td><td>{need}</td><td>{}</td><td>{}</td></tr>",
                p.name,
                escape(&kind),
                escape(&default),
                escape(&p.about)
            ));
            let field = match &p.kind {
                ParamKind::Choice(names) => {
                    let options: String = names
                        .iter()
                        .map(|n| {
                            let selected = if *n == default { " selected" } else { "" };
                            format!("<option{selected}>{}</option>", escape(n))
                        })
                        .collect();
                    format!("<select name=\"{}\">{options}</select>", p.name)
                }
                ParamKind::Boolean => {
                    format!("<select name=\"{}\"><option selected>false</option><option>true</option></select>", p.name)
                }
                _ => format!(
                    "<input name=\"{}\" value=\"{}\" placeholder=\"{}\"{}>",
                    p.name,
                    escape(&default),
                    escape(&kind),
                    if p.required { " required" } else { "" }
                ),
            };
            inputs.push_str(&format!("<label>{} {field}</label>", p.name));
        }
        let formats: String = Format::ALL.iter().map(|f| format!("<option>{}</option>", f.name())).collect();
        let table = if rows.is_empty() {
            "<p>No parameters.</p>".to_owned()
        } else {
            format!("<table><tr><th>parameter</th><th>takes</th><th></th><th>default</th><th>meaning</th></tr>{rows}</table>")
        };
        let paged = if info.paging.is_some() { " · paged" } else { "" };
        sections.push_str(&format!(
            "<section id=\"{m}\"><h2>GET /api/{m}</h2><p class=\"wire\">{} 0x{:04x}{paged}</p><p>{}</p>{table}\
             <form action=\"/api/{m}\" method=\"get\" target=\"_blank\">{inputs}\
             <label>format <select name=\"format\">{formats}</select></label><button>Send</button></form></section>",
            info.command,
            info.msg_type,
            escape(&description(info))
        ));
    }
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>tdx gateway: API</title>\
         <meta name=\"viewport\" content=\"width=device-width\"><style>{DOCS_CSS}</style></head><body>\
         <header><h1>tdx gateway API</h1><p>One GET endpoint per engine command. Results as JSON (default), CSV, \
         an Arrow IPC stream or Parquet: <code>Accept</code> or <code>?format=</code>. Errors: a status and \
         <code>{{\"error\":{{\"kind\",\"message\",\"parameter\"}}}}</code>. Machine-readable: \
         <a href=\"/openapi.json\">/openapi.json</a>. Also <a href=\"/health\">/health</a>, \
         <a href=\"/diagnostics\">/diagnostics</a>, <a href=\"/metrics\">/metrics</a>, <a href=\"/\">the market page</a>.</p>\
         <ul class=\"index\">{index}</ul></header><main>{sections}</main></body></html>"
    )
}

const DOCS_CSS: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2430;background:#f7f8fa}\
header{padding:16px 24px;background:#fff;border-bottom:1px solid #dde1e6}h1{margin:0 0 6px;font-size:20px}\
.index{display:flex;flex-wrap:wrap;gap:4px 14px;padding:0;list-style:none}main{padding:8px 24px 40px}\
section{background:#fff;border:1px solid #dde1e6;border-radius:6px;margin:14px 0;padding:10px 16px}\
h2{font-size:15px;margin:4px 0}.wire{color:#6b7480;margin:0}table{border-collapse:collapse;margin:8px 0}\
td,th{border-bottom:1px solid #eef0f3;padding:3px 10px 3px 0;text-align:left;vertical-align:top}\
form{display:flex;flex-wrap:wrap;gap:6px 12px;align-items:end}label{display:flex;flex-direction:column;font-size:12px;color:#6b7480}\
input,select,button{font:inherit;padding:3px 6px}code{background:#eef0f3;padding:0 3px;border-radius:3px}";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_has_a_path_with_its_parameters() {
        let doc = document(false);
        for info in COMMANDS {
            let op = &doc["paths"][format!("/api/{}", info.method)]["get"];
            assert_eq!(op["operationId"], info.method);
            let names: Vec<&str> =
                op["parameters"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
            let mut want: Vec<&str> = calls::params(info).iter().map(|p| p.name).collect();
            want.push("format");
            assert_eq!(names, want);
        }
        assert!(doc.get("security").is_none());
        assert_eq!(document(true)["security"][0]["bearer"], json!([]));
        assert!(docs_page().contains("GET /api/bars"));
    }
}
