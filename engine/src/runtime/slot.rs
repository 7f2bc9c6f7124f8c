//! Slot tasks: one per TCP connection, on a worker runtime.
//!
//! A slot task connects, does the 0x000d handshake, then serves the
//! engine: it writes the requests it is given, reads and decodes frames
//! (zlib included), parses the frame that answers its request in flight,
//! and applies everything to the locked core ([`super::locked`]) as
//! Supervisor inputs, outside the lock for all the decoding. When its own
//! input makes the Supervisor send on this connection (the next queued
//! request after a reply), the task writes it at once; sends caused by
//! others' inputs arrive on its command channel. It never decides
//! anything: matching, retries and deadlines are the Supervisor's.
//!
//! Bounds, per round and per slot: at most 256 KiB read and 64 frames /
//! 4 MiB decoded before the task yields to its neighbours; raw staging and
//! decoded bytes are reserved from the engine budgets, and a slot that
//! cannot reserve pauses its reads (TCP backpressure), except for the reply
//! to its own request in flight, which is always passed on (replies first,
//! then backpressure). A panic inside the task is caught and reported as a
//! failure of that slot only.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tracing::{debug, Instrument};

use super::connector::{Connector, Detach};
use super::locked::Outgoing;
use crate::budget::{Budget, Reservation};
use crate::proto::commands::{Command, Handshake};
use crate::proto::limits::{PAYLOAD_BYTES_MAX, RAW_STAGING_BYTES_MAX, RESPONSE_FRAME_BYTES_MAX, ROUND_WIRE_BYTES_MAX};
use crate::proto::{Frame, FrameDecoder, ProtoError, Request, RoundEnd, RoundLimits};
use crate::supervisor::{Endpoint, FrameBody, Input, Sent, SlotError, SlotRef};

/// Decoded bytes per slot the default decoded budget allows (the budget is
/// `pool_size` times this unless set).
pub const SLOT_DECODED_BYTES_DEFAULT: usize = 8 * 1024 * 1024;
/// msg_id of the handshake a slot sends on connect; the Supervisor never
/// sees it (its own ids come from a separate counter and the exchange is
/// over before the slot is ready).
const HANDSHAKE_MSG_ID: u32 = 1;
/// Bytes one socket read asks for at most.
pub const SLOT_READ_BYTES: usize = 64 * 1024;
/// The smallest engine raw budget that cannot stall: a read reserves what
/// the decoder stages (less than one whole frame, since whole frames are
/// decoded before the next read) plus the read itself.
pub const RAW_BUDGET_BYTES_MIN: usize = RESPONSE_FRAME_BYTES_MAX + SLOT_READ_BYTES;
/// The smallest decoded budget that cannot stall: one largest payload
/// (a push waits until its bytes fit).
pub const DECODED_BUDGET_BYTES_MIN: usize = PAYLOAD_BYTES_MAX;
const _: () = assert!(RAW_BUDGET_BYTES_MIN <= RAW_STAGING_BYTES_MAX);
const _: () = assert!(DECODED_BUDGET_BYTES_MIN <= SLOT_DECODED_BYTES_DEFAULT);
/// How long a slot waits before retrying a budget it could not reserve.
const BUDGET_RETRY: Duration = Duration::from_millis(1);

/// What the core tells a slot task (for sends caused by others' inputs).
#[derive(Debug)]
pub(crate) enum SlotCommand {
    /// Write this request. (Each generation has its own channel, so
    /// commands carry no generation.)
    Send {
        msg_id: u32,
        request: Arc<Request>,
        /// The request's frame as the client encoded it (msg_id 0), on its
        /// first send; `None`: encode `request` here.
        frame: Option<Vec<u8>>,
    },
    /// Close the socket and end the task.
    Retire,
    /// Move this connection to another worker runtime (`PerWorker`
    /// migration): the socket is re-registered with that runtime's reactor
    /// and the task goes on there, its state intact. Ignored before the
    /// slot is ready and by connectors that cannot move connections.
    Migrate { to: tokio::runtime::Handle },
}

