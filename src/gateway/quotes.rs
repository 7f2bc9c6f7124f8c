//! `/ws`: live quotes over a WebSocket. A client subscribes to codes; the
//! gateway refreshes them (0x0547) and forwards every quote push the
//! servers send for them, as JSON.
//!
//! One **hub** reads the engine's pushes and fans each record out to the
//! subscribers of its code. Each subscriber has a bounded queue: when a
//! client reads too slowly the queue drops its *oldest* messages, counts
//! them, and the client's next message says how many it lost
//! (`{"type":"dropped",...}`). A message is built once and shared by the
//! queues that hold it, so the gateway's memory for quotes is bounded by
//! the queue size times the clients, however slow they are.
//!
//! Messages to the client:
//! - `{"type":"subscribed","codes":[...]}`: the client's codes now;
//! - `{"type":"quote","initial":bool,"quote":{...}}`: a record, in the
//!   columns of `/api/refresh_quotes` (`initial`: the refresh's answer);
//! - `{"type":"dropped","count":N,"total":T}`: N quotes lost since the last
//!   notice (T in all) because the client read too slowly;
//! - `{"type":"error","error":{...}}`: a bad message or a failed refresh.
//!
//! Messages from the client: `{"subscribe":["sz000001",...]}` and
//! `{"unsubscribe":[...]}`; `/ws?codes=sz000001,sh600000` subscribes at once.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use axum::extract::ws::{Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use tdx_engine::proto::commands::{Refresh, RefreshRecord, RefreshTarget};
use tdx_engine::proto::{Command as _, SecurityCode};
use tdx_engine::table::Tabular;
use tdx_engine::Client;
use tokio::sync::Notify;

use super::errors::ApiError;
use super::metrics::Metrics;
use super::App;
use crate::calls::CODES_MAX;

/// Largest message a client may send.
const CLIENT_MESSAGE_MAX: usize = 4096;

/// One client's outgoing messages.
#[derive(Debug)]
pub struct Queue {
    state: Mutex<QueueState>,
    ready: Notify,
    capacity: usize,
}

#[derive(Debug, Default)]
struct QueueState {
    messages: VecDeque<Utf8Bytes>,
    /// Dropped since the client was last told.
    dropped: u64,
    dropped_total: u64,
}

