//! One request's life on the client side: encode its frame, once (a bad
//! input is the caller's error, before anything is queued), admit it without waiting,
//! await its reply, and cancel it if the caller's future is dropped first.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tracing::Instrument;

use super::commands::Listed;
use super::pools::Pool;
use super::Client;
use crate::error::Error;
use crate::proto::commands::TypedCommand;
use crate::proto::{Reply, Request};
use crate::runtime::core::{Call, Core, Submitted};
use crate::runtime::place::Place;
use crate::supervisor::{PinId, RequestError, RequestId};

/// Cancels its request when dropped before completion (disarmed by
/// [`CancelOnDrop::disarm`]). Cancelling is one input to the core, applied
/// right here: it can neither wait nor fail.
pub(super) struct CancelOnDrop<'a> {
    core: Option<&'a Core>,
    id: RequestId,
}

impl CancelOnDrop<'_> {
    /// The request has completed: nothing to cancel.
    pub(super) fn disarm(&mut self) {
        self.core = None;
    }
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(core) = self.core.take() {
            core.cancel(self.id);
        }
    }
}

/// The typed reply of `C` out of `reply`. Another command's reply is the
/// engine's bug (it pairs replies with their requests), not the caller's.
pub(super) fn take<C: TypedCommand>(reply: Reply) -> Result<C::Reply, Error> {
    C::take_reply(reply).ok_or_else(|| Error::Internal(format!("{} got a reply of another command", C::NAME)))
}

impl Client {
    /// A request as the core takes it: its frame encoded once, here (a bad
    /// input is the caller's error, and the connection writes these bytes
    /// with its msg_id patched in), a fresh id, and its deadline read off the
    /// engine clock as seen from `runtime` (the caller's). Returns the guard
    /// that cancels it if dropped before completion.
    fn prepare(
        &self,
        request: Request,
        pin: Option<(Pool, PinId)>,
        place: Place,
    ) -> Result<(Call, &Core, CancelOnDrop<'_>), Error> {
        let pool = Pool::of(&request);
        if let Some((pinned, _)) = pin.filter(|(pinned, _)| *pinned != pool) {
            return Err(Error::InvalidRequest(format!(
                "{} goes to the {pool} pool, not to a connection pinned in the {pinned} pool",
                request.name()
            )));
        }
        // Room for a header and a short body up front: growing from empty
        // reallocated once per request.
        let mut frame = Vec::with_capacity(64);
        request.encode_frame(0, &mut frame).map_err(|e| Error::InvalidRequest(e.to_string()))?;
        let id = RequestId(self.inner.next_id.fetch_add(1, Ordering::Relaxed));
        let core = &*self.inner.pool(pool)?.core;
        let admitted = core.now_on(place.runtime());
        let deadline = admitted + self.inner.timeout;
        let call = Call { id, request: Arc::new(request), frame, admitted, deadline, pin: pin.map(|(_, id)| id) };
        Ok((call, core, CancelOnDrop { core: Some(core), id }))
    }

    /// Sends a typed command and awaits its whole typed reply. The named
    /// methods (`client.bars(..)`) call this and unwrap the rows.
    pub async fn call<C: TypedCommand>(&self, command: C) -> Result<C::Reply, Error> {
        take::<C>(self.call_raw(command.into()).await?)
    }

    /// Sends any [`Request`] and awaits its [`Reply`].
    pub async fn call_raw(&self, request: Request) -> Result<Reply, Error> {
        self.call_on(request, None).await
    }

    /// A listed command's typed method: the call, then the reply unwrapped.
    pub(super) async fn call_listed<C: Listed>(&self, command: C) -> Result<C::Output, Error> {
        self.call(command).await.map(C::output)
    }

    /// One call, in the order its outcome can come:
    ///
    /// 1. submitted to the core, which may refuse it at once (`Done`);
    /// 2. sent at once on a connection parked where this caller may borrow
    ///    it (its runtime's, or any for a caller on a blocking thread,
    ///    `runtime::place`): the caller does the exchange itself (`Lent`,
    ///    `runtime::loan`), and its outcome comes straight back from its
    ///    reply's apply, or, when the request ended or went on elsewhere,
    ///    from the core;
    /// 3. otherwise a slot task carries it, and the outcome comes on a channel.
    pub(super) async fn call_on(&self, request: Request, pin: Option<(Pool, PinId)>) -> Result<Reply, Error> {
        let span = tracing::debug_span!("request", command = request.name());
        async move {
            let place = Place::current();
            let (call, core, mut guard) = self.prepare(request, pin, place)?;
            let waiting = match core.submit(call, place) {
                Submitted::Done(outcome) => Ok(outcome),
                Submitted::Waiting(rx) => Err(rx),
                // Boxed: its state then lives in a heap chunk the
                // allocator's per-thread cache hands back hot to the next
                // request on this thread, not in the caller's task
                // (docs/decisions/0003-boxed-lent-exchange.md).
                Submitted::Lent(loan) => match Box::pin(loan.run(core)).await {
                    Some(outcome) => Ok(outcome),
                    None => core.outcome(guard.id),
                },
            };
            let outcome = match waiting {
                Ok(outcome) => outcome,
                Err(rx) => rx.await.map_err(|_| Error::Request(RequestError::Closed))?,
            };
            guard.disarm();
            outcome.map(|reply| *reply).map_err(Error::Request)
        }
        .instrument(span)
        .await
    }
}
