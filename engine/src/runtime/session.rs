//! A ready connection's exchange: its socket, decoder and budget holds
//! ([`Conn`]), what it awaits, and the one body of code that writes a
//! request and serves what a read brought ([`Session`]). Its slot task runs
//! it, and so does a caller that borrowed the connection
//! ([`super::loan`]): the same reads, the same inputs to the core, the
//! same bounds, whoever holds it.
//!
//! Bounds, per round: at most 256 KiB read and 64 frames / 4 MiB decoded
//! before the holder yields; raw staging and decoded bytes are reserved
//! from the engine budgets, and a connection that cannot reserve pauses its
//! reads (TCP backpressure), except for the reply to its own request in
//! flight, which is always passed on (replies first, then backpressure).

use std::any::Any;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tracing::debug;

use super::messages::{Applied, End, Holder, Outcome, Outgoing, Reports};
use crate::budget::{Budget, Hold, Reservation};
use crate::proto::limits::{PAYLOAD_BYTES_MAX, RAW_STAGING_BYTES_MAX, RESPONSE_FRAME_BYTES_MAX, ROUND_WIRE_BYTES_MAX};
use crate::proto::{Frame, FrameDecoder, ProtoError, Reply, Request, RoundEnd, RoundLimits};
use crate::supervisor::{FrameBody, Input, RequestId, Sent, SlotError, SlotRef};

/// Decoded bytes per slot the default decoded budget allows (the budget is
/// `pool_size` times this unless set).
pub const SLOT_DECODED_BYTES_DEFAULT: usize = 8 * 1024 * 1024;
/// msg_id of the first setup request a slot sends on connect (the next
/// ones count up from it); the Supervisor never sees them (its own ids come
/// from a separate counter and setup is over before the slot is ready).
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
/// How long a connection waits before retrying a budget it could not reserve.
const BUDGET_RETRY: Duration = Duration::from_millis(1);

/// A connection's bytes, whatever its connector (tokio TCP, turmoil): the
/// exchange is written once, not once per connector, and the session, its
/// line and a borrower's lease are concrete types the core can hold.
pub(crate) trait Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static {
    /// For the connector's own operations on its concrete stream.
    fn as_any(&self) -> &dyn Any;
    /// The same, to read or write.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Stream for T {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// What every connection shares with the engine: the budgets it draws from
/// and the counters it keeps.
#[derive(Debug, Clone)]
pub(crate) struct EngineShared {
    pub(crate) raw: Arc<Budget>,
    pub(crate) decoded: Arc<Budget>,
    /// Slot tasks (and borrowed exchanges) that panicked.
    pub(crate) slot_panics: Arc<AtomicUsize>,
    /// Of those, borrowed exchanges.
    pub(crate) lent_panics: Arc<AtomicUsize>,
    /// Bytes read from every socket since start.
    pub(crate) bytes_read: Arc<AtomicU64>,
}

impl EngineShared {
    pub(crate) fn new(raw: usize, decoded: usize) -> Self {
        Self {
            raw: Budget::new("raw", raw),
            decoded: Budget::new("decoded", decoded),
            slot_panics: Arc::default(),
            lent_panics: Arc::default(),
            bytes_read: Arc::default(),
        }
    }

    /// The raw and decoded budgets as diagnostics show them.
    pub(crate) fn diagnostics(&self) -> Vec<super::diagnostics::BudgetDiagnostics> {
        vec![(&*self.raw).into(), (&*self.decoded).into()]
    }
}

/// Who is serving a connection right now, for its inputs to the core.
pub(crate) struct Ctx<'a> {
    pub(crate) at: SlotRef,
    pub(crate) core: &'a dyn Reports,
    pub(crate) budgets: &'a EngineShared,
    /// A borrower's own request (see [`Holder`]).
    pub(crate) own: Option<RequestId>,
}

