//! Fault injection for one reference server: set at start, changeable while
//! it runs through a [`FaultHandle`]. Odds are per mille, drawn from each
//! connection's seeded generator, so a simulation replays them exactly.

use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Unsolicited push frames sent at a fixed rate to every connection that
/// asked for a 0x0547 refresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PushFlood {
    /// Frames per second.
    pub rate_per_sec: u32,
    /// Payload bytes per frame.
    pub size: usize,
}

/// Everything a server can do wrong.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Faults {
    /// Added before every reply.
    pub latency: Duration,
    /// Up to this much more, uniformly.
    pub jitter: Duration,
    /// Odds of stalling (neither reading nor writing) before a request.
    pub stall_per_mille: u32,
    /// How long a stall lasts.
    pub stall: Duration,
    /// Odds of writing half a reply and closing.
    pub close_mid_frame_per_mille: u32,
    /// Odds of writing garbage bytes before a reply.
    pub garbage_per_mille: u32,
    /// Odds of a reply with a broken magic.
    pub bad_magic_per_mille: u32,
    /// Odds of a reply with another msg_id.
    pub wrong_id_per_mille: u32,
    /// Odds of a reply with another msg_type.
    pub wrong_type_per_mille: u32,
    /// Odds of a reply whose header claims a length past what its body holds.
    pub oversize_per_mille: u32,
    /// Odds of a reply with a corrupt zlib body.
    pub corrupt_zlib_per_mille: u32,
    /// Odds of a well-framed reply whose payload is cut to half: it decodes
    /// as a frame, but its records do not parse.
    pub truncated_body_per_mille: u32,
    /// Write replies one byte at a time with this pause between bytes.
    pub drip: Option<Duration>,
    /// Push flood after a refresh.
    pub push_flood: Option<PushFlood>,
    /// Close every new connection at once.
    pub refuse_connections: bool,
    /// Answer the handshake with a payload too short to be one.
    pub fail_handshake: bool,
    /// Answer every data command (all but the handshake, the pytdx setup
    /// and the heartbeat) with an empty 2-byte body: the "read-only"
    /// public servers of 2026, which accept the handshake and serve nothing.
    pub empty_data: bool,
    /// Answer the handshake and the pytdx setup with the GBK message
    /// [`MISMATCH_MESSAGE`] instead of their reply.
    pub mismatch: bool,
    /// A connection that sends more than this many requests within one
    /// second is stalled for [`THROTTLE_STALL`], then closed.
    pub throttle_per_sec: Option<u32>,
    /// Weave terminal escapes and control characters into every text sent
    /// (names, board names, company sections and text), name company files
    /// with a path out of any directory, and, with `mismatch`, send a
    /// message that carries a carriage return ([`crate::hostile`]).
    pub hostile_text: bool,
}

/// What a 2026 server tells a client it no longer serves ("the client does
/// not match this server, cannot be used!").
pub const MISMATCH_MESSAGE: &str = "客户端与行情主站不匹配,不能使用!";

/// How long a throttling server stalls a connection before closing it.
pub const THROTTLE_STALL: Duration = Duration::from_secs(2);

impl Faults {
    /// True when no fault is set.
    pub fn is_healthy(&self) -> bool {
        *self == Self::default()
    }

    /// Switches one kind on (or, with zero odds, off), leaving the others.
    pub fn set_kind(&mut self, kind: FaultKind) {
        match kind {
            FaultKind::Latency { base, jitter } => (self.latency, self.jitter) = (base, jitter),
            FaultKind::Stall { per_mille, duration } => (self.stall_per_mille, self.stall) = (per_mille, duration),
            FaultKind::CloseMidFrame { per_mille } => self.close_mid_frame_per_mille = per_mille,
            FaultKind::Garbage { per_mille } => self.garbage_per_mille = per_mille,
            FaultKind::BadMagic { per_mille } => self.bad_magic_per_mille = per_mille,
            FaultKind::WrongId { per_mille } => self.wrong_id_per_mille = per_mille,
            FaultKind::WrongType { per_mille } => self.wrong_type_per_mille = per_mille,
            FaultKind::Oversize { per_mille } => self.oversize_per_mille = per_mille,
            FaultKind::CorruptZlib { per_mille } => self.corrupt_zlib_per_mille = per_mille,
            FaultKind::TruncatedBody { per_mille } => self.truncated_body_per_mille = per_mille,
            FaultKind::Drip { pause } => self.drip = Some(pause),
            FaultKind::PushFlood(flood) => self.push_flood = Some(flood),
            FaultKind::RefuseConnections => self.refuse_connections = true,
            FaultKind::FailHandshake => self.fail_handshake = true,
            FaultKind::EmptyData => self.empty_data = true,
            FaultKind::Mismatch => self.mismatch = true,
            FaultKind::Throttle { per_sec } => self.throttle_per_sec = Some(per_sec),
            FaultKind::HostileText => self.hostile_text = true,
        }
    }