impl Queue {
    fn new(capacity: usize) -> Self {
        Self { state: Mutex::new(QueueState::default()), ready: Notify::new(), capacity: capacity.max(1) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `message`, dropping the oldest when full.
    fn push(&self, message: Utf8Bytes, metrics: &Metrics) {
        {
            let mut s = self.lock();
            if s.messages.len() >= self.capacity {
                s.messages.pop_front();
                s.dropped += 1;
                s.dropped_total += 1;
                metrics.ws_dropped.fetch_add(1, Ordering::Relaxed);
            } else {
                metrics.ws_queued.fetch_add(1, Ordering::Relaxed);
            }
            s.messages.push_back(message);
        }
        self.ready.notify_one();
    }

    /// The next message to send: a drop notice first if any were dropped.
    fn pop(&self, metrics: &Metrics) -> Option<Utf8Bytes> {
        let mut s = self.lock();
        if s.dropped > 0 {
            let notice = json!({ "type": "dropped", "count": s.dropped, "total": s.dropped_total });
            s.dropped = 0;
            return Some(notice.to_string().into());
        }
        let message = s.messages.pop_front();
        if message.is_some() {
            metrics.ws_queued.fetch_sub(1, Ordering::Relaxed);
        }
        message
    }

    fn len(&self) -> usize {
        self.lock().messages.len()
    }
}

#[derive(Debug)]
struct Subscriber {
    codes: BTreeSet<SecurityCode>,
    queue: Arc<Queue>,
}

#[derive(Debug, Default)]
struct HubState {
    subscribers: HashMap<u64, Subscriber>,
    next_id: u64,
    /// The refresh sent last (its codes price the pushes that follow).
    refresh: Option<Refresh>,
    pump_started: bool,
}

/// Fans the engine's quote pushes out to WebSocket subscribers.
#[derive(Debug)]
pub struct Hub {
    client: Client,
    metrics: Arc<Metrics>,
    state: Mutex<HubState>,
    queue_capacity: usize,
    clients_max: usize,
}

/// A quote record as one message.
fn quote_message(record: &RefreshRecord, initial: bool) -> Utf8Bytes {
    let table = vec![record.clone()].table();
    json!({ "type": "quote", "initial": initial, "quote": Value::Object(table.row_json(0)) }).to_string().into()
}

fn error_message(kind: &str, message: &str, parameter: Option<&str>) -> Utf8Bytes {
    let mut error = json!({ "kind": kind, "message": message });
    if let Some(p) = parameter {
        error["parameter"] = json!(p);
    }
    json!({ "type": "error", "error": error }).to_string().into()
}

impl Hub {
    pub fn new(client: Client, metrics: Arc<Metrics>, queue_capacity: usize, clients_max: usize) -> Arc<Self> {
        Arc::new(Self { client, metrics, state: Mutex::new(HubState::default()), queue_capacity, clients_max })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HubState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new subscriber with no codes; `None` when the hub is full.
    fn join(self: &Arc<Self>) -> Option<(u64, Arc<Queue>)> {
        let mut s = self.lock();
        if s.subscribers.len() >= self.clients_max {
            return None;
        }
        let id = s.next_id;
        s.next_id += 1;
        let queue = Arc::new(Queue::new(self.queue_capacity));
        s.subscribers.insert(id, Subscriber { codes: BTreeSet::new(), queue: queue.clone() });
        if !s.pump_started {
            s.pump_started = true;
            tokio::spawn(self.clone().pump());
        }
        self.metrics.ws_clients.fetch_add(1, Ordering::Relaxed);
        Some((id, queue))
    }

    fn leave(&self, id: u64) {
        if let Some(sub) = self.lock().subscribers.remove(&id) {
            self.metrics.ws_clients.fetch_sub(1, Ordering::Relaxed);
            self.metrics.ws_queued.fetch_sub(sub.queue.len() as u64, Ordering::Relaxed);
        }
    }

    /// Every subscriber's codes.
    fn union(s: &HubState) -> BTreeSet<SecurityCode> {
        s.subscribers.values().flat_map(|sub| sub.codes.iter().copied()).collect()
    }

    /// Changes `id`'s codes, refreshes the union of everyone's codes (so
    /// the connection that carries the refresh pushes them all), and
    /// queues the refresh's records of the added codes. Returns the
    /// client's codes now.
    async fn change(
        &self,
        id: u64,
        add: &[SecurityCode],
        remove: &[SecurityCode],
    ) -> Result<Vec<SecurityCode>, ApiError> {
        let (union, codes) = {
            let mut s = self.lock();
            let mut union = Self::union(&s);
            union.extend(add.iter().copied());
            if union.len() > CODES_MAX {
                let message = format!("the gateway follows at most {CODES_MAX} codes for all its clients together");
                return Err(ApiError::new(axum::http::StatusCode::BAD_REQUEST, "TooManyCodes", message));
            }
            let Some(sub) = s.subscribers.get_mut(&id) else { return Ok(Vec::new()) };
            sub.codes.extend(add.iter().copied());
            for c in remove {
                sub.codes.remove(c);
            }
            let codes: Vec<SecurityCode> = sub.codes.iter().copied().collect();
            (Self::union(&s), codes)
        };
        if union.is_empty() {
            return Ok(codes);
        }
        let union: Vec<SecurityCode> = union.into_iter().collect();
        let records = self.client.refresh_quotes(&union).await.map_err(|e| ApiError::engine(&e))?;
        let mut s = self.lock();
        s.refresh = Some(Refresh { targets: union.iter().map(|&c| RefreshTarget::from(c)).collect() });
        if let Some(sub) = s.subscribers.get(&id) {
            for r in records.iter().filter(|r| add.contains(&r.code) && sub.codes.contains(&r.code)) {
                sub.queue.push(quote_message(r, true), &self.metrics);
            }
        }
        Ok(codes)
    }

    /// Reads the engine's pushes until it closes, and fans them out.
    async fn pump(self: Arc<Self>) {
        while let Some(pushes) = self.client.recv_pushes(256).await {
            if pushes.overflow_total.is_some() {
                let dropped = self.client.diagnostics().supervisor.push_dropped_total;
                self.metrics.engine_push_overflow.store(dropped, Ordering::Relaxed);
            }
            let Some(request) = self.lock().refresh.clone() else { continue };
            for frame in pushes.frames.iter().filter(|f| f.header.msg_type == Refresh::MSG_TYPE) {
                let Ok(reply) = request.parse_reply(&frame.payload) else { continue };
                for record in &reply.records {
                    let message = quote_message(record, false);
                    let s = self.lock();
                    for sub in s.subscribers.values().filter(|sub| sub.codes.contains(&record.code)) {
                        sub.queue.push(message.clone(), &self.metrics);
                    }
                }
            }
        }
    }
}

/// `/ws?codes=...`.
#[derive(Debug, serde::Deserialize)]
pub struct WsQuery {
    codes: Option<String>,
}

pub async fn upgrade(State(app): State<Arc<App>>, Query(q): Query<WsQuery>, ws: WebSocketUpgrade) -> Response {
    let initial = match q.codes.as_deref().map(parse_codes).transpose() {
        Ok(codes) => codes.unwrap_or_default(),
        Err(e) => return e.into_response(),
    };
    let Some((id, queue)) = app.hub.join() else {
        app.metrics.reject("TooManyWebSockets");
        return ApiError::busy(format!("the gateway serves at most {} WebSockets", app.hub.clients_max))
            .into_response();
    };
    let hub = app.hub.clone();
    ws.max_message_size(CLIENT_MESSAGE_MAX).max_frame_size(CLIENT_MESSAGE_MAX).on_upgrade(move |socket| async move {
        session(socket, &hub, id, queue, initial).await;
        hub.leave(id);
    })
}

fn parse_codes(text: &str) -> Result<Vec<SecurityCode>, ApiError> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<SecurityCode>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| crate::calls::ParamError { param: "codes".into(), reason: e.to_string() }.into())
}

/// A client's `{"subscribe": [...]}` or `{"unsubscribe": [...]}`.
fn parse_request(text: &str) -> Result<(Vec<SecurityCode>, Vec<SecurityCode>), ApiError> {
    let bad =
        |param: &str, reason: String| -> ApiError { crate::calls::ParamError { param: param.into(), reason }.into() };
    let v: Value = serde_json::from_str(text).map_err(|e| bad("message", format!("not JSON: {e}")))?;
    let list = |key: &str| -> Result<Vec<SecurityCode>, ApiError> {
        match v.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|i| {
                    let s = i.as_str().ok_or_else(|| bad(key, format!("{i} is not a code")))?;
                    s.trim().parse::<SecurityCode>().map_err(|e| bad(key, e.to_string()))
                })
                .collect(),
            Some(other) => Err(bad(key, format!("{other} is not a list of codes"))),
        }
    };
    let (add, remove) = (list("subscribe")?, list("unsubscribe")?);
    if add.is_empty() && remove.is_empty() {
        return Err(bad("message", "send {\"subscribe\": [codes]} or {\"unsubscribe\": [codes]}".into()));
    }
    Ok((add, remove))
}

