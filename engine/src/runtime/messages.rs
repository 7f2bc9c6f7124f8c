//! What the core and the holders of a connection (its slot task, or a
//! caller it is lent to) say to each other. This file imports nothing else
//! of the runtime: the session, the loan, the slot task and the core all
//! build on it.

use std::sync::Arc;
use std::time::Instant;

use crate::proto::{Reply, Request};
use crate::supervisor::{Input, RequestError, RequestId, SlotError, SlotRef};

/// A request's outcome.
pub(crate) type Outcome = Result<Box<Reply>, RequestError>;

/// A request to write on a connection.
#[derive(Debug)]
pub(crate) struct Outgoing {
    pub(crate) msg_id: u32,
    pub(crate) request: Arc<Request>,
    /// The frame the client encoded (msg_id 0), on the request's first send;
    /// `None`: encode `request` where it is written (a resend, a heartbeat, a
    /// canary query).
    pub(crate) frame: Option<Vec<u8>>,
}

/// Commands a slot task may have queued: one `Send` (a connection carries
/// one exchange at a time, the next is sent only after the reply the task
/// read, and a send caused by the task's own input is written inline) and
/// one `Retire`.
pub(crate) const SLOT_COMMANDS_MAX: usize = 2;

/// What the core tells a slot task: the sends caused by others' inputs, and
/// its end. (Each generation has its own channel, so commands carry none.)
#[derive(Debug)]
pub(crate) enum SlotCommand {
    /// Write this request.
    Send(Outgoing),
    /// Close the socket and end the task.
    Retire,
}

/// Who holds a connection while applying its input, for what may come
/// straight back to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Holder {
    /// Its slot task: a send on the connection comes back to be written at once.
    Task,
    /// A borrower doing request `own`'s exchange: `own`'s outcome comes
    /// back instead of going to its waiter, and a send on the connection
    /// comes back too while the borrower is still `holding` it (else the
    /// slot task gets it).
    Borrower { own: RequestId, holding: bool },
}

/// What applying a connection's input caused for its holder.
#[derive(Debug, Default)]
pub(crate) struct Applied {
    /// The request to write now on this connection.
    pub(crate) outgoing: Option<Outgoing>,
    /// The borrower's own request's outcome.
    pub(crate) own: Option<Outcome>,
}

/// The engine has finished: a connection's report has no one to go to.
#[derive(Debug)]
pub(crate) struct Finished;

/// Where a connection's inputs go: the engine's core; a test may stand a
/// channel in.
pub(crate) trait Reports: Send + Sync + 'static {
    /// Applies `input` from the connection at `at`, held by `holder`.
    fn slot_input(&self, at: SlotRef, input: Input, holder: Holder) -> Result<Applied, Finished>;
    /// The engine's clock, for send times.
    fn now(&self) -> Instant;
}

/// Why a connection's exchange (its slot task's, or a borrower's) stopped.
#[derive(Debug)]
pub(crate) enum End {
    /// The connection failed: report this.
    Failed(SlotError),
    /// Retired: report `SlotClosed`.
    Retired,
    /// The engine has finished: report nothing.
    EngineGone,
    /// Someone else ended this generation and reported it (a borrower whose
    /// exchange failed, or the slot task retiring it): report nothing.
    ReportedElsewhere,
}
