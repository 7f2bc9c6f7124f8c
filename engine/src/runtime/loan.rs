//! Lending a ready connection to the caller whose request it carries, so
//! the caller does its own exchange: writes the request, waits for the
//! socket, reads, decodes and parses the reply, and applies it to the core,
//! all in its own task. A request's life is then one wake-up (the socket's,
//! of the caller), as in a raw socket loop, instead of three (the slot task
//! for the send, the slot task for the reply, the caller).
//!
//! When: the Supervisor sends a caller's request on a connection whose
//! slot task has parked it with its [`Lender`], and the caller runs on the
//! runtime that connection is registered with (on another runtime, the
//! socket's reactor would have to wake the caller across threads:
//! docs/decisions/0002-lending.md). Otherwise the request goes to the slot
//! task.
//!
//! While lent, the slot task does not touch the connection: the caller's
//! socket read replaces the slot task's registered waker, and giving the
//! connection back re-arms it without a wake-up (or wakes the task when
//! bytes, staged frames or a command wait for it). A retire while lent
//! closes the loan cell and wakes the borrower, which drops the connection;
//! a borrower whose exchange fails closes the cell and reports the failure
//! itself, so every generation's end is reported exactly once
//! ([`crate::sync::LoanCell`], loom-checked).
//!
//! One idea, one word: a [`Lender`] per slot generation (the cell its
//! slot task parks the connection in), a [`Loan`] (the connection handed
//! to a caller for one request), [`OnLoan`] (the session while the
//! borrower holds it).
//!
//! One caveat comes with the caller doing its own reads: a call's future
//! that is polled once and then neither polled again nor dropped holds its
//! connection (and its reply, unread) until the request's deadline, when
//! the engine retires that connection. Dropping the future returns it at once.

use std::future::{poll_fn, Future};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use super::catch_panic::CatchPanic;
use super::connector::Connector;
use super::messages::{Applied, End, Holder, Outcome, Outgoing, Reports};
use super::session::{Ctx, EngineShared, Prepared, SentAt, Session, Stream};
use crate::supervisor::{Input, RequestId, SlotError, SlotRef};
use crate::sync::{Closed, LoanCell};

/// What a loan needs of the connection's connector, whatever its stream.
pub(crate) trait StreamOps: Send + Sync {
    /// Registers the slot task's waker for the stream's next bytes, and
    /// says whether it has some now (never asked off its reactor).
    fn read_ready(&self, stream: &mut dyn Stream, waker: &Waker) -> bool;
    /// Readies the stream for a thread borrower; false: it cannot.
    fn begin_thread_loan(&self, stream: &mut dyn Stream) -> bool;
    /// A thread borrower's read, one slice at most.
    fn read_slice(&self, stream: &mut dyn Stream, buf: &mut [u8], cx: &mut Context<'_>) -> Poll<io::Result<usize>>;
    /// Ends a thread loan.
    fn end_thread_loan(&self, stream: &mut dyn Stream);
    /// Whether the stream is off its runtime's reactor (see [`Connector::off_reactor`]).
    fn off_reactor(&self, stream: &dyn Stream) -> bool;
    /// Puts the stream back on its runtime's reactor.
    fn reattach(&self, stream: &mut dyn Stream) -> io::Result<()>;
}

/// A connector's operations on its own stream type.
pub(crate) struct ConnectorOps<C>(pub(crate) Arc<C>);

impl<C: Connector> StreamOps for ConnectorOps<C> {
    fn read_ready(&self, stream: &mut dyn Stream, waker: &Waker) -> bool {
        stream.as_any_mut().downcast_mut::<C::Stream>().is_none_or(|stream| self.0.read_ready(stream, waker))
    }

    fn begin_thread_loan(&self, stream: &mut dyn Stream) -> bool {
        stream.as_any_mut().downcast_mut::<C::Stream>().is_some_and(|stream| self.0.begin_thread_loan(stream))
    }

