//! What every request passes before a handler runs: the query-size
//! limit, the bearer token (when the gateway has one), and each client's
//! request rate and concurrency (a client is a peer IP address). A
//! request's concurrency slot is held until its response body ends, so a
//! long streamed result counts until its last byte.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::errors::ApiError;
use super::App;

/// Longest query string accepted.
pub const QUERY_MAX: usize = 4096;
/// Largest request body accepted (every route is a GET).
pub const BODY_MAX: usize = 16 * 1024;
/// Clients remembered for their rate; idle ones are forgotten beyond this.
const CLIENTS_MAX: usize = 4096;

/// Per-client limits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClientLimits {
    /// Requests in progress at once (their bodies included).
    pub concurrency: usize,
    /// Requests per second, sustained.
    pub rate: f64,
    /// Requests allowed at once above the rate.
    pub burst: f64,
}

#[derive(Debug)]
struct ClientState {
    in_flight: usize,
    tokens: f64,
    refilled: Instant,
}

/// The clients seen, by address.
#[derive(Debug)]
pub struct Clients {
    limits: ClientLimits,
    by_ip: Mutex<HashMap<IpAddr, ClientState>>,
}

/// Why a client was turned away.
enum Refusal {
    Rate(Duration),
    Concurrency,
}

impl Clients {
    pub fn new(limits: ClientLimits) -> Self {
        Self { limits, by_ip: Mutex::new(HashMap::new()) }
    }

    fn admit(self: &Arc<Self>, ip: IpAddr, now: Instant) -> Result<Slot, Refusal> {
        let mut all = self.by_ip.lock().unwrap_or_else(|e| e.into_inner());
        if all.len() >= CLIENTS_MAX && !all.contains_key(&ip) {
            // Forget clients idle long enough to be back to a full bucket.
            let full_after = Duration::from_secs_f64(self.limits.burst / self.limits.rate.max(f64::MIN_POSITIVE));
            all.retain(|_, c| c.in_flight > 0 || now.duration_since(c.refilled) < full_after);
        }
        let limits = self.limits;
        let c = all.entry(ip).or_insert(ClientState { in_flight: 0, tokens: limits.burst, refilled: now });
        let elapsed = now.duration_since(c.refilled).as_secs_f64();
        c.tokens = (c.tokens + elapsed * limits.rate).min(limits.burst);
        c.refilled = now;
        if c.tokens < 1.0 {
            let wait = Duration::from_secs_f64((1.0 - c.tokens) / limits.rate.max(f64::MIN_POSITIVE));
            return Err(Refusal::Rate(wait));
        }
        if c.in_flight >= limits.concurrency {
            return Err(Refusal::Concurrency);
        }
        c.tokens -= 1.0;
        c.in_flight += 1;
        Ok(Slot { clients: self.clone(), ip })
    }
}

/// One request's concurrency slot, given back when dropped.
#[derive(Debug)]
struct Slot {
    clients: Arc<Clients>,
    ip: IpAddr,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut all = self.clients.by_ip.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = all.get_mut(&self.ip) {
            c.in_flight = c.in_flight.saturating_sub(1);
        }
    }
}

/// A response body that holds its request's slot until it ends.
struct Held {
    body: Body,
    _slot: Slot,
}

impl http_body::Body for Held {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// The token a request carries: `Authorization: Bearer T`, or (for
/// browsers' WebSockets and links, which cannot set headers) `access_token=T`.
fn presented_token(request: &Request) -> Option<String> {
    let header = request.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    if let Some(t) = header.and_then(|h| h.strip_prefix("Bearer ")) {
        return Some(t.trim().to_owned());
    }
    let query = request.uri().query()?;
    form_pairs(query).into_iter().find(|(k, _)| k == "access_token").map(|(_, v)| v)
}

/// `a=1&b=x%20y` as decoded pairs.
pub fn form_pairs(query: &str) -> Vec<(String, String)> {
    serde_urlencoded::from_str::<Vec<(String, String)>>(query).unwrap_or_default()
}

/// Compares without stopping at the first difference, so the time taken
/// says nothing about how much of a guess was right.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The middleware itself.
pub async fn check(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    if request.uri().query().is_some_and(|q| q.len() > QUERY_MAX) {
        app.metrics.reject("QueryTooLong");
        let message = format!("the query string is longer than {QUERY_MAX} bytes");
        return ApiError::new(StatusCode::URI_TOO_LONG, "QueryTooLong", message).into_response();
    }
    if let Some(token) = &app.token {
        if !presented_token(&request).is_some_and(|t| same(t.as_bytes(), token.as_bytes())) {
            app.metrics.reject("Unauthorized");
            let mut response = ApiError::unauthorized().into_response();
            response.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
            return response;
        }
    }
    let ip = request.extensions().get::<ConnectInfo<SocketAddr>>().map_or(IpAddr::from([127, 0, 0, 1]), |c| c.0.ip());
    let slot = match app.clients.admit(ip, Instant::now()) {
        Ok(slot) => slot,
        Err(Refusal::Rate(wait)) => {
            app.metrics.reject("RateLimited");
            let limits = app.clients.limits;
            let message = format!("more than {} requests a second (burst {}) from {ip}", limits.rate, limits.burst);
            return ApiError::rate_limited(message, wait).into_response();
        }
        Err(Refusal::Concurrency) => {
            app.metrics.reject("TooManyInFlight");
            let message = format!(
                "{ip} already has {} requests in progress; wait for one to end",
                app.clients.limits.concurrency
            );
            return ApiError::rate_limited(message, super::errors::RETRY_AFTER).into_response();
        }
    };
    let response = next.run(request).await;
    let (parts, body) = response.into_parts();
    Response::from_parts(parts, Body::new(Held { body, _slot: slot }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_and_concurrency_are_per_client() {
        let clients = Arc::new(Clients::new(ClientLimits { concurrency: 2, rate: 10.0, burst: 3.0 }));
        let (a, b) = (IpAddr::from([127, 0, 0, 1]), IpAddr::from([127, 0, 0, 2]));
        let t0 = Instant::now();
        let s1 = clients.admit(a, t0).ok().unwrap();
        let s2 = clients.admit(a, t0).ok().unwrap();
        assert!(matches!(clients.admit(a, t0), Err(Refusal::Concurrency)));
        assert!(clients.admit(b, t0).is_ok(), "another client is not held up");
        drop(s1);
        let s3 = clients.admit(a, t0).ok().unwrap();
        drop((s2, s3));
        assert!(matches!(clients.admit(a, t0), Err(Refusal::Rate(_))), "the burst of 3 is spent");
        assert!(clients.admit(a, t0 + Duration::from_millis(150)).is_ok(), "refilled at 10 a second");
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same(b"secret", b"secret"));
        assert!(!same(b"secret", b"secreT"));
        assert!(!same(b"secret", b"secret2"));
    }
}
