//! `/api/{method}`: one endpoint per listed command, its parameters in
//! the query string (`calls::params`), its result in the format `Accept`
//! or `?format=` asks for. The first page is fetched before the status
//! line is sent, so a failed request gets its proper status; later pages
//! stream as they come (a failure then ends the body early, which the
//! client sees as a truncated transfer).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use tdx_engine::table::Table;
use tdx_engine::CommandInfo;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::encode::{encoder, Encoder, Format};
use super::errors::ApiError;
use super::guard::form_pairs;
use super::App;
use crate::calls;

/// Query parameters the gateway itself reads.
pub const RESERVED: &[&str] = &["format", "access_token"];

/// Pages produced ahead of the writer: a slow reader holds the pager back.
const PAGES_AHEAD: usize = 2;

/// The format a request asks for.
fn format(headers: &HeaderMap, pairs: &[(String, String)]) -> Result<Format, ApiError> {
    if let Some((_, name)) = pairs.iter().find(|(k, _)| k == "format") {
        return Format::from_name(name).ok_or_else(|| {
            let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
            calls::ParamError { param: "format".into(), reason: format!("use {}", names.join(", ")) }.into()
        });
    }
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    Format::from_accept(accept).ok_or_else(|| {
        let types: Vec<&str> = Format::ALL.iter().map(|f| f.media_type()).collect();
        ApiError::not_acceptable(format!("Accept lists none of {}", types.join(", ")))
    })
}

/// Serves one command.
pub async fn command(
    State(app): State<Arc<App>>,
    info: &'static CommandInfo,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    let started = Instant::now();
    let pairs = query.as_deref().map(form_pairs).unwrap_or_default();
    let prepared = format(&headers, &pairs).and_then(|f| Ok((f, calls::parse(info, &pairs, RESERVED)?)));
    let (format, call) = match prepared {
        Ok(ok) => ok,
        Err(e) => {
            app.metrics.record(info.method, e.status.as_u16(), Some(e.kind()), started.elapsed(), 0);
            return e.into_response();
        }
    };
    let (tx, mut rx) = mpsc::channel(PAGES_AHEAD);
    let client = app.client.clone();
    let mut task = tokio::spawn(async move { calls::run(&client, call, tx).await });
    let Some(first) = rx.recv().await else {
        // No table: the call failed before its first page.
        let error = match (&mut task).await {
            Ok(Err(e)) => ApiError::engine(&e),
            Ok(Ok(())) => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "Internal", "the call produced no table"),
            Err(e) => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "Internal", format!("the call failed: {e}")),
        };
        app.metrics.record(info.method, error.status.as_u16(), Some(error.kind()), started.elapsed(), 0);
        return error.into_response();
    };
    let body = Pages {
        first: Some(first),
        rx,
        task,
        encoder: Some(encoder(format)),
        finish: Finish { app: app.clone(), method: info.method, started, rows: 0, error: None, done: false },
    };
    let mut response = Body::from_stream(body).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(format.media_type()));
    if format == Format::Parquet || format == Format::Arrow {
        let name = format!("attachment; filename=\"{}.{}\"", info.method, format.name());
        if let Ok(v) = HeaderValue::from_str(&name) {
            response.headers_mut().insert(header::CONTENT_DISPOSITION, v);
        }
    }
    response
}

/// Records the request's metrics once its body has ended (or was dropped).
struct Finish {
    app: Arc<App>,
    method: &'static str,
    started: Instant,
    rows: u64,
    error: Option<&'static str>,
    done: bool,
}

impl Drop for Finish {
    fn drop(&mut self) {
        // A body dropped before its end: the client went away mid-stream.
        let error = self.error.or((!self.done).then_some("ClientGone"));
        self.app.metrics.record(self.method, 200, error, self.started.elapsed(), self.rows);
    }
}

/// A command's response body: its pages, encoded as they come.
struct Pages {
    first: Option<Table>,
    rx: mpsc::Receiver<Table>,
    task: JoinHandle<Result<(), tdx_engine::Error>>,
    encoder: Option<Box<dyn Encoder>>,
    finish: Finish,
}

impl Pages {
    fn encode(&mut self, table: &Table) -> Option<Result<Bytes, std::io::Error>> {
        let encoder = self.encoder.as_mut()?;
        self.finish.rows += table.rows() as u64;
        Some(encoder.page(table).map_err(|e| self.fail("Encode", e.to_string())))
    }

    fn fail(&mut self, kind: &'static str, message: String) -> std::io::Error {
        self.finish.error = Some(kind);
        self.encoder = None;
        std::io::Error::other(message)
    }
}

impl Drop for Pages {
    fn drop(&mut self) {
        // The client went away: stop paging (the request in flight is
        // dropped with the task, which cancels it in the engine).
        self.task.abort();
    }
}

impl futures_core::Stream for Pages {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if let Some(first) = this.first.take() {
            return Poll::Ready(this.encode(&first));
        }
        if this.encoder.is_none() {
            return Poll::Ready(None);
        }
        match this.rx.poll_recv(cx) {
            Poll::Ready(Some(table)) => Poll::Ready(this.encode(&table)),
            Poll::Pending => Poll::Pending,
            Poll::Ready(None) => match Pin::new(&mut this.task).poll(cx) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(Ok(Ok(()))) => {
                    let encoder = this.encoder.take().expect("checked above");
                    this.finish.done = true;
                    Poll::Ready(Some(encoder.finish().map_err(|e| this.fail("Encode", e.to_string()))))
                }
                Poll::Ready(Ok(Err(e))) => {
                    let kind = ApiError::engine(&e).kind();
                    Poll::Ready(Some(Err(this.fail(kind, format!("the result ended early: {e}")))))
                }
                Poll::Ready(Err(e)) => Poll::Ready(Some(Err(this.fail("Internal", format!("the pager failed: {e}"))))),
            },
        }
    }
}

use std::future::Future as _;

/// `/api`: the commands, as the list describes them.
pub async fn list() -> Response {
    let commands: Vec<serde_json::Value> = tdx_engine::COMMANDS
        .iter()
        .map(|info| {
            let params: Vec<serde_json::Value> = calls::params(info)
                .iter()
                .map(|p| serde_json::json!({ "name": p.name, "required": p.required, "schema": p.schema() }))
                .collect();
            serde_json::json!({
                "method": info.method,
                "path": format!("/api/{}", info.method),
                "command": info.command,
                "msg_type": format!("0x{:04x}", info.msg_type),
                "paged": info.paging.is_some(),
                "summary": super::openapi::summary(info),
                "parameters": params,
            })
        })
        .collect();
    super::errors::json_body(&serde_json::json!({ "commands": commands }))
}