async fn session(mut socket: WebSocket, hub: &Hub, id: u64, queue: Arc<Queue>, initial: Vec<SecurityCode>) {
    let send_change = |result: Result<Vec<SecurityCode>, ApiError>| -> Utf8Bytes {
        match result {
            Ok(codes) => {
                let codes: Vec<String> = codes.iter().map(ToString::to_string).collect();
                json!({ "type": "subscribed", "codes": codes }).to_string().into()
            }
            Err(e) => error_message(e.kind, &e.message, e.parameter.as_deref()),
        }
    };
    if !initial.is_empty() {
        let reply = send_change(hub.change(id, &initial, &[]).await);
        if socket.send(Message::Text(reply)).await.is_err() {
            return;
        }
    }
    loop {
        // Whatever is queued goes first; a slow client holds this loop in
        // `send` while the hub drops its oldest queued quotes.
        if let Some(message) = queue.pop(&hub.metrics) {
            if socket.send(Message::Text(message)).await.is_err() {
                return;
            }
            hub.metrics.ws_messages.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        tokio::select! {
            () = queue.ready.notified() => {}
            incoming = socket.recv() => {
                let text = match incoming {
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                    Some(Ok(_)) => continue,
                };
                let reply = match parse_request(text.as_str()) {
                    Ok((add, remove)) => send_change(hub.change(id, &add, &remove).await),
                    Err(e) => error_message(e.kind, &e.message, e.parameter.as_deref()),
                };
                if socket.send(Message::Text(reply)).await.is_err() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_queue_drops_its_oldest_and_says_how_many() {
        let metrics = Metrics::default();
        let q = Queue::new(2);
        for i in 0..5 {
            q.push(format!("m{i}").into(), &metrics);
        }
        let notice: Value = serde_json::from_str(q.pop(&metrics).unwrap().as_str()).unwrap();
        assert_eq!(notice, json!({"type": "dropped", "count": 3, "total": 3}));
        assert_eq!(q.pop(&metrics).unwrap().as_str(), "m3");
        assert_eq!(q.pop(&metrics).unwrap().as_str(), "m4");
        assert!(q.pop(&metrics).is_none());
        assert_eq!(metrics.ws_dropped.load(Ordering::Relaxed), 3);
        assert_eq!(metrics.ws_queued.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn client_messages_name_what_is_wrong() {
        assert!(parse_request(r#"{"subscribe":["sz000001"]}"#).is_ok());
        let e = parse_request(r#"{"subscribe":["zz1"]}"#).unwrap_err();
        assert_eq!(e.parameter.as_deref(), Some("subscribe"));
        assert_eq!(parse_request("{}").unwrap_err().parameter.as_deref(), Some("message"));
    }
}
