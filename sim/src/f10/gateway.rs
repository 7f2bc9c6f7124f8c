//! The reference F10 gateway over HTTP: `POST /TQLEX?Entry=NAME` with a
//! JSON body, the answer of [`answer`] back, on a listener
//! it is handed (the binary and the test kit bind 127.0.0.1 only). Faults
//! are live: slow replies, 5xx statuses, malformed JSON, empty result sets.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;

use super::data::{answer, GatewayReply};
use crate::market_data::MarketData;
use crate::rng::Rng;

/// The gateway's faults, each drawn per request from a seeded stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GatewayFaults {
    /// Delay added before every reply.
    pub latency: Duration,
    /// Odds (per mille) of a `503 Service Unavailable`.
    pub error_per_mille: u32,
    /// Odds (per mille) of a reply that is not JSON.
    pub malformed_per_mille: u32,
    /// Every result set sent without rows.
    pub empty: bool,
}

/// A handle to change a running gateway's faults.
#[derive(Debug, Clone, Default)]
pub struct GatewayFaultHandle(Arc<Mutex<GatewayFaults>>);

impl GatewayFaultHandle {
    /// The faults in force.
    pub fn get(&self) -> GatewayFaults {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Replaces them, from the next request on.
    pub fn set(&self, faults: GatewayFaults) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = faults;
    }
}

/// Requests served, per gateway entry (tests read it to count calls and retries).
#[derive(Debug, Default)]
pub struct GatewayStats {
    requests: AtomicU64,
    by_entry: Mutex<HashMap<String, u64>>,
}

impl GatewayStats {
    /// Every request received.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Requests received for `entry`.
    pub fn for_entry(&self, entry: &str) -> u64 {
        self.by_entry.lock().unwrap_or_else(|e| e.into_inner()).get(entry).copied().unwrap_or(0)
    }
}

#[derive(Clone)]
struct Shared {
    data: Arc<MarketData>,
    faults: GatewayFaultHandle,
    stats: Arc<GatewayStats>,
    draws: Arc<Mutex<Rng>>,
}

/// The reference F10 gateway over one market.
pub struct F10Gateway {
    shared: Shared,
}

impl F10Gateway {
    /// A gateway answering from `data`, with `faults` from the start.
    pub fn new(data: Arc<MarketData>, faults: GatewayFaults) -> Self {
        let seed = data.market().seed();
        let handle = GatewayFaultHandle::default();
        handle.set(faults);
        Self {
            shared: Shared {
                data,
                faults: handle,
                stats: Arc::default(),
                draws: Arc::new(Mutex::new(Rng::derive(seed, 0xf10_fa17))),
            },
        }
    }

    /// Its live faults.
    pub fn faults(&self) -> GatewayFaultHandle {
        self.shared.faults.clone()
    }

    /// Its request counts.
    pub fn stats(&self) -> Arc<GatewayStats> {
        self.shared.stats.clone()
    }

    /// Serves on `listener` until the task is dropped.
    pub async fn run(self, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        let app = Router::new().route("/TQLEX", post(tqlex)).with_state(self.shared);
        axum::serve(listener, app).await
    }
}

async fn tqlex(State(s): State<Shared>, Query(query): Query<HashMap<String, String>>, body: Bytes) -> Response {
    let entry = query.get("Entry").cloned().unwrap_or_default();
    s.stats.requests.fetch_add(1, Ordering::Relaxed);
    *s.stats.by_entry.lock().unwrap_or_else(|e| e.into_inner()).entry(entry.clone()).or_insert(0) += 1;
    let faults = s.faults.get();
    let (fail, malformed) = {
        let mut rng = s.draws.lock().unwrap_or_else(|e| e.into_inner());
        (rng.chance(faults.error_per_mille), rng.chance(faults.malformed_per_mille))
    };
    if !faults.latency.is_zero() {
        tokio::time::sleep(faults.latency).await;
    }
    if fail {
        return (StatusCode::SERVICE_UNAVAILABLE, "gateway busy").into_response();
    }
    if malformed {
        return ([(header::CONTENT_TYPE, "application/json")], "{\"ErrorCode\":0,\"ResultSets\":[{\"ColName\":[\"rq\"")
            .into_response();
    }
    let reply = match serde_json::from_slice::<serde_json::Value>(&body) {
        Ok(body) => answer(&s.data, &entry, &body),
        Err(e) => GatewayReply::error(format!("the body is not JSON: {e}")),
    };
    let reply = if faults.empty { reply.emptied() } else { reply };
    ([(header::CONTENT_TYPE, "application/json; charset=utf-8")], reply.to_json().to_string()).into_response()
}