impl Ctx<'_> {
    fn holder(&self, holding: bool) -> Holder {
        match self.own {
            Some(own) => Holder::Borrower { own, holding },
            None => Holder::Task,
        }
    }
}

/// A frame made ready to apply: its input, the decoded-budget bytes it
/// holds until then (borrowed from the budget: no reference count touched
/// per frame), and the request it answers.
pub(crate) struct Prepared<'a> {
    input: Input,
    reservation: Option<Hold<'a>>,
    bad_reply: bool,
    answers: Option<u32>,
}

impl Prepared<'_> {
    /// Whether this frame is the reply to the request written with `msg_id`.
    pub(crate) fn answers(&self, msg_id: u32) -> bool {
        self.answers == Some(msg_id)
    }

    /// Applies it to the core: what the input caused for `by`.
    pub(crate) fn apply(self, ctx: &Ctx<'_>, holding: bool) -> Result<Applied, End> {
        let Prepared { input, reservation, bad_reply, .. } = self;
        let applied = ctx.core.slot_input(ctx.at, input, ctx.holder(holding));
        match reservation {
            Some(r) if bad_reply && crate::mutants::on(crate::mutants::Mutant::DecodedBudgetLeakOnBadReply) => {
                std::mem::forget(r)
            }
            // The frame's bytes have left with what the input caused.
            other => drop(other),
        }
        applied.map_err(|_| End::EngineGone)
    }
}

/// When a request was sent, for the reply's latency.
pub(crate) enum SentAt<'a> {
    /// Already read by the writer.
    Known(Instant),
    /// Read from this clock once the write is done.
    Now(&'a dyn Reports),
}

/// A ready connection and its exchange state. It moves between its slot
/// task, its line (parked) and a borrower, and across runtimes.
pub(crate) struct Session {
    pub(crate) conn: Conn,
    /// The request in flight, its msg_id and when it was written: the frame
    /// that answers it is parsed, and every frame read meanwhile carries the
    /// [`Sent`].
    awaiting: Option<(Sent, Arc<Request>)>,
    /// Whole frames still staged after a round that hit its limits: they are
    /// decoded before anything more is read, so a read never has to reserve
    /// raw budget for more than a partial frame plus one read.
    frames_staged: bool,
    wire_this_round: usize,
}

impl Session {
    pub(crate) fn new(conn: Conn) -> Self {
        Self { conn, awaiting: None, frames_staged: false, wire_this_round: 0 }
    }

    /// Whether the request written with `msg_id` still awaits its reply.
    pub(crate) fn awaits(&self, msg_id: u32) -> bool {
        self.awaiting.as_ref().is_some_and(|(sent, _)| sent.msg_id == msg_id)
    }

    /// Whether whole frames are staged, to be served before the next read.
    pub(crate) fn has_staged_frames(&self) -> bool {
        self.frames_staged
    }

    /// Writes a request; its reply is what is awaited from now on. Its send
    /// time is `SentAt::Known` (a borrower's submission, read microseconds
    /// before: one clock read less per request) or read when the write is done.
    pub(crate) async fn write(&mut self, outgoing: Outgoing, sent: SentAt<'_>) -> Result<(), End> {
        let Outgoing { msg_id, request, frame } = outgoing;
        self.conn
            .write_request(msg_id, &request, frame)
            .await
            .map_err(|e| End::Failed(SlotError::Io(e.to_string())))?;
        let at = match sent {
            SentAt::Known(at) => at,
            SentAt::Now(clock) => clock.now(),
        };
        self.awaiting = Some((Sent { msg_id, at }, request));
        Ok(())
    }

