//! The reference 7709 server: one task per connection, generic over the
//! stream so the same code runs on tokio sockets and in turmoil.
//!
//! Per connection: requests are read with the codec's bounded
//! `RequestDecoder` (7709 and MAC prefixes alike) and answered one at a
//! time, in order, each reply written whole (pytdx needs the header and
//! body in one write); MAC replies carry msg_id 0, as real MAC servers'. Replies are
//! compressed when that makes them smaller. A connection that sent a 0x0547
//! refresh later receives unsolicited 0x0547 pushes for those codes, one
//! single-record frame per code every [`PUSH_INTERVAL`]; others never get a
//! push. A malformed request closes that connection only.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tracing::{debug, info, warn};

use tdx_engine::proto::commands::{Command, Refresh, RefreshReply};
use tdx_engine::proto::frame::{encode_response, ResponseHeader};
use tdx_engine::proto::{Compression, Family, Reply, Request, RequestDecoder};

use tdx_engine::proto::ex::ExPortRequest;

use crate::ex::mode::ExMode;
use crate::faults::{FaultHandle, Faults, MISMATCH_MESSAGE, THROTTLE_STALL};
use crate::market_data::MarketData;
use crate::responder::{refresh_record, respond};
use crate::rng::Rng;

/// zlib level for replies: real servers compress large replies.
const COMPRESSION: Compression = Compression::IfSmaller(6);
/// How often a subscribed connection receives a push.
pub const PUSH_INTERVAL: Duration = Duration::from_millis(500);
/// Push frames use their own msg_id space, so they never repeat a request's id.
const PUSH_MSG_ID_BASE: u32 = 0x5000_0000;

/// Something that accepts connections: a tokio or a turmoil listener.
pub trait Listener: Send + 'static {
    /// The connection type.
    type Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    /// Waits for the next connection.
    fn accept(&self) -> impl Future<Output = io::Result<(Self::Stream, SocketAddr)>> + Send;
}

impl Listener for tokio::net::TcpListener {
    type Stream = tokio::net::TcpStream;
    async fn accept(&self) -> io::Result<(Self::Stream, SocketAddr)> {
        let (stream, peer) = tokio::net::TcpListener::accept(self).await?;
        stream.set_nodelay(true)?;
        Ok((stream, peer))
    }
}

impl Listener for turmoil::net::TcpListener {
    type Stream = turmoil::net::TcpStream;
    async fn accept(&self) -> io::Result<(Self::Stream, SocketAddr)> {
        turmoil::net::TcpListener::accept(self).await
    }
}

/// Feeds the decoder whatever bytes are ready without waiting; false when
/// the peer has closed.
async fn take_ready<S: AsyncRead + Unpin>(
    stream: &mut S,
    decoder: &mut RequestDecoder,
    buf: &mut [u8],
) -> io::Result<bool> {
    loop {
        let room = decoder.staging_room().min(buf.len());
        if room == 0 {
            return Ok(true);
        }
        let mut read = tokio::io::ReadBuf::new(&mut buf[..room]);
        let polled = std::future::poll_fn(|cx| {
            std::task::Poll::Ready(std::pin::Pin::new(&mut *stream).poll_read(cx, &mut read))
        })
        .await;
        match polled {
            std::task::Poll::Pending => return Ok(true),
            std::task::Poll::Ready(result) => {
                result?;
                let n = read.filled().len();
                if n == 0 {
                    return Ok(false);
                }
                decoder.feed(&buf[..n]).map_err(invalid)?;
            }
        }
    }
}

/// One reference server: a market's data, its index (in its name), its faults.
#[derive(Debug, Clone)]
pub struct ReferenceServer {
    data: Arc<MarketData>,
    index: usize,
    faults: FaultHandle,
    stats: Arc<ServerStats>,
    /// A connection's push flood stops this long after its last refresh
    /// (`None`: it goes on until the connection ends). Not a fault: heat
    /// that moves between connections, for the skew benchmark.
    push_flood_for: Option<Duration>,
    /// A 7727 server in this mode ([`ExMode`]):
    /// it answers only the EX requests the mode answers, and closes a
    /// connection that sends a request of another family (a real 7727
    /// server speaks no 7709).
    ex_mode: Option<ExMode>,
}

