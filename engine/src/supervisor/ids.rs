//! Identifiers the Supervisor hands out or accepts.

use serde::Serialize;

/// A caller's request, unique for the engine's life (the client allocates them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct RequestId(pub u64);

/// A pin (exclusive use of one slot), unique for the engine's life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct PinId(pub u64);

/// A slot: one TCP connection's place in the pool, `0..pool_size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct SlotId(pub u32);

impl SlotId {
    pub(crate) fn index(self) -> usize {
        self.0 as usize
    }
}

/// A slot's connection generation. Every retirement increments it; events
/// and frames carry the generation they belong to, so anything from an older
/// one is stale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Default)]
pub struct Generation(pub u64);

/// The engine epoch: every slot event carries it; a reset of the whole pool
/// moves it on, and everything from an older epoch is stale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Default)]
pub struct Epoch(pub u64);

/// One connection of a slot: the slot, and the engine epoch and slot
/// generation it was opened in. Every slot event and slot action carries
/// one, so an event from a retired connection (an older epoch or
/// generation) is recognisably stale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct SlotRef {
    /// The slot.
    pub slot: SlotId,
    /// The engine epoch of the connect.
    pub epoch: Epoch,
    /// The slot's generation of the connect.
    pub generation: Generation,
}