    /// Bytes from the socket, or `Ready(Ok(0))` at once when whole frames
    /// are staged (serve those first). Registers the task's waker with the
    /// socket when there is nothing to read.
    pub(crate) fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        self.poll_fill_with(cx, |stream, buf, cx| {
            let mut read = ReadBuf::new(buf);
            Pin::new(stream).poll_read(cx, &mut read).map_ok(|()| read.filled().len())
        })
    }

    /// [`poll_fill`](Self::poll_fill), reading with `read` (a thread
    /// borrower's read waits in the socket).
    pub(crate) fn poll_fill_with(
        &mut self,
        cx: &mut Context<'_>,
        read: impl FnOnce(&mut dyn Stream, &mut [u8], &mut Context<'_>) -> Poll<io::Result<usize>>,
    ) -> Poll<io::Result<usize>> {
        if self.frames_staged {
            return Poll::Ready(Ok(0));
        }
        self.conn.poll_read_some(cx, read)
    }

    /// Serves what one [`poll_fill`](Self::poll_fill) brought: stages the
    /// bytes (reserving raw budget), decodes one round, applies every frame
    /// to the core (the reply to the request in flight parsed, outside the
    /// lock) and writes the request an applied frame made this connection
    /// send. Returns the borrower's own outcome, if a frame brought it.
    pub(crate) async fn serve(&mut self, read: io::Result<usize>, ctx: &Ctx<'_>) -> Result<Option<Outcome>, End> {
        let mut frames = self.decode_read(read).await?;
        let mut own = None;
        for frame in frames.drain(..) {
            let prepared = self.prepare(frame, ctx).await;
            own = own.or(self.apply(prepared, ctx).await?);
        }
        self.recycle(frames);
        Ok(own)
    }

    /// Stages a read's bytes (nothing when whole frames were staged) and
    /// decodes one round. Hand the frames' vector back with
    /// [`recycle`](Self::recycle) when done.
    pub(crate) async fn decode_read(&mut self, read: io::Result<usize>) -> Result<Vec<Frame>, End> {
        if !self.frames_staged {
            let n = self.conn.took(read, self.awaiting.is_some()).await.map_err(End::Failed)?;
            self.wire_this_round += n;
        }
        let (frames, end) = self.conn.decode().map_err(|e| End::Failed(SlotError::Protocol(e.to_string())))?;
        self.frames_staged = end != RoundEnd::NeedBytes;
        Ok(frames)
    }

    /// The round's frame vector, empty, kept for the next round.
    pub(crate) fn recycle(&mut self, frames: Vec<Frame>) {
        debug_assert!(frames.is_empty());
        self.conn.frames = frames;
    }

    /// Makes a frame's input: the reply to the request in flight parsed
    /// (outside the lock), anything else unparsed; its decoded bytes
    /// reserved. Replies to sent requests first: a reply (at most one per
    /// connection, at most 64 KiB) never waits for the decoded budget;
    /// pushes do, which pauses this connection's reads.
    pub(crate) async fn prepare<'a>(&mut self, frame: Frame, ctx: &Ctx<'a>) -> Prepared<'a> {
        let sent = self.awaiting.as_ref().map(|(sent, _)| *sent);
        let mut answers = None;
        let body = match &self.awaiting {
            Some((sent, request))
                if frame.header.msg_id == reply_msg_id(request, sent.msg_id)
                    && frame.header.msg_type == request.msg_type() =>
            {
                let parsed = request.parse_reply(&frame.payload);
                answers = Some(sent.msg_id);
                self.awaiting = None;
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
        let reservation = match body {
            FrameBody::Unparsed(_) => reserve_decoded(&ctx.budgets.decoded, bytes).await,
            _ => ctx.budgets.decoded.try_hold(bytes),
        };
        let bad_reply = matches!(body, FrameBody::Invalid(_));
        let input = Input::Frame { at: ctx.at, header: frame.header, body, sent };
        Prepared { input, reservation, bad_reply, answers }
    }

    /// Applies a prepared frame and writes the request it made this
    /// connection send; returns the borrower's own outcome, if it brought it.
    pub(crate) async fn apply(&mut self, prepared: Prepared<'_>, ctx: &Ctx<'_>) -> Result<Option<Outcome>, End> {
        let Applied { outgoing, own } = prepared.apply(ctx, true)?;
        if let Some(outgoing) = outgoing {
            self.write(outgoing, SentAt::Now(ctx.core)).await?;
        }
        Ok(own)
    }

    /// A round hit its limits: the holder should yield to its neighbours
    /// before serving more (and the round's count starts again).
    pub(crate) fn round_full(&mut self) -> bool {
        let full = self.frames_staged || self.wire_this_round >= ROUND_WIRE_BYTES_MAX;
        if full {
            self.wire_this_round = 0;
        }
        full
    }
}