/// What a server saw, shared across restarts when given to
/// [`ReferenceServer::with_handles`].
#[derive(Debug, Default)]
pub struct ServerStats {
    /// Connections accepted.
    pub connections: AtomicU64,
    /// Requests that arrived before the previous request on the same
    /// connection was answered: a client with more than one request in
    /// flight on a socket (the engine must never do this).
    pub pipelined: AtomicU64,
    /// Requests decoded (every command).
    pub requests: AtomicU64,
    /// Connections stalled and closed for going over the throttle rate.
    pub throttled: AtomicU64,
    /// Requests of another family a 7727 server received (it closes the
    /// connection): the engine must never mix families on a connection.
    pub foreign: AtomicU64,
}

impl ReferenceServer {
    /// Server number `index` over `data`, with `faults`.
    pub fn new(data: Arc<MarketData>, index: usize, faults: Faults) -> Self {
        Self::with_handles(data, index, FaultHandle::new(faults), Arc::default())
    }

    /// A server whose faults and stats outlive it: a simulation restarts
    /// servers and keeps steering and counting them.
    pub fn with_handles(data: Arc<MarketData>, index: usize, faults: FaultHandle, stats: Arc<ServerStats>) -> Self {
        Self { data, index, faults, stats, push_flood_for: None, ex_mode: None }
    }

    /// Serves as a 7727 server in `mode` instead of a 7709 one: EX requests
    /// only (answered from the same extended market as the 7709 server's),
    /// those `mode` leaves unanswered left without a reply.
    pub fn as_ex(mut self, mode: ExMode) -> Self {
        self.ex_mode = Some(mode);
        self
    }

    /// Ends each connection's push flood `after` its last refresh (a new
    /// refresh restarts it).
    pub fn with_push_flood_for(mut self, after: Option<Duration>) -> Self {
        self.push_flood_for = after;
        self
    }

    /// The live fault settings.
    pub fn faults(&self) -> FaultHandle {
        self.faults.clone()
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.stats.connections.load(Ordering::Relaxed)
    }

    /// Requests decoded so far.
    pub fn requests(&self) -> u64 {
        self.stats.requests.load(Ordering::Relaxed)
    }

    /// Accepts connections forever, one task each.
    pub async fn run<L: Listener>(self, listener: L) -> io::Result<()> {
        self.accept_loop(listener, false).await
    }

    /// [`run`](Self::run) inside a `LocalSet` (a turmoil host): each
    /// connection is a task of the set, so when the host crashes (its
    /// runtime and set dropped) the connections end in the order they were
    /// accepted. Tasks of the runtime itself end in an order sharded by
    /// tokio's process-wide task ids, which would make a crash replay
    /// differently after other simulations ran in the same process.
    pub async fn run_local<L: Listener>(self, listener: L) -> io::Result<()> {
        self.accept_loop(listener, true).await
    }

    async fn accept_loop<L: Listener>(self, listener: L, local: bool) -> io::Result<()> {
        loop {
            let (stream, peer) = listener.accept().await?;
            let n = self.stats.connections.fetch_add(1, Ordering::Relaxed);
            if self.faults.get().refuse_connections {
                debug!(server = self.index, %peer, "refusing connection");
                drop(stream);
                continue;
            }
            let server = self.clone();
            let connection = async move {
                let seed = server.data.market().seed() ^ (server.index as u64) << 32 ^ n;
                match server.serve(stream, Rng::derive(seed, 7)).await {
                    Ok(()) => debug!(server = server.index, %peer, "connection closed"),
                    Err(e) => info!(server = server.index, %peer, error = %e, "connection ended"),
                }
            };
            if local {
                tokio::task::spawn_local(connection);
            } else {
                tokio::spawn(connection);
            }
        }
    }

