//! The one place that chooses between `std` and `loom` synchronisation
//! primitives. Code that loom must check imports from here, never from
//! `std::sync` directly; `RUSTFLAGS="--cfg loom"` swaps in loom's models.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicUsize, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::Arc;

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::Arc;