/// Waits before retrying a budget. Boxed: it is the rare path, and a
/// `Sleep` held in place would make every exchange's future larger. A
/// thread borrower, outside any runtime, sleeps its own thread.
async fn budget_wait() {
    if tokio::runtime::Handle::try_current().is_err() {
        std::thread::sleep(BUDGET_RETRY);
        return;
    }
    Box::pin(tokio::time::sleep(BUDGET_RETRY)).await;
}

/// Decoded bytes from the engine budget; waits (pausing this connection's
/// reads) while the budget is exhausted.
async fn reserve_decoded(budget: &Budget, bytes: usize) -> Option<Hold<'_>> {
    if bytes == 0 {
        return None;
    }
    loop {
        if let Some(r) = budget.try_hold(bytes) {
            return Some(r);
        }
        budget_wait().await;
    }
}

/// One connection's socket, decoder and raw-budget hold.
pub(crate) struct Conn {
    pub(crate) stream: Box<dyn Stream>,
    decoder: FrameDecoder,
    buf: Vec<u8>,
    budgets: EngineShared,
    /// Raw-budget bytes held for what the decoder stages: one reservation
    /// for the connection's life, grown in place per read.
    raw: Reservation,
    wire: Vec<u8>,
    /// One decode round's frames; kept so a round allocates nothing.
    frames: Vec<Frame>,
}

impl Conn {
    pub(crate) fn new(stream: Box<dyn Stream>, budgets: EngineShared) -> Self {
        Self {
            stream,
            decoder: FrameDecoder::new(),
            buf: vec![0; SLOT_READ_BYTES],
            raw: Budget::empty_reservation(&budgets.raw),
            budgets,
            wire: Vec::new(),
            frames: Vec::new(),
        }
    }

    /// Writes `request` as a frame with `msg_id`: the `frame` the client
    /// encoded when there is one, else encoded here.
    async fn write_request(&mut self, msg_id: u32, request: &Request, frame: Option<Vec<u8>>) -> io::Result<()> {
        if let Some(mut frame) = frame {
            crate::proto::frame::set_request_msg_id(&mut frame, request.wire_msg_id(msg_id));
            return self.stream.write_all(&frame).await;
        }
        self.wire.clear();
        request.encode_frame(msg_id, &mut self.wire).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        self.stream.write_all(&self.wire).await
    }