    /// Serves one connection until the peer closes, a fault closes it, or
    /// a request is malformed.
    pub async fn serve<S: AsyncRead + AsyncWrite + Unpin>(&self, mut stream: S, mut rng: Rng) -> io::Result<()> {
        let mut decoder = RequestDecoder::new();
        let mut buf = vec![0u8; 64 * 1024];
        let mut subscription: Option<Refresh> = None;
        let mut push_seq = 0u64;
        let mut push_id = 0u32;
        let mut pushes = tokio::time::interval(PUSH_INTERVAL);
        pushes.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut flood = tokio::time::interval(Duration::from_secs(3600));
        let mut flood_rate = 0;
        // The last refresh, which a flood with an end (`push_flood_for`) counts from.
        let mut refreshed = tokio::time::Instant::now();
        // Arrival times of this connection's requests in the last second (throttle).
        let mut recent: std::collections::VecDeque<tokio::time::Instant> = std::collections::VecDeque::new();
        loop {
            let faults = self.faults.get();
            let rate = faults.push_flood.map_or(0, |f| f.rate_per_sec);
            if rate != flood_rate {
                flood_rate = rate;
                let period = if rate == 0 { Duration::from_secs(3600) } else { Duration::from_secs(1) / rate };
                flood = tokio::time::interval(period);
            }
            // Biased: a random branch order would make simulations unrepeatable.
            tokio::select! {
                biased;
                read = stream.read(&mut buf[..decoder.staging_room().min(64 * 1024)]) => {
                    let n = read?;
                    if n == 0 {
                        return Ok(());
                    }
                    decoder.feed(&buf[..n]).map_err(invalid)?;
                    let mut answered = 0u32;
                    loop {
                        let frame = match decoder.next_frame() {
                            Ok(Some(frame)) => frame,
                            Ok(None) => break,
                            Err(e) => {
                                warn!(server = self.index, error = %e, "malformed request stream; closing");
                                return Err(invalid(e));
                            }
                        };
                        let request = match Request::decode_frame(&frame) {
                            Ok(request) => request,
                            Err(e) => {
                                warn!(server = self.index, msg_type = frame.header.msg_type, error = %e, "malformed request; closing");
                                return Err(invalid(e));
                            }
                        };
                        let ex_answered = match (self.ex_mode, request.as_ex()) {
                            (None, _) => true,
                            (Some(mode), Some(ex)) => mode.answers(&ExPortRequest::Ex(ex)),
                            (Some(_), None) => {
                                warn!(server = self.index, msg_type = frame.header.msg_type, "a 7727 server got another family's request; closing");
                                self.stats.foreign.fetch_add(1, Ordering::Relaxed);
                                return Ok(());
                            }
                        };
                        if answered > 0 {
                            // It came in the same read as one not yet answered then.
                            self.stats.pipelined.fetch_add(1, Ordering::Relaxed);
                        }
                        answered += 1;
                        self.stats.requests.fetch_add(1, Ordering::Relaxed);
                        if let Request::Refresh(r) = &request {
                            subscription = Some(r.clone());
                            refreshed = tokio::time::Instant::now();
                            if self.push_flood_for.is_some() {
                                // A flood that ended starts afresh, not with a burst of missed ticks.
                                flood.reset();
                            }
                        }
                        let faults = self.faults.get();
                        if let Some(rate) = faults.throttle_per_sec {
                            let now = tokio::time::Instant::now();
                            recent.push_back(now);
                            while recent.front().is_some_and(|t| now.duration_since(*t) >= Duration::from_secs(1)) {
                                recent.pop_front();
                            }
                            if recent.len() > rate as usize {
                                debug!(server = self.index, rate, "throttled: stalling, then closing");
                                self.stats.throttled.fetch_add(1, Ordering::Relaxed);
                                tokio::time::sleep(THROTTLE_STALL).await;
                                return Ok(());
                            }
                        }
                        if rng.chance(faults.stall_per_mille) {
                            tokio::time::sleep(faults.stall).await;
                        }
                        if !ex_answered {
                            // The 2026 mode leaves it unanswered on an open connection.
                            continue;
                        }
                        let session = matches!(request, Request::Handshake(_) | Request::LegacySetup(_));
                        let payload = if faults.fail_handshake && matches!(request, Request::Handshake(_)) {
                            vec![0u8; 10]
                        } else if faults.fail_handshake && matches!(request, Request::ExLogin(_)) {
                            // Shorter than any login reply.
                            vec![0u8; 1]
                        } else if faults.mismatch && session && faults.hostile_text {
                            crate::hostile::hostile_mismatch_payload()
                        } else if faults.mismatch && session {
                            mismatch_payload()
                        } else if faults.empty_data && !session && !matches!(request, Request::Heartbeat(_)) {
                            vec![0u8; 2]
                        } else {
                            let mut payload = Vec::new();
                            let reply = if faults.hostile_text {
                                crate::hostile::respond_hostile(&self.data, self.index, &request)
                            } else {
                                respond(&self.data, self.index, &request)
                            };
                            request.encode_reply(&reply, &mut payload).map_err(invalid)?;
                            payload
                        };
                        let delay = faults.latency + jitter(&mut rng, faults.jitter);
                        if !delay.is_zero() {
                            tokio::time::sleep(delay).await;
                        }
                        // Whatever the client sent meanwhile is read now, before the
                        // reply: a request among it was sent with this one unanswered.
                        if !take_ready(&mut stream, &mut decoder, &mut buf).await? {
                            return Ok(());
                        }
                        // MAC servers answer with msg_id 0; 7709 (and EX) ones echo the request's.
                        let reply_id = match request.family() {
                            Family::Mac => 0,
                            Family::Std | Family::Ex => frame.header.msg_id,
                        };
                        let keep_open = self
                            .write_frame(&mut stream, &mut rng, &faults, reply_id, frame.header.msg_type, &payload)
                            .await?;
                        if !keep_open {
                            return Ok(());
                        }
                    }
                }
                _ = pushes.tick(), if subscription.is_some() => {
                    // One frame per code: a single-record 0x0547 payload needs no
                    // request codes to delimit, so every client can parse it.
                    push_seq += 1;
                    let refresh = subscription.as_ref().expect("guarded");
                    for listing in refresh.targets.iter().filter_map(|t| self.data.market().listing(t.target.code)) {
                        let record = refresh_record(self.data.market(), listing, push_seq);
                        let mut payload = Vec::new();
                        refresh.encode_reply(&RefreshReply { records: vec![record] }, &mut payload).map_err(invalid)?;
                        push_id = push_id.wrapping_add(1);
                        let mut out = Vec::new();
                        encode_response(&mut out, PUSH_MSG_ID_BASE.wrapping_add(push_id), Refresh::MSG_TYPE, &payload, COMPRESSION)
                            .map_err(invalid)?;
                        stream.write_all(&out).await?;
                    }
                }
                _ = flood.tick(), if subscription.is_some() && flood_rate > 0
                    && self.push_flood_for.is_none_or(|d| refreshed.elapsed() < d) => {
                    let size = faults.push_flood.map_or(0, |f| f.size).min(u16::MAX as usize);
                    let payload: Vec<u8> = (0..size).map(|_| rng.next_u64() as u8).collect();
                    let mut out = Vec::new();
                    push_id = push_id.wrapping_add(1);
                    let msg_id = PUSH_MSG_ID_BASE.wrapping_add(push_id);
                    encode_response(&mut out, msg_id, Refresh::MSG_TYPE, &payload, Compression::Never).map_err(invalid)?;
                    stream.write_all(&out).await?;
                }
            }
        }
    }

