//! What the gateway tests share: the `tdx gateway` process, a plain
//! HTTP/1.1 client, a WebSocket client, reference servers, and a server
//! that floods valid quote pushes.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tdx_engine::proto::commands::{Command as _, Refresh, RefreshReply, RefreshTarget};
use tdx_engine::proto::frame::{encode_response, ResponseHeader};
use tdx_engine::proto::limits::RESPONSE_HEADER_LEN;
use tdx_engine::proto::{Compression, SecurityCode};
use tdx_sim::MarketData;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A running `tdx gateway`, stopped when dropped.
pub struct Gateway {
    child: Child,
    pub addr: SocketAddr,
}

impl Gateway {
    /// `tdx ARGS --listen 127.0.0.1:0` (ARGS holds `gateway` and its options).
    pub fn start(args: &[&str]) -> Gateway {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tdx"))
            .args(args)
            .args(["--listen", "127.0.0.1:0"])
            .env("TDX_ENGINE_LOOPBACK_ONLY", "1")
            .env_remove("TDX_GATEWAY_TOKEN")
            .env_remove("RUST_LOG")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("tdx starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let addr = line
            .trim()
            .strip_prefix("listening http://")
            .and_then(|a| a.strip_suffix('/'))
            .unwrap_or_else(|| panic!("tdx gateway printed {line:?}"))
            .parse()
            .unwrap();
        Gateway { child, addr }
    }

    /// `tdx --local gateway EXTRA`.
    pub fn local(extra: &[&str]) -> Gateway {
        let mut args = vec!["--local", "gateway"];
        args.extend_from_slice(extra);
        Gateway::start(&args)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Non-empty chunks of a chunked body (0 when it was not chunked).
    pub chunks: usize,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
}

/// `GET path` with `headers`, on a connection of its own.
pub fn get(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Response {
    request(addr, "GET", path, headers, b"")
}

/// `METHOD path` with `headers` and `body` (its length sent when not
/// empty), on a connection of its own.
pub fn request(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Response {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() {
        request.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    // A server that refuses the body may answer and close before reading it all.
    let _ = stream.write_all(body);
    let mut raw = Vec::new();
    // A reset after the response (a refused body left unread) still leaves the response read.
    if let Err(e) = stream.read_to_end(&mut raw) {
        assert!(!raw.is_empty(), "{method} {path}: {e}");
    }
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("a header block");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.lines();
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    let mut chunks = 0;
    if headers.iter().any(|(k, v)| k == "transfer-encoding" && v.contains("chunked")) {
        (body, chunks) = dechunk(&body);
    }
    Response { status, headers, body, chunks }
}

/// A chunked body's bytes and its number of non-empty chunks.
fn dechunk(mut raw: &[u8]) -> (Vec<u8>, usize) {
    let mut out = Vec::new();
    let mut chunks = 0;
    loop {
        let line_end = raw.windows(2).position(|w| w == b"\r\n").expect("a chunk size line");
        let size = usize::from_str_radix(std::str::from_utf8(&raw[..line_end]).unwrap().trim(), 16).unwrap();
        raw = &raw[line_end + 2..];
        if size == 0 {
            return (out, chunks);
        }
        chunks += 1;
        out.extend_from_slice(&raw[..size]);
        raw = &raw[size + 2..];
    }
}

/// Resident memory of process `pid`, in KiB.
pub fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// A WebSocket client.
pub struct WsClient {
    socket: tungstenite::WebSocket<TcpStream>,
}

impl WsClient {
    /// Connects to `path`; `receive_buffer`: a small kernel receive buffer,
    /// so that a client that stops reading stalls the sender soon.
    pub fn connect(addr: SocketAddr, path: &str, receive_buffer: Option<usize>) -> WsClient {
        let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        if let Some(size) = receive_buffer {
            socket.set_recv_buffer_size(size).unwrap();
        }
        socket.connect(&addr.into()).unwrap();
        let stream: TcpStream = socket.into();
        let (socket, _) = tungstenite::client(format!("ws://{addr}{path}"), stream).expect("WebSocket handshake");
        WsClient { socket }
    }

    /// The next text message as JSON, waiting at most `wait`.
    pub fn next_json(&mut self, wait: Duration) -> Value {
        self.socket.get_mut().set_read_timeout(Some(wait)).unwrap();
        loop {
            match self.socket.read().expect("a message in time") {
                tungstenite::Message::Text(t) => return serde_json::from_str(t.as_str()).unwrap(),
                tungstenite::Message::Close(c) => panic!("closed: {c:?}"),
                _ => continue,
            }
        }
    }

    pub fn send_text(&mut self, text: &str) {
        self.socket.send(tungstenite::Message::text(text)).unwrap();
    }
}

/// The market every reference server of these tests serves (seed 1, as `--local`).
fn market_data() -> Arc<MarketData> {
    Arc::new(MarketData::new(tdx_sim::Market::new(1)))
}

/// Reference servers on 127.0.0.1 with these faults, served from a thread
/// of their own for the life of the test process; their addresses.
pub fn reference_servers(faults: Vec<tdx_sim::Faults>) -> Vec<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async move {
            let data = market_data();
            let mut addrs = Vec::new();
            for (i, f) in faults.into_iter().enumerate() {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                addrs.push(listener.local_addr().unwrap().to_string());
                tokio::spawn(tdx_sim::ReferenceServer::new(data.clone(), i, f).run(listener));
            }
            tx.send(addrs).unwrap();
            std::future::pending::<()>().await;
        });
    });
    rx.recv().unwrap()
}

/// A reference server whose connections, once started, also receive a
/// flood of valid 0x0547 quote pushes for `codes`, between its own frames.
pub struct FloodServer {
    pub host: String,
    pub codes: Vec<String>,
    on: Arc<AtomicBool>,
    sent: Arc<AtomicU64>,
}

impl FloodServer {
    pub fn start(&self) {
        self.on.store(true, Ordering::SeqCst);
    }