    /// The same settings with `kind` switched on.
    pub fn with(mut self, kind: FaultKind) -> Self {
        self.set_kind(kind);
        self
    }
}

/// One kind of misbehaviour of a reference server: the fields of
/// [`Faults`] one by one, so a schedule or a test kit can switch kinds on
/// and combine them. A new field of [`Faults`] gets a variant here and an
/// arm in [`Faults::set_kind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// `base` before every reply, plus up to `jitter` more.
    Latency {
        /// Always added.
        base: Duration,
        /// Uniformly up to this much more.
        jitter: Duration,
    },
    /// Stall (neither read nor write) for `duration` before a request.
    Stall {
        /// Odds per request.
        per_mille: u32,
        /// How long.
        duration: Duration,
    },
    /// Write half a reply and close.
    CloseMidFrame {
        /// Odds per reply.
        per_mille: u32,
    },
    /// Garbage bytes before a reply.
    Garbage {
        /// Odds per reply.
        per_mille: u32,
    },
    /// A reply with a broken magic.
    BadMagic {
        /// Odds per reply.
        per_mille: u32,
    },
    /// A reply with another msg_id.
    WrongId {
        /// Odds per reply.
        per_mille: u32,
    },
    /// A reply with another msg_type.
    WrongType {
        /// Odds per reply.
        per_mille: u32,
    },
    /// A header claiming a length past what its body holds.
    Oversize {
        /// Odds per reply.
        per_mille: u32,
    },
    /// A corrupt zlib body.
    CorruptZlib {
        /// Odds per reply.
        per_mille: u32,
    },
    /// A well-framed reply whose payload is cut to half.
    TruncatedBody {
        /// Odds per reply.
        per_mille: u32,
    },
    /// Replies written one byte at a time, `pause` apart.
    Drip {
        /// Between bytes.
        pause: Duration,
    },
    /// Unsolicited push frames after a refresh.
    PushFlood(PushFlood),
    /// Close every new connection at once.
    RefuseConnections,
    /// Answer the handshake with a payload too short to be one.
    FailHandshake,
    /// Answer every data command with an empty 2-byte body (the
    /// "read-only" servers of 2026).
    EmptyData,
    /// Answer the handshake and the pytdx setup with [`MISMATCH_MESSAGE`].
    Mismatch,
    /// Stall for [`THROTTLE_STALL`], then close, a connection that sends
    /// more than `per_sec` requests within one second.
    Throttle {
        /// Requests a connection may send per second.
        per_sec: u32,
    },
    /// Terminal escapes and control characters in every text sent, a
    /// company file name that climbs out of any directory
    /// ([`crate::hostile`]).
    HostileText,
}

impl FromIterator<FaultKind> for Faults {
    /// Every kind switched on in order (a later one of the same kind wins).
    fn from_iter<I: IntoIterator<Item = FaultKind>>(kinds: I) -> Self {
        kinds.into_iter().fold(Faults::default(), Faults::with)
    }
}

impl From<FaultKind> for Faults {
    fn from(kind: FaultKind) -> Self {
        Faults::default().with(kind)
    }
}

/// A shared, live view of a server's faults.
#[derive(Debug, Clone, Default)]
pub struct FaultHandle(Arc<Mutex<Faults>>);

impl FaultHandle {
    /// A handle starting with `faults`.
    pub fn new(faults: Faults) -> Self {
        Self(Arc::new(Mutex::new(faults)))
    }

    /// The faults now.
    pub fn get(&self) -> Faults {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Replaces the faults; running connections see it at their next request.
    pub fn set(&self, faults: Faults) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = faults;
    }
}
