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