/// Where a slot task's inputs go: the engine's locked core
/// ([`super::locked::Core`]); a test may stand a channel in.
pub(crate) trait Reports: Send + Sync + 'static {
    /// Applies `input` from the task at `at`; returns the request the task
    /// must now write, if the input caused one.
    fn slot_input(&self, at: SlotRef, input: Input) -> Result<Option<Outgoing>, Finished>;
    /// The engine's clock, for send times.
    fn now(&self) -> std::time::Instant;
}

/// The engine has finished: a slot task's report has no one to go to.
#[derive(Debug)]
pub(crate) struct Finished;

/// What every slot task shares with the engine: the budgets it draws from
/// and the count of slot tasks that panicked.
#[derive(Debug, Clone)]
pub(crate) struct EngineShared {
    pub(crate) raw: Arc<Budget>,
    pub(crate) decoded: Arc<Budget>,
    pub(crate) slot_panics: Arc<AtomicUsize>,
    /// Bytes read from every socket since start.
    pub(crate) bytes_read: Arc<std::sync::atomic::AtomicU64>,
}

/// Everything a slot task needs for one generation.
pub(crate) struct SlotTask<C: Connector> {
    /// The slot, epoch and generation this task serves.
    pub(crate) at: SlotRef,
    pub(crate) endpoint: Endpoint,
    pub(crate) connect_timeout: Duration,
    pub(crate) connector: Arc<C>,
    /// Where its inputs go.
    pub(crate) core: Arc<dyn Reports>,
    pub(crate) budgets: EngineShared,
}

/// Why a slot task ended early, before reporting.
enum End {
    /// Report this failure.
    Failed(SlotError),
    /// Retired: report `SlotClosed`.
    Retired,
    /// The engine has finished: report nothing.
    EngineGone,
    /// The task moved to another runtime, which reports its end.
    Migrated,
    /// Asked to move (internal: the exchange loop hands this to its caller).
    Migrate(tokio::runtime::Handle),
}

/// A ready connection's state, carried across a migration.
struct Exchanging {
    /// The request in flight, its msg_id and when it was written: the frame
    /// that answers it is parsed, and every frame read meanwhile carries the
    /// [`Sent`].
    awaiting: Option<(Sent, Arc<Request>)>,
    commands: mpsc::Receiver<SlotCommand>,
}

impl<C: Connector> SlotTask<C> {
    /// Runs the task to its end; panics inside are caught and reported.
    pub(crate) async fn run(self, commands: mpsc::Receiver<SlotCommand>) {
        let span = self.span();
        let (at, core, budgets) = (self.at, self.core.clone(), self.budgets.clone());
        let outcome = CatchPanic(Box::pin(self.serve(commands).instrument(span))).await;
        report_end(at, &*core, &budgets, outcome);
    }