    fn read_slice(&self, stream: &mut dyn Stream, buf: &mut [u8], cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        match stream.as_any_mut().downcast_mut::<C::Stream>() {
            Some(stream) => self.0.read_slice(stream, buf, cx),
            None => Poll::Ready(Err(io::Error::other("a connection of another connector"))),
        }
    }

    fn end_thread_loan(&self, stream: &mut dyn Stream) {
        if let Some(stream) = stream.as_any_mut().downcast_mut::<C::Stream>() {
            self.0.end_thread_loan(stream);
        }
    }

    fn off_reactor(&self, stream: &dyn Stream) -> bool {
        stream.as_any().downcast_ref::<C::Stream>().is_some_and(|stream| self.0.off_reactor(stream))
    }

    fn reattach(&self, stream: &mut dyn Stream) -> io::Result<()> {
        match stream.as_any_mut().downcast_mut::<C::Stream>() {
            Some(stream) => self.0.reattach(stream),
            None => Ok(()),
        }
    }
}

/// One slot generation's connection, between its slot task and borrowers.
/// The session is boxed once, so parking and lending move a pointer.
pub(crate) struct Lender {
    pub(crate) cell: LoanCell<Box<Session>>,
    at: SlotRef,
    budgets: EngineShared,
    pub(crate) ops: Arc<dyn StreamOps>,
    /// A thread loan left the connection off its reactor, and its slot
    /// task has not put it back yet.
    pub(crate) off_reactor: AtomicBool,
    /// Its slot task watches it for the loans to pause: giving it back
    /// off the reactor needs no wake-up.
    pub(crate) watched: AtomicBool,
}

impl Lender {
    pub(crate) fn new(at: SlotRef, budgets: EngineShared, ops: Arc<dyn StreamOps>) -> Self {
        Self {
            cell: LoanCell::default(),
            at,
            budgets,
            ops,
            off_reactor: AtomicBool::new(false),
            watched: AtomicBool::new(false),
        }
    }

    /// Lends the connection for `outgoing`, the first send of `own`
    /// submitted at `now` (by a caller on a `thread` of its own, which waits
    /// in its reads), if its slot task has it parked now; otherwise gives
    /// the request back. Called under the core's lock (the cell's lock nests
    /// inside it).
    pub(crate) fn lend(
        self: &Arc<Self>,
        outgoing: Outgoing,
        own: RequestId,
        now: Instant,
        thread: bool,
    ) -> Result<Loan, Outgoing> {
        match self.cell.try_borrow() {
            Some(session) => {
                Ok(Loan { lender: self.clone(), lent: Some((session, outgoing)), submitted: now, own, thread })
            }
            None => Err(outgoing),
        }
    }

    /// The borrower's request ended elsewhere: stop its exchange (the
    /// outcome waits in its waiter) and wake it.
    pub(crate) fn stop_borrower(&self) {
        self.cell.stop_borrower();
    }

    /// Gives a borrowed session back to the slot task: re-armed on the
    /// socket with the task's waker, or the task woken when it has work.
    fn give_back(&self, session: Box<Session>) {
        self.cell.give_back(session, |session, owner: &Waker| {
            if session.has_staged_frames() {
                return true;
            }
            if self.ops.off_reactor(&*session.conn.stream) {
                // Its bytes wake nobody now: its task must watch it.
                self.off_reactor.store(true, Ordering::SeqCst);
                return !self.watched.load(Ordering::SeqCst);
            }
            self.ops.read_ready(&mut *session.conn.stream, owner)
        });
    }
}

/// A connection lent to the caller whose request it will carry: run it in
/// the caller's own task, against the core that lent it. `Some` is the
/// request's outcome, `None` that the outcome will come to its waiter
/// instead (the reply went for a second opinion, the connection failed or
/// was retired). Dropped unrun, it gives the connection back.
pub(crate) struct Loan {
    lender: Arc<Lender>,
    /// The session and the request to write on it, taken when it runs.
    lent: Option<(Box<Session>, Outgoing)>,
    submitted: Instant,
    own: RequestId,
    /// Lent to a caller's own thread, which waits in its reads.
    thread: bool,
}

impl std::fmt::Debug for Loan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loan").field("at", &self.lender.at).field("own", &self.own).finish_non_exhaustive()
    }
}

