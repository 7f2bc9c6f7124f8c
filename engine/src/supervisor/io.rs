//! What goes into the Supervisor ([`Input`]) and what comes out ([`Action`]).

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use serde::Serialize;

use super::ids::{Epoch, PinId, RequestId, SlotId, SlotRef};
use crate::proto::{ProtoError, Reply, Request, ResponseHeader};

/// An event for [`Supervisor::handle`](super::Supervisor::handle).
#[derive(Debug)]
pub enum Input {
    /// A caller submits a request. `deadline` covers queueing, connecting,
    /// sending and the reply; `retry_safe` allows one resend after the
    /// connection carrying it fails. With `pin`, the request runs on that
    /// pin's slot, in the pin's own FIFO.
    Submit {
        /// Caller-chosen id, unique for the engine's life.
        id: RequestId,
        /// What to send.
        request: Arc<Request>,
        /// Absolute deadline.
        deadline: Instant,
        /// May be resent once on a new connection.
        retry_safe: bool,
        /// Run on this pin's slot.
        pin: Option<PinId>,
    },
    /// A caller gives up on a request.
    Cancel {
        /// The request.
        id: RequestId,
    },
    /// A caller asks for one slot for exclusive use, through the same FIFO
    /// as requests. Answered by [`Action::PinGranted`] or [`Action::PinEnded`].
    Pin {
        /// Caller-chosen id, unique for the engine's life.
        id: PinId,
        /// Give up waiting for a slot at this time.
        deadline: Instant,
    },
    /// A caller releases a pin (granted or still waiting).
    Release {
        /// The pin.
        id: PinId,
    },
    /// The slot task's TCP connection is up; the handshake is under way.
    SlotConnected {
        /// The connection: slot, epoch and generation.
        at: SlotRef,
    },
    /// The slot task finished the 0x000d handshake; the slot can carry requests.
    SlotReady {
        /// The connection: slot, epoch and generation.
        at: SlotRef,
    },
    /// The slot task ended with an error (connect, handshake, I/O, stream
    /// protocol error, peer closed). Its socket is closed.
    SlotFailed {
        /// The connection: slot, epoch and generation.
        at: SlotRef,
        /// Why.
        error: SlotError,
    },
    /// The slot task ended after [`Action::Retire`]; its socket is closed.
    SlotClosed {
        /// The connection: slot, epoch and generation.
        at: SlotRef,
    },
    /// A whole response frame arrived on a slot.
    Frame {
        /// The connection: slot, epoch and generation.
        at: SlotRef,
        /// The frame's header.
        header: ResponseHeader,
        /// The body, parsed by the slot task when it was the reply it awaited.
        body: FrameBody,
        /// The request the slot task had written, and not yet seen answered,
        /// when it read this frame (`None`: nothing in flight). Only a frame
        /// read after its request was written can be its reply, and the
        /// write time is where the exchange's latency starts.
        sent: Option<Sent>,
    },
    /// Time passed; fire due timers. Any input does this too.
    Tick,
    /// Start a new engine epoch on a new ranked endpoint list (for example
    /// after a ranking refresh): every pin ends, every live connection
    /// retires (requests in flight are resent once if retry-safe), and slots
    /// reconnect to the new endpoints. Everything from the old epoch is stale.
    NewEpoch {
        /// The new ranked endpoints; at least `server_count` of them.
        endpoints: Vec<super::Endpoint>,
    },
    /// The answer to [`Action::Probe`]: each endpoint's connect latency,
    /// `None` where it failed, in the order of the configured endpoints.
    ProbeDone {
        /// Epoch of the probe.
        epoch: Epoch,
        /// One entry per endpoint.
        latencies: Vec<Option<std::time::Duration>>,
    },
    /// Close the engine: admit nothing more, end every waiter, retire every slot.
    Close,
}

/// A request frame fully written on a connection: its msg_id and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sent {
    /// The request frame's msg_id.
    pub msg_id: u32,
    /// When its last byte was written (the driver's clock).
    pub at: Instant,
}

/// A frame's body as the slot task delivers it.
#[derive(Debug, Clone)]
pub enum FrameBody {
    /// The slot task parsed it as the reply to the request it sent.
    Reply(Box<Reply>),
    /// The slot task expected this reply but its payload did not parse.
    Invalid(ProtoError),
    /// Not parsed (not the awaited reply): a push, or stale.
    Unparsed(Bytes),
    /// The slot task expected this reply but the server sent a plain text
    /// message instead ([`server_message`](crate::proto::text::server_message)).
    ServerMessage(String),
}