    /// Goes on with a migrated connection on the current runtime. (A boxed
    /// `Send` future: migration makes the task's future recursive.)
    fn resume(self, parked: Parked, state: Exchanging) -> Pin<Box<dyn Future<Output = ()> + Send + 'static>> {
        Box::pin(async move {
            let span = self.span();
            let (at, core, budgets) = (self.at, self.core.clone(), self.budgets.clone());
            let outcome = CatchPanic(Box::pin(
                async move {
                    match self.connector.attach(parked.socket) {
                        Ok(stream) => {
                            debug!("connection migrated to this worker");
                            let (decoder, buf, raw) = (parked.decoder, parked.buf, parked.raw);
                            let budgets = self.budgets.clone();
                            let conn =
                                Conn { stream, decoder, buf, budgets, raw, wire: Vec::new(), frames: Vec::new() };
                            self.exchange_phase(conn, state, None).await
                        }
                        Err(e) => End::Failed(SlotError::Io(format!("cannot attach a migrated connection: {e}"))),
                    }
                }
                .instrument(span),
            ))
            .await;
            report_end(at, &*core, &budgets, outcome);
        })
    }

    fn span(&self) -> tracing::Span {
        let SlotRef { slot, generation, .. } = self.at;
        tracing::debug_span!("slot", slot = slot.0, generation = generation.0, endpoint = %self.endpoint)
    }

    /// Applies `input` to the core; returns the request it made this
    /// connection send, if any.
    fn report(&self, input: Input) -> Result<Option<Outgoing>, End> {
        self.core.slot_input(self.at, input).map_err(|_| End::EngineGone)
    }

    async fn serve(self, mut commands: mpsc::Receiver<SlotCommand>) -> End {
        let connect = self.connector.connect(&self.endpoint, self.connect_timeout);
        let stream = match before_ready(&mut commands, connect).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => return End::Failed(SlotError::Connect(e.to_string())),
            Err(end) => return end,
        };
        if let Err(end) = self.report(Input::SlotConnected { at: self.at }) {
            return end;
        }
        let mut conn = Conn::new(stream, self.budgets.clone());
        match before_ready(&mut commands, conn.handshake()).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => return End::Failed(error),
            Err(end) => return end,
        }
        let first = match self.report(Input::SlotReady { at: self.at }) {
            Ok(outgoing) => outgoing,
            Err(end) => return end,
        };
        self.exchange_phase(conn, Exchanging { awaiting: None, commands }, first).await
    }

    /// Serves a ready connection until it ends, moving it when asked.
    async fn exchange_phase(self, mut conn: Conn<C::Stream>, mut state: Exchanging, first: Option<Outgoing>) -> End {
        let mut first = first;
        loop {
            let to = match self.exchange_loop(&mut conn, &mut state, first.take()).await {
                Ok(End::Migrate(to)) => to,
                Ok(end) | Err(end) => return end,
            };
            let Conn { stream, decoder, buf, raw, .. } = conn;
            match self.connector.detach(stream) {
                Detach::Moved(socket) => {
                    let parked = Parked { socket, decoder, buf, raw };
                    to.spawn(self.resume(parked, state));
                    return End::Migrated;
                }
                Detach::Kept(stream) => {
                    conn = Conn {
                        stream,
                        decoder,
                        buf,
                        budgets: self.budgets.clone(),
                        raw,
                        wire: Vec::new(),
                        frames: Vec::new(),
                    };
                }
                Detach::Failed(e) => return End::Failed(SlotError::Io(format!("cannot move the connection: {e}"))),
            }
        }
    }

    async fn exchange_loop<S: AsyncRead + AsyncWrite + Unpin>(
        &self,
        conn: &mut Conn<S>,
        state: &mut Exchanging,
        first: Option<Outgoing>,
    ) -> Result<End, End> {
        let Exchanging { awaiting, commands } = state;
        if let Some(outgoing) = first {
            *awaiting = Some(self.write(conn, outgoing).await?);
        }
        let mut wire_this_round = 0usize;
        // Whole frames still staged after a round that hit its limits: they
        // are decoded before anything more is read, so a read never has to
        // reserve raw budget for more than a partial frame plus one read.
        let mut frames_staged = false;
        loop {
            tokio::select! {
                biased;
                command = commands.recv() => match command {
                    Some(SlotCommand::Send { msg_id, request, frame }) => {
                        *awaiting = Some(self.write(conn, Outgoing { msg_id, request, frame }).await?);
                    }
                    Some(SlotCommand::Migrate { to }) => return Ok(End::Migrate(to)),
                    other => return Ok(retired_or_gone(other)),
                },
                read = conn.fill(frames_staged, awaiting.is_some()) => {
                    let n = read.map_err(End::Failed)?;
                    wire_this_round += n;
                    let (mut frames, end) = conn.decode().map_err(|e| End::Failed(SlotError::Protocol(e.to_string())))?;
                    for frame in frames.drain(..) {
                        let sent = awaiting.as_ref().map(|(sent, _)| *sent);
                        let body = match &*awaiting {
                            Some((sent, request)) if frame.header.msg_id == sent.msg_id && frame.header.msg_type == request.msg_type() => {
                                let parsed = request.parse_reply(&frame.payload);
                                *awaiting = None;
                                match parsed {
                                    Ok(reply) => FrameBody::Reply(Box::new(reply)),
                                    Err(e) => match crate::proto::text::server_message(&frame.payload) {
                                        Some(text) => FrameBody::ServerMessage(text),
                                        None => FrameBody::Invalid(e),
                                    },
                                }
                            }
                            _ => FrameBody::Unparsed(frame.payload.clone()),
                        };
                        let bytes = frame.payload.len();
                        // Replies to sent requests first: a reply (at most one per
                        // slot, at most 64 KiB) never waits for the decoded budget;
                        // pushes do, which pauses this slot's reads.
                        let reservation = match body {
                            FrameBody::Unparsed(_) => self.reserve_decoded(bytes).await,
                            _ => Budget::try_reserve(&self.budgets.decoded, bytes),
                        };
                        let bad_reply = matches!(body, FrameBody::Invalid(_));
                        let input = Input::Frame { at: self.at, header: frame.header, body, sent };
                        let outgoing = self.report(input);
                        match reservation {
                            Some(r) if bad_reply && crate::mutants::on(crate::mutants::Mutant::DecodedBudgetLeakOnBadReply) => std::mem::forget(r),
                            // The frame's bytes have left with what the input caused.
                            other => drop(other),
                        }
                        if let Some(outgoing) = outgoing? {
                            *awaiting = Some(self.write(conn, outgoing).await?);
                        }
                    }
                    conn.frames = frames;
                    frames_staged = end != RoundEnd::NeedBytes;
                    if frames_staged || wire_this_round >= ROUND_WIRE_BYTES_MAX {
                        wire_this_round = 0;
                        tokio::task::yield_now().await;
                    }
                }
            }
        }
    }

    /// Writes a request and returns what the reply will be matched by.
    async fn write<S: AsyncRead + AsyncWrite + Unpin>(
        &self,
        conn: &mut Conn<S>,
        Outgoing { msg_id, request, frame }: Outgoing,
    ) -> Result<(Sent, Arc<Request>), End> {
        conn.write_request(msg_id, &request, frame).await.map_err(|e| End::Failed(SlotError::Io(e.to_string())))?;
        Ok((Sent { msg_id, at: self.core.now() }, request))
    }

    /// Decoded bytes from the engine budget; waits (pausing this slot's
    /// reads) while the budget is exhausted.
    async fn reserve_decoded(&self, bytes: usize) -> Option<Reservation> {
        if bytes == 0 {
            return None;
        }
        loop {
            if let Some(r) = Budget::try_reserve(&self.budgets.decoded, bytes) {
                return Some(r);
            }
            tokio::time::sleep(BUDGET_RETRY).await;
        }
    }
}