impl Drop for Loan {
    fn drop(&mut self) {
        // Unrun: the connection goes back (`run` takes it out first).
        if let Some((session, _)) = self.lent.take() {
            self.lender.give_back(session);
        }
    }
}

impl Loan {
    /// The caller's exchange on the borrowed connection (see the module
    /// docs), its inputs applied to `core` (the one that lent it; borrowed,
    /// so a request touches no reference count of the engine's).
    ///
    /// An `async` block, not an `async fn`: the function's arguments would
    /// be kept twice in its state, and every byte of this future is in the
    /// box each lent request allocates (see [`apply_aside`]).
    #[allow(clippy::manual_async_fn)]
    pub(crate) fn run(mut self, core: &dyn Reports) -> impl Future<Output = Option<Outcome>> + '_ {
        async move {
            // Always there: a lease runs once, and is made with both.
            let (mut session, outgoing) = self.lent.take()?;
            let lender = &*self.lender;
            // A stream that cannot block a thread is read as a task reads it.
            let thread = self.thread && lender.ops.begin_thread_loan(&mut *session.conn.stream);
            let mut on_loan = OnLoan { lender, session: Some(session), thread };
            let ctx = Ctx { at: lender.at, core, budgets: &lender.budgets, own: Some(self.own) };
            let ended = {
                let exchange = exchange(&mut on_loan, &ctx, (outgoing, self.submitted));
                tokio::pin!(exchange);
                // A panic is this connection's failure, as in a slot task, never the caller's.
                CatchPanic(exchange.as_mut()).await
            };
            let error = match ended {
                Ok(Ok(outcome)) => return outcome,
                Ok(Err(End::Failed(error))) => error,
                // Retired meanwhile, or the engine is gone: the outcome comes to the waiter.
                Ok(Err(_)) => return None,
                Err(message) => {
                    lender.budgets.slot_panics.fetch_add(1, Ordering::Relaxed);
                    lender.budgets.lent_panics.fetch_add(1, Ordering::Relaxed);
                    let error = SlotError::Io(format!("a borrowed exchange panicked: {message}"));
                    tracing::error!(slot = lender.at.slot.0, %error, "borrowed exchange panicked; retiring the slot");
                    error
                }
            };
            // Not given back: the connection is broken. Dropping it closes the socket.
            drop(on_loan.session.take());
            fail(lender, core, error);
            None
        }
    }
}

/// The session while a borrower has it: given back when dropped (the
/// caller's future dropped, or a panic unwinding), unless taken first.
struct OnLoan<'l> {
    lender: &'l Lender,
    session: Option<Box<Session>>,
    /// A thread loan, its stream readied by `begin_thread_loan`: ended
    /// before the connection goes back.
    thread: bool,
}

impl OnLoan<'_> {
    fn session_mut(&mut self) -> &mut Session {
        self.session.as_mut().expect("held until given back")
    }

    fn give_back(&mut self) {
        if let Some(mut session) = self.session.take() {
            if self.thread {
                if crate::mutants::on(crate::mutants::Mutant::ThreadLoanNotGivenBack) {
                    std::mem::forget(session);
                    return;
                }
                self.lender.ops.end_thread_loan(&mut *session.conn.stream);
            }
            self.lender.give_back(session);
        }
    }

    /// Bytes for the borrower: a thread borrower waits in the read, a slice
    /// at a time; a task registers its waker with the socket.
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let (lender, thread) = (self.lender, self.thread);
        let session = self.session_mut();
        if thread {
            return session.poll_fill_with(cx, |stream, buf, cx| lender.ops.read_slice(stream, buf, cx));
        }
        session.poll_fill(cx)
    }
}