    /// Reads what the socket has into the read buffer (at most what staging
    /// allows). Waiting for bytes holds no reservation beyond what is
    /// already staged, so idle connections tie up nothing.
    fn poll_read_some(
        &mut self,
        cx: &mut Context<'_>,
        read: impl FnOnce(&mut dyn Stream, &mut [u8], &mut Context<'_>) -> Poll<io::Result<usize>>,
    ) -> Poll<io::Result<usize>> {
        let want = self.buf.len().min(self.decoder.staging_room());
        debug_assert!(want > 0, "a decode round leaves staging room");
        read(&mut *self.stream, &mut self.buf[..want], cx)
    }

    /// Accounts a read's bytes in the raw budget and stages them in the
    /// decoder; a read of 0 is the peer closing.
    async fn took(&mut self, read: io::Result<usize>, reply_due: bool) -> Result<usize, SlotError> {
        if crate::mutants::on(crate::mutants::Mutant::RawBudgetLeakOnError) && !matches!(read, Ok(1..)) {
            std::mem::forget(std::mem::replace(&mut self.raw, Budget::empty_reservation(&self.budgets.raw)));
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

    /// Reads once and stages what came.
    async fn read(&mut self, reply_due: bool) -> Result<usize, SlotError> {
        let read = std::future::poll_fn(|cx| {
            self.poll_read_some(cx, |stream, buf, cx| {
                let mut read = ReadBuf::new(buf);
                Pin::new(stream).poll_read(cx, &mut read).map_ok(|()| read.filled().len())
            })
        })
        .await;
        self.took(read, reply_due).await
    }

    /// Reserves raw budget for `n` more staged bytes. Replies first: while
    /// this connection's request is in flight the read goes on even when the
    /// budget is spent (unaccounted, and bounded by this connection's own
    /// staging bound), so a reply never waits behind other slots' pushes;
    /// otherwise the connection waits, which pauses its reads (TCP backpressure).
    async fn account(&mut self, n: usize, reply_due: bool) {
        loop {
            if self.raw.try_grow(n) {
                return;
            }
            if reply_due {
                return;
            }
            budget_wait().await;
        }
    }

    /// Decodes one round of frames and shrinks the raw hold to what stays staged.
    /// The frames come in the connection's kept vector, empty; hand it back
    /// (`conn.frames = frames`) when done.
    fn decode(&mut self) -> Result<(Vec<Frame>, RoundEnd), ProtoError> {
        let mut frames = std::mem::take(&mut self.frames);
        debug_assert!(frames.is_empty(), "the last round's frames were handed over");
        let round = self.decoder.decode_round(RoundLimits::default(), |f| frames.push(f))?;
        self.raw.shrink_to(self.decoder.staged().min(self.raw.bytes()));
        debug_assert!(self.decoder.staged() <= RAW_STAGING_BYTES_MAX);
        Ok((frames, round.end))
    }

    /// Sends each setup request (the 7709 handshake; the MAC channel's
    /// three setup commands) and waits for its reply before the next;
    /// frames before a reply are dropped.
    pub(crate) async fn handshake(&mut self, setup: &[Request]) -> Result<(), SlotError> {
        for (step, request) in setup.iter().enumerate() {
            let msg_id = HANDSHAKE_MSG_ID + step as u32;
            self.write_request(msg_id, request, None).await.map_err(|e| SlotError::Handshake(e.to_string()))?;
            let payload = self.setup_reply(msg_id, request).await?;
            match request.parse_reply(&payload) {
                Ok(Reply::Handshake(reply)) => debug!(server = %reply.server_name, "handshake done"),
                Ok(_) => {}
                // A 2026 server turning this client away in words.
                Err(e) => {
                    return Err(match crate::proto::text::server_message(&payload) {
                        Some(text) => SlotError::Mismatch(text),
                        None => SlotError::Handshake(e.to_string()),
                    })
                }
            }
        }
        Ok(())
    }

    /// The reply to a setup request written with `msg_id`.
    async fn setup_reply(&mut self, msg_id: u32, request: &Request) -> Result<bytes::Bytes, SlotError> {
        loop {
            while let Some(frame) = self.decoder.next_frame().map_err(|e| SlotError::Handshake(e.to_string()))? {
                if frame.header.msg_id == request.wire_msg_id(msg_id) && frame.header.msg_type == request.msg_type() {
                    return Ok(frame.payload);
                }
            }
            // The reply is due: it never waits for the budget.
            self.read(true).await.map_err(|e| match e {
                SlotError::Io(m) | SlotError::Protocol(m) => SlotError::Handshake(m),
                other => other,
            })?;
        }
    }
}

/// The msg_id the reply to `request` sent as `msg_id` carries (its codec's
/// rule: 0 on MAC).
fn reply_msg_id(request: &Request, msg_id: u32) -> u32 {
    let wire = request.wire_msg_id(msg_id);
    if wire == 0 && crate::mutants::on(crate::mutants::Mutant::MacReplyMatchedByEngineId) {
        return msg_id;
    }
    wire
}