/// Applies a finished task's last input: `SlotClosed` after a retire,
/// `SlotFailed` otherwise (a panic included, counted apart).
fn report_end(at: SlotRef, core: &dyn Reports, budgets: &EngineShared, outcome: Result<End, String>) {
    let input = match outcome {
        Ok(End::EngineGone | End::Migrated) => return,
        Ok(End::Migrate(_)) => unreachable!("exchange_phase handles migration requests"),
        Ok(End::Retired) => Input::SlotClosed { at },
        Ok(End::Failed(error)) => Input::SlotFailed { at, error },
        Err(panic) => {
            budgets.slot_panics.fetch_add(1, Ordering::Relaxed);
            let error = SlotError::Io(format!("slot task panicked: {panic}"));
            tracing::error!(slot = at.slot.0, %error, "slot task panicked; retiring the slot");
            Input::SlotFailed { at, error }
        }
    };
    // A finished engine has nobody to tell.
    let _ = core.slot_input(at, input);
}

/// Runs `work` (connect or handshake) to its end unless the engine retires
/// the slot first. A migration request is ignored: a slot that is not ready
/// stays where it is. `work` is polled from one pinned future, so a command
/// arriving midway never restarts it (a restarted handshake would be sent twice).
async fn before_ready<T>(commands: &mut mpsc::Receiver<SlotCommand>, work: impl Future<Output = T>) -> Result<T, End> {
    tokio::pin!(work);
    loop {
        tokio::select! {
            biased;
            command = commands.recv() => match command {
                Some(SlotCommand::Migrate { .. }) => continue,
                other => return Err(retired_or_gone(other)),
            },
            done = &mut work => return Ok(done),
        }
    }
}