    /// Writes one reply with whatever faults fire. Returns false when the
    /// connection must close after it.
    async fn write_frame<S: AsyncWrite + Unpin>(
        &self,
        stream: &mut S,
        rng: &mut Rng,
        faults: &Faults,
        msg_id: u32,
        msg_type: u16,
        payload: &[u8],
    ) -> io::Result<bool> {
        let msg_id = if rng.chance(faults.wrong_id_per_mille) { msg_id.wrapping_add(1).max(1) } else { msg_id };
        let msg_type = if rng.chance(faults.wrong_type_per_mille) { msg_type ^ 0x0100 } else { msg_type };
        let corrupt_zlib = rng.chance(faults.corrupt_zlib_per_mille);
        let payload = if rng.chance(faults.truncated_body_per_mille) { &payload[..payload.len() / 2] } else { payload };
        let compression = if corrupt_zlib { Compression::IfSmaller(1) } else { COMPRESSION };
        let mut out = Vec::new();
        encode_response(&mut out, msg_id, msg_type, payload, compression).map_err(invalid)?;
        let header = ResponseHeader::parse(out[..16].try_into().expect("header")).map_err(invalid)?;
        if corrupt_zlib {
            if header.is_compressed() {
                // Break the deflate data after the 2-byte zlib header.
                for b in out.iter_mut().skip(18).step_by(3) {
                    *b ^= 0x5a;
                }
            } else {
                // Too small to compress: announce a longer payload than the body holds.
                out[14..16].copy_from_slice(&(header.length.saturating_add(1)).to_le_bytes());
            }
        }
        if rng.chance(faults.oversize_per_mille) {
            out[14..16].copy_from_slice(&u16::MAX.to_le_bytes());
            out[12..14].copy_from_slice(&(header.zip_length.max(8)).to_le_bytes());
            out.resize(16 + usize::from(header.zip_length.max(8)), 0);
        }
        if rng.chance(faults.bad_magic_per_mille) {
            out[0] ^= 0xff;
        }
        if rng.chance(faults.garbage_per_mille) {
            let garbage: Vec<u8> = (0..1 + rng.below(64)).map(|_| 0x20 | (rng.next_u64() as u8 & 0x7f)).collect();
            stream.write_all(&garbage).await?;
        }
        if rng.chance(faults.close_mid_frame_per_mille) {
            stream.write_all(&out[..out.len() / 2]).await?;
            stream.flush().await?;
            return Ok(false);
        }
        match faults.drip {
            Some(pause) => {
                for byte in &out {
                    stream.write_all(std::slice::from_ref(byte)).await?;
                    stream.flush().await?;
                    tokio::time::sleep(pause).await;
                }
            }
            None => stream.write_all(&out).await?,
        }
        Ok(true)
    }
}

/// [`MISMATCH_MESSAGE`] in GBK, as the whole reply payload.
pub fn mismatch_payload() -> Vec<u8> {
    let (bytes, _, unmappable) = encoding_rs::GBK.encode(MISMATCH_MESSAGE);
    debug_assert!(!unmappable, "the mismatch message is GBK");
    bytes.into_owned()
}

fn jitter(rng: &mut Rng, max: Duration) -> Duration {
    let micros = max.as_micros() as u64;
    if micros == 0 {
        Duration::ZERO
    } else {
        Duration::from_micros(rng.below(micros + 1))
    }
}

fn invalid(e: impl std::error::Error + Send + Sync + 'static) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

/// The reply a server gives to `request`, as wire payload (for tests and truth).
pub fn reply_payload(data: &MarketData, server: usize, request: &Request) -> (Reply, Vec<u8>) {
    let reply = respond(data, server, request);
    let mut payload = Vec::new();
    request.encode_reply(&reply, &mut payload).expect("the market's replies encode");
    (reply, payload)
}
