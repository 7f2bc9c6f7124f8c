//! `tdx gateway`: one long-running engine served over HTTP and WebSocket.
//!
//! - `/api/{method}`: one GET endpoint per command of the engine's list
//!   (`api`), results as JSON, CSV, Arrow IPC or Parquet (`encode`);
//! - `/ws`: live quotes with per-client backpressure (`quotes`);
//! - `/openapi.json` and `/docs`, generated from the same list (`openapi`);
//! - `/health`, `/diagnostics`, `/metrics` (`metrics`);
//! - `/`: the market page (`page/`, the chart library compiled in).
//!
//! Safe by default: it binds loopback; any other address needs `--token`
//! (then every route wants `Authorization: Bearer TOKEN`); every client
//! has a request rate, a concurrency and a query-size limit (`guard`);
//! CORS is off unless `--cors ORIGIN`.

mod api;
mod encode;
mod errors;
mod guard;
mod metrics;
mod openapi;
mod quotes;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use clap::Args;
use tdx_engine::{Client, CloseState, COMMANDS};

use crate::{at_least_one, CliError, Global};
use errors::{json_body, ApiError};
use guard::{ClientLimits, Clients};
use metrics::Metrics;
use quotes::Hub;

/// `tdx gateway`'s options.
#[derive(Args, Debug, Clone)]
pub struct GatewayArgs {
    /// Address to serve on. Anything but loopback needs --token.
    #[arg(long, default_value = "127.0.0.1:8000")]
    pub listen: SocketAddr,
    /// Bearer token every request must carry (`Authorization: Bearer
    /// TOKEN`, or `access_token=TOKEN` in the query for browsers).
    #[arg(long, env = "TDX_GATEWAY_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Allow browsers on this origin (e.g. `https://example.com`) to call the
    /// API; CORS is off without it.
    #[arg(long, value_name = "ORIGIN")]
    pub cors: Option<String>,
    /// Requests one client (IP address) may have in progress at once.
    #[arg(long, default_value_t = 16, value_parser = at_least_one, allow_negative_numbers = true)]
    pub client_concurrency: usize,
    /// Requests a second one client may send, sustained.
    #[arg(long, default_value_t = 50.0, value_parser = positive_rate, allow_negative_numbers = true)]
    pub client_rate: f64,
    /// Requests one client may send at once above its rate.
    #[arg(long, default_value_t = 100.0, value_parser = burst, allow_negative_numbers = true)]
    pub client_burst: f64,
    /// Quote messages queued per WebSocket client; a slower client loses
    /// the oldest and is told how many.
    #[arg(long, default_value_t = 512, value_parser = at_least_one, allow_negative_numbers = true)]
    pub ws_queue: usize,
    /// WebSocket clients served at once.
    #[arg(long, default_value_t = 256, value_parser = at_least_one, allow_negative_numbers = true)]
    pub ws_clients: usize,
    /// Requests the engine queues before it answers PoolBusy (503); 0
    /// answers PoolBusy as soon as every connection is busy.
    #[arg(long, allow_negative_numbers = true)]
    pub max_pending: Option<usize>,
    /// Quote pushes the engine buffers for the WebSocket hub (each at most
    /// 2 KiB on average); the hub reads them at once, so this only covers bursts.
    #[arg(long, default_value_t = 4096, value_parser = at_least_one, allow_negative_numbers = true)]
    pub push_queue: usize,
}

/// A sustained rate: a finite number above zero.
fn positive_rate(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x > 0.0 && x.is_finite() => Ok(x),
        _ => Err(format!("{s:?} is not a number above 0")),
    }
}

/// A burst: a finite number of at least one request.
fn burst(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x >= 1.0 && x.is_finite() => Ok(x),
        _ => Err(format!("{s:?} is not a number of at least 1")),
    }
}

/// What every handler shares.
pub struct App {
    client: Client,
    metrics: Arc<Metrics>,
    hub: Arc<Hub>,
    clients: Arc<Clients>,
    token: Option<String>,
    started: Instant,
}