fn retired_or_gone(command: Option<SlotCommand>) -> End {
    match command {
        Some(SlotCommand::Retire) => End::Retired,
        // A Send before the slot is ready cannot happen; treat it as retire.
        Some(SlotCommand::Send { .. }) => End::Retired,
        // Callers handle migration themselves; reaching here is a stay.
        Some(SlotCommand::Migrate { .. }) => End::Retired,
        None => End::EngineGone,
    }
}

/// A connection in transit between runtimes.
struct Parked {
    socket: std::net::TcpStream,
    decoder: FrameDecoder,
    buf: Vec<u8>,
    raw: Option<Reservation>,
}

/// One connection's socket, decoder and raw-budget hold.
struct Conn<S> {
    stream: S,
    decoder: FrameDecoder,
    buf: Vec<u8>,
    budgets: EngineShared,
    /// Raw-budget bytes held for what the decoder stages.
    raw: Option<Reservation>,
    wire: Vec<u8>,
    /// One decode round's frames; kept so a round allocates nothing.
    frames: Vec<Frame>,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Conn<S> {
    fn new(stream: S, budgets: EngineShared) -> Self {
        Self {
            stream,
            decoder: FrameDecoder::new(),
            buf: vec![0; SLOT_READ_BYTES],
            budgets,
            raw: None,
            wire: Vec::new(),
            frames: Vec::new(),
        }
    }

    /// Writes `request` as a frame with `msg_id`: the `frame` the client
    /// encoded when there is one, else encoded here.
    async fn write_request(&mut self, msg_id: u32, request: &Request, frame: Option<Vec<u8>>) -> std::io::Result<()> {
        if let Some(mut frame) = frame {
            crate::proto::frame::set_request_msg_id(&mut frame, msg_id);
            return self.stream.write_all(&frame).await;
        }
        self.wire.clear();
        request
            .encode_frame(msg_id, &mut self.wire)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        self.stream.write_all(&self.wire).await
    }

    /// Reads more bytes unless whole frames are already staged (then 0:
    /// decode those first).
    async fn fill(&mut self, frames_staged: bool, reply_due: bool) -> Result<usize, SlotError> {
        if frames_staged {
            return Ok(0);
        }
        self.read(reply_due).await
    }

    /// Reads what the socket has (at most what staging allows), then
    /// accounts it in the raw budget before the decoder stages it. Waiting
    /// for bytes holds no reservation beyond what is already staged, so idle
    /// connections tie up nothing.
    async fn read(&mut self, reply_due: bool) -> Result<usize, SlotError> {
        let want = self.buf.len().min(self.decoder.staging_room());
        debug_assert!(want > 0, "a decode round leaves staging room");
        let read = self.stream.read(&mut self.buf[..want]).await;
        if crate::mutants::on(crate::mutants::Mutant::RawBudgetLeakOnError) && !matches!(read, Ok(1..)) {
            std::mem::forget(self.raw.take());
        }
        let n = read.map_err(|e| SlotError::Io(e.to_string()))?;
        self.budgets.bytes_read.fetch_add(n as u64, Ordering::Relaxed);
        if n == 0 {
            return Err(match self.decoder.finish() {
                Ok(()) => SlotError::PeerClosed,
                Err(e) => SlotError::Protocol(e.to_string()),
            });
        }
        self.account(n, reply_due).await;
        self.decoder.feed(&self.buf[..n]).map_err(|e| SlotError::Protocol(e.to_string()))?;
        Ok(n)
    }

    /// Reserves raw budget for `n` more staged bytes. Replies first: while
    /// this connection's request is in flight the read goes on even when the
    /// budget is spent (unaccounted, and bounded by this slot's own staging
    /// bound), so a reply never waits behind other slots' pushes; otherwise
    /// the slot waits, which pauses its reads (TCP backpressure).
    async fn account(&mut self, n: usize, reply_due: bool) {
        loop {
            if let Some(more) = Budget::try_reserve(&self.budgets.raw, n) {
                match &mut self.raw {
                    Some(held) => held.merge(more),
                    None => self.raw = Some(more),
                }
                return;
            }
            if reply_due {
                return;
            }
            tokio::time::sleep(BUDGET_RETRY).await;
        }
    }

    /// Decodes one round of frames and shrinks the raw hold to what stays staged.
    /// The frames come in the connection's kept vector, empty; hand it back
    /// (`conn.frames = frames`) when done.
    fn decode(&mut self) -> Result<(Vec<Frame>, RoundEnd), ProtoError> {
        let mut frames = std::mem::take(&mut self.frames);
        debug_assert!(frames.is_empty(), "the last round's frames were handed over");
        let round = self.decoder.decode_round(RoundLimits::default(), |f| frames.push(f))?;
        if let Some(raw) = &mut self.raw {
            raw.shrink_to(self.decoder.staged().min(raw.bytes()));
        }
        debug_assert!(self.decoder.staged() <= RAW_STAGING_BYTES_MAX);
        Ok((frames, round.end))
    }

    /// Sends the handshake and waits for its reply (frames before it are dropped).
    async fn handshake(&mut self) -> Result<(), SlotError> {
        let request: Request = Handshake::default().into();
        self.write_request(HANDSHAKE_MSG_ID, &request, None).await.map_err(|e| SlotError::Handshake(e.to_string()))?;
        loop {
            while let Some(frame) = self.decoder.next_frame().map_err(|e| SlotError::Handshake(e.to_string()))? {
                if frame.header.msg_id == HANDSHAKE_MSG_ID && frame.header.msg_type == Handshake::MSG_TYPE {
                    return Handshake::default()
                        .parse_reply(&frame.payload)
                        .map(|reply| debug!(server = %reply.server_name, "handshake done"))
                        .map_err(|e| match crate::proto::text::server_message(&frame.payload) {
                            // A 2026 server turning this client away in words.
                            Some(text) => SlotError::Mismatch(text),
                            None => SlotError::Handshake(e.to_string()),
                        });
                }
            }
            // The handshake's reply is due: it never waits for the budget.
            self.read(true).await.map_err(|e| match e {
                SlotError::Io(m) | SlotError::Protocol(m) => SlotError::Handshake(m),
                other => other,
            })?;
        }
    }
}

/// Polls a future, turning a panic into `Err(message)`.
struct CatchPanic<F>(Pin<Box<F>>);

impl<F: Future> Future for CatchPanic<F> {
    type Output = Result<F::Output, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.0.as_mut();
        match catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(panic) => {
                let message = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".to_owned());
                Poll::Ready(Err(message))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! The slot task against a minimal 7709 responder built from the codec.
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;
    use crate::proto::commands::{HandshakeReply, SecurityCount};
    use crate::proto::frame::encode_response;
    use crate::proto::{Compression, Market, Reply, RequestDecoder};
    use crate::runtime::connector::TcpConnector;
    use crate::supervisor::{Epoch, Generation, SlotId};

    /// Answers handshakes and count requests (with 42) on every connection.
    async fn responder(listener: tokio::net::TcpListener) {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else { return };
            tokio::spawn(async move {
                let mut decoder = RequestDecoder::new();
                let mut buf = vec![0u8; 4096];
                loop {
                    let Ok(n) = stream.read(&mut buf).await else { return };
                    if n == 0 || decoder.feed(&buf[..n]).is_err() {
                        return;
                    }
                    while let Ok(Some(frame)) = decoder.next_frame() {
                        let request = Request::decode(frame.header.msg_type, &frame.body).unwrap();
                        let reply = match &request {
                            Request::Handshake(_) => Reply::Handshake(HandshakeReply::default()),
                            _ => Reply::SecurityCount(42),
                        };
                        let mut payload = Vec::new();
                        request.encode_reply(&reply, &mut payload).unwrap();
                        let mut out = Vec::new();
                        encode_response(
                            &mut out,
                            frame.header.msg_id,
                            frame.header.msg_type,
                            &payload,
                            Compression::Never,
                        )
                        .unwrap();
                        if stream.write_all(&out).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    }

    async fn next(events: &mut mpsc::UnboundedReceiver<Input>) -> Input {
        events.recv().await.expect("the slot reports")
    }

    /// Stands in for the core: passes every input on, never asks for a send.
    struct Inputs(mpsc::UnboundedSender<Input>);

    impl Reports for Inputs {
        fn slot_input(&self, _: SlotRef, input: Input) -> Result<Option<Outgoing>, Finished> {
            self.0.send(input).map(|()| None).map_err(|_| Finished)
        }

        fn now(&self) -> std::time::Instant {
            std::time::Instant::now()
        }
    }

    fn worker(name: &str) -> (tokio::runtime::Handle, std::thread::JoinHandle<()>, tokio::sync::oneshot::Sender<()>) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let handle = rt.handle().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                rt.block_on(async {
                    let _ = stopped.await;
                });
            })
            .unwrap();
        (handle, thread, stop)
    }

    /// Why: PerWorker migration moves a live connection to another
    /// runtime's reactor; the exchange must go on there, state intact, and
    /// the old runtime must no longer be needed.
    #[test]
    fn a_ready_slot_migrates_to_another_runtime() {
        let (a, a_thread, a_stop) = worker("test-worker-a");
        let a_stop = std::cell::Cell::new(Some(a_stop));
        let (b, b_thread, b_stop) = worker("test-worker-b");
        let addr = {
            let _entered = b.enter();
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.set_nonblocking(true).unwrap();
            let addr = listener.local_addr().unwrap();
            b.spawn(async move { responder(tokio::net::TcpListener::from_std(listener).unwrap()).await });
            addr
        };
        let main = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        main.block_on(async {
            let (events_tx, mut events) = mpsc::unbounded_channel();
            let (commands, rx) = mpsc::channel(4);
            let task = SlotTask {
                at: SlotRef { slot: SlotId(0), epoch: Epoch(0), generation: Generation(0) },
                endpoint: Endpoint::new("127.0.0.1", addr.port()),
                connect_timeout: Duration::from_secs(5),
                connector: Arc::new(TcpConnector::default()),
                core: Arc::new(Inputs(events_tx)),
                budgets: EngineShared {
                    raw: Budget::new("raw", 1 << 20),
                    decoded: Budget::new("decoded", 1 << 20),
                    slot_panics: Arc::default(),
                    bytes_read: Arc::default(),
                },
            };
            a.spawn(task.run(rx));
            assert!(matches!(next(&mut events).await, Input::SlotConnected { .. }));
            assert!(matches!(next(&mut events).await, Input::SlotReady { .. }));
            let request = Arc::new(Request::from(SecurityCount { market: Market::Sz, client_date: 0 }));
            for (round, msg_id) in [(0, 7u32), (1, 8)] {
                if round == 1 {
                    // Move to runtime b, then stop runtime a altogether.
                    commands.send(SlotCommand::Migrate { to: b.clone() }).await.unwrap();
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    a_stop.take_and_stop();
                }
                // The first round sends the client's encoding, the second encodes here.
                let mut frame = Vec::new();
                request.encode_frame(0, &mut frame).unwrap();
                let frame = (round == 0).then_some(frame);
                commands.send(SlotCommand::Send { msg_id, request: request.clone(), frame }).await.unwrap();
                match next(&mut events).await {
                    Input::Frame { header, body: FrameBody::Reply(reply), sent: Some(sent), .. } => {
                        assert_eq!(header.msg_id, msg_id);
                        assert_eq!(sent.msg_id, msg_id, "the reply carries its request's send");
                        assert_eq!(*reply, Reply::SecurityCount(42));
                    }
                    other => panic!("expected the reply, got {other:?}"),
                }
            }
            commands.send(SlotCommand::Retire).await.unwrap();
            assert!(matches!(next(&mut events).await, Input::SlotClosed { .. }));
        });
        a_thread.join().unwrap();
        let _ = b_stop.send(());
        b_thread.join().unwrap();
    }

    trait TakeAndStop {
        fn take_and_stop(&self);
    }

    impl TakeAndStop for std::cell::Cell<Option<tokio::sync::oneshot::Sender<()>>> {
        fn take_and_stop(&self) {
            if let Some(stop) = self.take() {
                let _ = stop.send(());
            }
        }
    }
}