impl Drop for OnLoan<'_> {
    fn drop(&mut self) {
        self.give_back();
    }
}

/// Writes the request, then serves reads until its reply has been applied.
/// When the reply is the last frame of its round (the usual case), the
/// connection is given back before the reply is applied: the apply frees
/// the slot in the Supervisor, and the next caller it goes to then finds
/// the connection parked, ready to borrow.
///
/// The request's send time is taken as its submission's (`submitted`, the
/// same clock reading, microseconds before the write): one clock read less
/// per request.
async fn exchange(
    on_loan: &mut OnLoan<'_>,
    ctx: &Ctx<'_>,
    (outgoing, submitted): (Outgoing, Instant),
) -> Result<Option<Outcome>, End> {
    let lender = on_loan.lender;
    let mine = outgoing.msg_id;
    on_loan.session_mut().write(outgoing, SentAt::Known(submitted)).await?;
    loop {
        let read = poll_fn(|cx| {
            if !lender.cell.register_borrower(cx.waker()) {
                return Poll::Ready(None);
            }
            on_loan.poll_fill(cx).map(Some)
        })
        .await;
        let Some(read) = read else { return Err(End::ReportedElsewhere) };
        let session = on_loan.session_mut();
        let mut frames = session.decode_read(read).await?;
        let last = frames.pop();
        let mut own = None;
        for frame in frames.drain(..) {
            let prepared = session.prepare(frame, ctx).await;
            own = own.or(apply_aside(session, prepared, ctx).await?);
        }
        session.recycle(frames);
        if let Some(frame) = last {
            let prepared = session.prepare(frame, ctx).await;
            if prepared.answers(mine) && own.is_none() {
                on_loan.give_back();
                let Applied { own, outgoing } = prepared.apply(ctx, false)?;
                debug_assert!(outgoing.is_none(), "a send on a given-back connection goes to its slot task");
                return Ok(own);
            }
            own = own.or(apply_aside(session, prepared, ctx).await?);
        }
        if own.is_some() || !session.awaits(mine) {
            return Ok(own);
        }
    }
}

/// Applies a frame that is not the reply the borrower waits for (a push, a
/// heartbeat's reply, frames ahead of its own): the rare path, boxed, as
/// its inline write of a resulting send would otherwise make every
/// exchange's future larger, past what the allocator's per-thread cache
/// serves (docs/decisions/0003-boxed-lent-exchange.md).
async fn apply_aside(session: &mut Session, prepared: Prepared<'_>, ctx: &Ctx<'_>) -> Result<Option<Outcome>, End> {
    Box::pin(session.apply(prepared, ctx)).await
}

/// A borrowed exchange failed: the connection is closed (its session
/// already dropped) and, unless the slot task ended it first, the failure
/// is reported here, once for the generation.
fn fail(lender: &Lender, core: &dyn Reports, error: SlotError) {
    if lender.cell.close() == Closed::First && !crate::mutants::on(crate::mutants::Mutant::BorrowerFailureUnreported) {
        tracing::debug!(slot = lender.at.slot.0, %error, "borrowed connection failed");
        let _ = core.slot_input(lender.at, Input::SlotFailed { at: lender.at, error }, Holder::Task);
    }
}

#[cfg(test)]
mod tests {
    use super::{Loan, Reports};

    /// The size of the future a closure returns, without making one.
    fn future_size<A, F>(_: impl Fn(A) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// Why: every lent request boxes its exchange, and glibc's per-thread
    /// cache serves only chunks up to 1,032 bytes; a larger future takes
    /// the allocator's slower bins on every request
    /// (docs/decisions/0003-boxed-lent-exchange.md).
    #[test]
    fn a_lent_exchange_fits_the_allocators_thread_cache() {
        let size = future_size(|(loan, core): (Loan, &'static dyn Reports)| loan.run(core));
        assert!(size <= 1032, "the lent exchange's future is {size} bytes");
    }
}
