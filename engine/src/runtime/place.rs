//! Where a caller runs, for which connections it may borrow
//! ([`super::loan`]): a task on a runtime borrows the connections
//! registered there; a thread of its own that may block (a blocking
//! client's call, a Python thread's wait) borrows any and waits in its
//! reads, so no other thread wakes it; anything else waits for its outcome.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Where a caller runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// A task on this runtime.
    Runtime(tokio::runtime::Id),
    /// A thread of its own that may block.
    Thread,
    /// Anywhere else (another executor's thread).
    Elsewhere,
}

thread_local! {
    /// This thread is inside [`on_blocking_thread`] (or a simulated caller
    /// pretends to be: [`as_thread_caller`]).
    static MAY_BLOCK: Cell<bool> = const { Cell::new(false) };
}

impl Place {
    /// The caller polling now.
    pub(crate) fn current() -> Place {
        if MAY_BLOCK.with(Cell::get) {
            return Place::Thread;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => Place::Runtime(handle.id()),
            Err(_) => Place::Elsewhere,
        }
    }

    /// The runtime a caller there runs on, for reading the engine clock.
    pub(crate) fn runtime(self) -> Option<tokio::runtime::Id> {
        match self {
            Place::Runtime(id) => Some(id),
            Place::Thread | Place::Elsewhere => None,
        }
    }
}

/// Runs `f` with this thread marked as one whose calls may wait in their
/// socket reads (at most [`THREAD_READ_SLICE`](super::connector::THREAD_READ_SLICE)
/// per poll). For callers that own their thread and poll a call's future
/// in a loop: `BlockingClient`, the Python binding. Never from a runtime's
/// worker thread: it would stall the runtime.
#[doc(hidden)]
pub fn on_blocking_thread<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            MAY_BLOCK.with(|m| m.set(self.0));
        }
    }
    let _restore = Restore(MAY_BLOCK.with(|m| m.replace(true)));
    f()
}

/// A simulated caller that borrows as a thread does: its calls take the
/// thread loan's path (on simulated sockets they still wait as tasks do),
/// so the simulation covers it.
#[doc(hidden)]
pub fn as_thread_caller<F: Future>(future: F) -> impl Future<Output = F::Output> {
    struct AsThread<F>(Pin<Box<F>>);
    impl<F: Future> Future for AsThread<F> {
        type Output = F::Output;
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
            on_blocking_thread(|| self.0.as_mut().poll(cx))
        }
    }
    AsThread(Box::pin(future))
}