/// The error kind the gateway reports for an engine error (`PoolBusy`, `TimedOut`, ...).
pub fn error_kind(e: &tdx_engine::Error) -> &'static str {
    ApiError::engine(e).kind()
}

impl GatewayArgs {
    /// Refuses what the gateway must not start with.
    fn check(&self) -> Result<(), CliError> {
        if !self.listen.ip().is_loopback() && self.token.as_deref().is_none_or(str::is_empty) {
            return Err(CliError::new(format!(
                "refusing to serve on {} without --token: any host that reaches it could use it; \
                 give --token (or TDX_GATEWAY_TOKEN), or listen on 127.0.0.1",
                self.listen
            )));
        }
        if self.token.as_deref() == Some("") {
            return Err(CliError::new("--token is empty"));
        }
        Ok(())
    }
}

/// Static files of the page, compiled in.
const ASSETS: &[(&str, &str, &[u8])] = &[
    ("app.js", "text/javascript; charset=utf-8", include_bytes!("page/app.js")),
    ("style.css", "text/css; charset=utf-8", include_bytes!("page/style.css")),
    (
        "lightweight-charts.js",
        "text/javascript; charset=utf-8",
        include_bytes!("page/vendor/lightweight-charts.standalone.production.js"),
    ),
    (
        "lightweight-charts.LICENSE",
        "text/plain; charset=utf-8",
        include_bytes!("page/vendor/lightweight-charts.LICENSE"),
    ),
];

const INDEX: &str = include_str!("page/index.html");

fn html(body: String) -> Response {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response()
}

async fn asset(Path(name): Path<String>) -> Response {
    match ASSETS.iter().find(|(n, _, _)| *n == name) {
        Some((_, media, bytes)) => {
            ([(header::CONTENT_TYPE, *media), (header::CACHE_CONTROL, "max-age=3600")], *bytes).into_response()
        }
        None => ApiError::not_found(format!("no asset {name:?}")).into_response(),
    }
}

async fn health(State(app): State<Arc<App>>) -> Response {
    let d = app.client.diagnostics();
    let up = d.supervisor.slots.iter().filter(|s| s.state == "ready" || s.state == "busy").count();
    let running = d.supervisor.close_state == CloseState::Running;
    let body = serde_json::json!({
        "status": if running { "ok" } else { "closing" },
        "version": env!("CARGO_PKG_VERSION"),
        "uptime_seconds": app.started.elapsed().as_secs(),
        "engine": format!("{:?}", d.supervisor.close_state),
        "connections_up": up,
        "servers": d.supervisor.endpoints,
    });
    let mut response = json_body(&body);
    if !running {
        *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    }
    response
}

async fn diagnostics(State(app): State<Arc<App>>) -> Response {
    json_body(&serde_json::to_value(&*app.client.diagnostics()).unwrap_or_default())
}

async fn prometheus(State(app): State<Arc<App>>) -> Response {
    let text = app.metrics.render(&app.client.diagnostics());
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], text).into_response()
}

async fn openapi_json(State(app): State<Arc<App>>) -> Response {
    json_body(&openapi::document(app.token.is_some()))
}

async fn not_found() -> Response {
    ApiError::not_found("no such route; see /docs").into_response()
}