    pub fn stop(&self) {
        self.on.store(false, Ordering::SeqCst);
    }

    /// Pushes injected so far.
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::SeqCst)
    }
}

/// Injected pushes per millisecond, while on.
const FLOOD_PER_MS: usize = 12;

pub fn push_flood_server() -> FloodServer {
    let codes: Vec<String> = ["sz000001", "sh600000", "sz000002", "sh600036", "sh510300"].map(String::from).to_vec();
    let on = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let (tx, rx) = std::sync::mpsc::channel();
    let (on2, sent2, codes2) = (on.clone(), sent.clone(), codes.clone());
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async move {
            let data = market_data();
            let codes: Vec<SecurityCode> = codes2.iter().map(|c| c.parse().unwrap()).collect();
            let request = Refresh { targets: codes.iter().map(|&c| RefreshTarget::from(c)).collect() };
            // Single-record payloads, as the reference server pushes them.
            let mut payloads = Vec::new();
            for seq in 1..=40u64 {
                for c in &codes {
                    let listing = data.market().listing(*c).unwrap();
                    let record = tdx_sim::responder::refresh_record(data.market(), listing, seq);
                    let mut payload = Vec::new();
                    request.encode_reply(&RefreshReply { records: vec![record] }, &mut payload).unwrap();
                    payloads.push(payload);
                }
            }
            let payloads = Arc::new(payloads);
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap().to_string()).unwrap();
            loop {
                let (tcp, _) = listener.accept().await.unwrap();
                tcp.set_nodelay(true).unwrap();
                let (data, payloads, on, sent) = (data.clone(), payloads.clone(), on2.clone(), sent2.clone());
                tokio::spawn(async move {
                    let (server_side, ours) = tokio::io::duplex(256 * 1024);
                    let server = tdx_sim::ReferenceServer::new(data, 0, tdx_sim::Faults::default());
                    tokio::spawn(async move { server.serve(server_side, tdx_sim::rng::Rng::new(1)).await });
                    let (mut from_server, mut to_server) = tokio::io::split(ours);
                    let (mut tcp_read, mut tcp_write) = tcp.into_split();
                    tokio::spawn(async move { tokio::io::copy(&mut tcp_read, &mut to_server).await });
                    // The server's frames, whole, so pushes go only between them.
                    let (frames_tx, mut frames) = tokio::sync::mpsc::channel::<Vec<u8>>(64);
                    tokio::spawn(async move {
                        loop {
                            let mut frame = vec![0u8; RESPONSE_HEADER_LEN];
                            if from_server.read_exact(&mut frame).await.is_err() {
                                return;
                            }
                            let header = ResponseHeader::parse(frame[..].try_into().unwrap()).unwrap();
                            let mut body = vec![0u8; usize::from(header.zip_length)];
                            if from_server.read_exact(&mut body).await.is_err() {
                                return;
                            }
                            frame.extend_from_slice(&body);
                            if frames_tx.send(frame).await.is_err() {
                                return;
                            }
                        }
                    });
                    let mut tick = tokio::time::interval(Duration::from_millis(1));
                    let mut next = 0usize;
                    loop {
                        tokio::select! {
                            frame = frames.recv() => {
                                let Some(frame) = frame else { return };
                                if tcp_write.write_all(&frame).await.is_err() {
                                    return;
                                }
                            }
                            _ = tick.tick() => {
                                if !on.load(Ordering::Relaxed) {
                                    continue;
                                }
                                let mut out = Vec::new();
                                for _ in 0..FLOOD_PER_MS {
                                    let payload = &payloads[next % payloads.len()];
                                    let msg_id = 0x6000_0000u32.wrapping_add(next as u32);
                                    encode_response(&mut out, msg_id, Refresh::MSG_TYPE, payload, Compression::Never).unwrap();
                                    next += 1;
                                }
                                if tcp_write.write_all(&out).await.is_err() {
                                    return;
                                }
                                sent.fetch_add(FLOOD_PER_MS as u64, Ordering::Relaxed);
                            }
                        }
                    }
                });
            }
        });
    });
    FloodServer { host: rx.recv().unwrap(), codes, on, sent }
}
