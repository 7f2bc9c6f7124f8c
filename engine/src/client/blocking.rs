//! The blocking facade, for callers without an async runtime. Its typed
//! methods come from the command list; its composite calls run the async
//! client's futures on the calling thread, so each paging loop exists once.
//! Called from inside an async runtime it panics at once, as reqwest's
//! blocking client does: blocking there would stall the runtime's thread.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::commands::Listed;
use super::Client;
use crate::error::Error;
use crate::proto::commands::TypedCommand;
use crate::proto::{Reply, Request};
use crate::runtime::{on_blocking_thread, EngineDiagnostics};
use crate::supervisor::RequestError;

/// Blocking calls. Waits wake at least every 25 ms to honour the cancel
/// flag; admission never blocks.
///
/// # Panics
///
/// Every call panics when made from a thread that is driving an async
/// runtime (inside `#[tokio::main]`, a task, or `block_on`): use the async
/// [`Client`] there, or move the call into `tokio::task::spawn_blocking`.
#[derive(Debug, Clone)]
pub struct BlockingClient {
    pub(super) client: Client,
    cancel: Option<Arc<AtomicBool>>,
}

/// How often a blocking wait checks its cancel flag.
pub const BLOCKING_WAKE: Duration = Duration::from_millis(25);

/// The panic message of a blocking call made inside an async runtime.
pub(crate) const INSIDE_RUNTIME: &str = "tdx_engine::BlockingClient called from inside an async runtime, where \
     blocking would stall the runtime's thread; use the async Client there, or call it from \
     tokio::task::spawn_blocking";

/// Panics when this thread is driving an async runtime. Tokio's own check
/// ("blocking region") is not public; a ready oneshot's `blocking_recv`
/// runs it and returns at once where blocking is allowed (plain threads,
/// `spawn_blocking`).
fn refuse_inside_runtime() {
    if tokio::runtime::Handle::try_current().is_err() {
        return;
    }
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let _ = tx.send(());
    let allowed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || rx.blocking_recv())).is_ok();
    assert!(allowed, "{INSIDE_RUNTIME}");
}

impl BlockingClient {
    pub(super) fn new(client: Client) -> Self {
        Self { client, cancel: None }
    }

    /// Calls end with `Cancelled` soon (within 25 ms) after `flag` becomes true.
    pub fn with_cancel_flag(mut self, flag: Arc<AtomicBool>) -> Self {
        self.cancel = Some(flag);
        self
    }

    /// Sends a typed command and waits for its whole typed reply.
    pub fn call<C: TypedCommand>(&self, command: C) -> Result<C::Reply, Error> {
        super::call::take::<C>(self.call_raw(command.into())?)
    }

    /// Sends any request and waits for its reply. This thread does the
    /// exchange itself when a connection is free: it writes the request and
    /// waits in the socket's read (`runtime::place`), no other thread involved.
    pub fn call_raw(&self, request: Request) -> Result<Reply, Error> {
        self.block_on(self.client.call_raw(request))
    }

    pub(super) fn call_listed<C: Listed>(&self, command: C) -> Result<C::Output, Error> {
        self.call(command).map(C::output)
    }

    fn cancelled(&self) -> bool {
        self.cancel.as_ref().is_some_and(|f| f.load(Ordering::Relaxed))
    }

    /// Runs one of the async client's composite calls on this thread,
    /// waking at least every [`BLOCKING_WAKE`] for the cancel flag; a
    /// cancelled call's future is dropped, which cancels its requests.
    pub(super) fn block_on<T: Cancellable>(&self, future: impl std::future::Future<Output = T>) -> T {
        refuse_inside_runtime();
        struct ThreadWaker(std::thread::Thread);
        impl std::task::Wake for ThreadWaker {
            fn wake(self: Arc<Self>) {
                self.0.unpark();
            }
        }
        let waker = std::task::Waker::from(Arc::new(ThreadWaker(std::thread::current())));
        let mut cx = std::task::Context::from_waker(&waker);
        let mut future = std::pin::pin!(future);
        loop {
            // A poll may wait in a socket read, one slice at most.
            if let std::task::Poll::Ready(out) = on_blocking_thread(|| future.as_mut().poll(&mut cx)) {
                return out;
            }
            if self.cancelled() {
                return T::cancelled();
            }
            std::thread::park_timeout(BLOCKING_WAKE);
        }
    }

    /// The latest diagnostics snapshot.
    pub fn diagnostics(&self) -> Arc<EngineDiagnostics> {
        self.client.diagnostics()
    }
}

/// What a composite call returns when its cancel flag stops it.
pub(super) trait Cancellable {
    fn cancelled() -> Self;
}

impl<T> Cancellable for Result<T, Error> {
    fn cancelled() -> Self {
        Err(Error::Request(RequestError::Cancelled))
    }
}

/// A cancelled wait for pushes received nothing.
impl<T> Cancellable for Option<T> {
    fn cancelled() -> Self {
        None
    }
}

impl Cancellable for super::Pushes {
    fn cancelled() -> Self {
        Self::default()
    }
}