/// The gateway's routes over `app`.
fn router(app: Arc<App>, cors: Option<&str>) -> Result<Router, CliError> {
    let mut router = Router::new()
        .route("/", get(|| async { html(INDEX.to_owned()) }))
        .route("/assets/{name}", get(asset))
        .route("/docs", get(|| async { html(openapi::docs_page()) }))
        .route("/openapi.json", get(openapi_json))
        .route("/health", get(health))
        .route("/diagnostics", get(diagnostics))
        .route("/metrics", get(prometheus))
        .route("/ws", get(quotes::upgrade))
        .route("/api", get(api::list));
    for info in COMMANDS {
        router = router.route(
            &format!("/api/{}", info.method),
            get(move |state, headers, query| api::command(state, info, headers, query)),
        );
    }
    let mut router = router
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(app.clone(), guard::check))
        .layer(tower_http::limit::RequestBodyLimitLayer::new(guard::BODY_MAX))
        .with_state(app);
    if let Some(origin) = cors {
        let origin =
            HeaderValue::from_str(origin).map_err(|_| CliError::new(format!("--cors {origin:?} is no origin")))?;
        router = router.layer(
            tower_http::cors::CorsLayer::new()
                .allow_origin(origin)
                .allow_methods([Method::GET])
                .allow_headers([header::AUTHORIZATION, header::ACCEPT]),
        );
    }
    Ok(router)
}

/// Runs the gateway until interrupted.
pub async fn run(global: &Global, args: GatewayArgs) -> Result<(), CliError> {
    args.check()?;
    let (max_pending, push_frames) = (args.max_pending, args.push_queue);
    let ctx = global.connect_with(|b| {
        let b = b.push_queue(push_frames, push_frames * 2048);
        match max_pending {
            Some(n) => b.max_pending_requests(n),
            None => b,
        }
    })?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| CliError::new(format!("cannot listen on {}: {e}", args.listen)))?;
    let local = listener.local_addr().map_err(|e| CliError::new(e.to_string()))?;
    let metrics = Arc::new(Metrics::default());
    let limits =
        ClientLimits { concurrency: args.client_concurrency, rate: args.client_rate, burst: args.client_burst };
    let app = Arc::new(App {
        client: ctx.client.clone(),
        metrics: metrics.clone(),
        hub: Hub::new(ctx.client.clone(), metrics, args.ws_queue, args.ws_clients),
        clients: Arc::new(Clients::new(limits)),
        token: args.token.clone(),
        started: Instant::now(),
    });
    let router = router(app, args.cors.as_deref())?;
    // The address, alone on stdout, for scripts; the rest on stderr.
    println!("listening http://{local}/");
    let source = if ctx.exchange.is_some() { "the embedded exchange (--local)" } else { "the configured servers" };
    if local.ip().is_loopback() {
        eprintln!("tdx gateway: serving {source} on http://{local}/ (loopback only): the page at /, the API at /docs");
    } else {
        eprintln!(
            "tdx gateway: serving {source} on {local} to the network: every request needs \
             `Authorization: Bearer <token>` (or ?access_token=); the page at /, the API at /docs"
        );
    }
    if args.token.is_some() && local.ip().is_loopback() {
        eprintln!("tdx gateway: every request needs the token (`Authorization: Bearer <token>` or ?access_token=)");
    }
    if let Some(origin) = &args.cors {
        eprintln!("tdx gateway: CORS allows {origin}");
    }
    let served = axum::serve(listener, router.into_make_service_with_connect_info::<SocketAddr>()).await;
    ctx.client.close().await;
    served.map_err(|e| CliError::new(format!("the gateway stopped: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(listen: &str, token: Option<&str>) -> GatewayArgs {
        GatewayArgs {
            listen: listen.parse().unwrap(),
            token: token.map(str::to_owned),
            cors: None,
            client_concurrency: 4,
            client_rate: 10.0,
            client_burst: 20.0,
            ws_queue: 8,
            ws_clients: 4,
            max_pending: None,
            push_queue: 16,
        }
    }

    #[test]
    fn only_loopback_goes_without_a_token() {
        assert!(args("127.0.0.1:0", None).check().is_ok());
        assert!(args("[::1]:0", None).check().is_ok());
        let refused = args("0.0.0.0:8000", None).check().unwrap_err();
        assert!(refused.to_string().contains("without --token"), "{refused}");
        assert!(args("0.0.0.0:8000", Some("s3cret")).check().is_ok());
        assert!(args("127.0.0.1:0", Some("")).check().is_err());
    }
}
