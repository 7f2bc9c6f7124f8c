//! The one place that chooses between `std` and `loom` synchronisation
//! primitives, and the small primitives the engine shares between threads.
//! Code that loom must check imports from here, never from `std::sync`
//! directly; `RUSTFLAGS="--cfg loom"` swaps in loom's models, and each
//! primitive has a `loom_*` model test beside it.

mod alarm;
mod completion;
mod loan_cell;
mod snapshot;

// Under loom only the models use the primitives (the runtime that uses
// them is not compiled there).
#[cfg_attr(loom, allow(unused_imports))]
pub(crate) use alarm::Alarm;
#[cfg_attr(loom, allow(unused_imports))]
pub(crate) use completion::Completion;
#[cfg_attr(loom, allow(unused_imports))]
pub(crate) use loan_cell::{Closed, LoanCell};
#[cfg_attr(loom, allow(unused_imports))]
pub(crate) use snapshot::Snapshot;

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicUsize, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Condvar, Mutex, MutexGuard};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Condvar, Mutex, MutexGuard};