/// Why a slot task ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
pub enum SlotError {
    /// TCP connect failed or timed out.
    #[error("connect failed: {0}")]
    Connect(String),
    /// The handshake failed (bad reply, wrong id, short payload).
    #[error("handshake failed: {0}")]
    Handshake(String),
    /// Socket I/O failed.
    #[error("i/o error: {0}")]
    Io(String),
    /// The peer closed the connection.
    #[error("the server closed the connection")]
    PeerClosed,
    /// The server answered the handshake with a plain message instead (it
    /// does not serve this client).
    #[error("the server does not serve this client: {0}")]
    Mismatch(String),
    /// The byte stream broke the protocol (framing, zlib, resync).
    #[error("protocol error: {0}")]
    Protocol(String),
}

/// Why a request ended without a reply. Every accepted request gets exactly
/// one [`Action::Complete`], with a reply or one of these.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
pub enum RequestError {
    /// Admission queue full; retry later or raise `max_pending_requests`.
    #[error("pool busy: the admission queue is full")]
    PoolBusy,
    /// Cancelled by the caller.
    #[error("cancelled")]
    Cancelled,
    /// The deadline passed (queued, connecting, or awaiting the reply).
    #[error("timed out")]
    TimedOut,
    /// The engine is closing or closed.
    #[error("engine closed")]
    Closed,
    /// The connection carrying it failed (after the one retry, if allowed).
    #[error("connection lost: {0}")]
    ConnectionLost(SlotError),
    /// The reply did not parse (after the one retry, if allowed).
    #[error("bad reply: {0}")]
    BadReply(String),
    /// The pin it was submitted on does not exist or has ended.
    #[error("pin lost")]
    PinLost,
    /// The engine failed underneath the call (the Python binding's wait
    /// ending without an outcome; the Rust engine itself has no such path).
    #[error("engine failed: {0}")]
    Fatal(String),
}

/// The engine's close state (docs/ARCHITECTURE.md, Invariants: 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum CloseState {
    /// Serving.
    Running,
    /// Close called; waiting for every slot to confirm it closed.
    Closing,
    /// Every waiter ended and every slot closed. Final.
    Closed,
    /// The close gate passed without proof that every slot closed.
    FailedClosing,
    /// Final after `FailedClosing`.
    FailedClosed,
}

impl CloseState {
    /// True once nothing more is admitted.
    pub fn is_closing(self) -> bool {
        self != Self::Running
    }

    /// True in the two final states.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Closed | Self::FailedClosed)
    }
}

/// Something the driver must do, from
/// [`Supervisor::poll_action`](super::Supervisor::poll_action).
#[derive(Debug)]
pub enum Action {
    /// Measure the TCP connect latency of every endpoint (bounded
    /// concurrency, per-connect timeout), record it in the saved ranking,
    /// and answer [`Input::ProbeDone`].
    Probe {
        /// Epoch to stamp on the answer.
        epoch: Epoch,
        /// Each connect's timeout.
        timeout: std::time::Duration,
        /// Connects in flight at once.
        concurrency: usize,
    },
    /// Open a connection for a slot: start its slot task, which connects
    /// to `endpoint` (an index into the ranked endpoints) and handshakes,
    /// before `deadline`, reporting `SlotConnected` then `SlotReady` (or
    /// `SlotFailed`).
    OpenSlot {
        /// The connection: slot, epoch and generation.
        at: SlotRef,
        /// Index into the configured endpoints.
        endpoint: usize,
        /// Give up connecting (and report `SlotFailed`) at this time.
        deadline: Instant,
    },
    /// Write `request` as a frame with `msg_id` on the slot and note when;
    /// parse the frame that answers it, and report every frame read until
    /// then with that [`Sent`].
    Send {
        /// The connection: slot, epoch and generation.
        at: SlotRef,
        /// The frame's msg_id (never 0).
        msg_id: u32,
        /// What to send.
        request: Arc<Request>,
        /// The admitted request this is (`None`: a heartbeat or a canary
        /// query), so a driver can send what it encoded at admission.
        id: Option<RequestId>,
    },
    /// Close the slot's socket, drop its decoder, end its task, then report
    /// `SlotClosed` with this generation.
    Retire {
        /// The connection: slot, epoch and generation.
        at: SlotRef,
    },
    /// A request ended. Emitted exactly once per admitted request, and once
    /// (with `PoolBusy`, `Closed`, `TimedOut` or `PinLost`) for a refused one.
    Complete {
        /// The request.
        id: RequestId,
        /// Its reply, or why it has none.
        outcome: Result<Box<Reply>, RequestError>,
    },
    /// A pin got its slot.
    PinGranted {
        /// The pin.
        id: PinId,
        /// Its slot.
        slot: SlotId,
    },
    /// A pin ended: released (`Cancelled`), timed out waiting, its slot
    /// failed (`PinLost`), or the engine closed.
    PinEnded {
        /// The pin.
        id: PinId,
        /// Why.
        reason: RequestError,
    },
    /// The close state changed.
    CloseStateChanged {
        /// The new state.
        state: CloseState,
    },
}
