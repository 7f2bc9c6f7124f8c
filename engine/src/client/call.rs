//! One request's life on the client side: encode its frame, once (a bad
//! input is the caller's error, before anything is queued), admit it without waiting,
//! await its reply, and cancel it if the caller's future is dropped first.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tracing::Instrument;

use super::commands::Listed;
use super::Client;
use crate::error::Error;
use crate::proto::commands::TypedCommand;
use crate::proto::{Reply, Request};
use crate::runtime::locked::{Core, Submitted, Waiter};
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
    /// Admits a request (its outcome goes to `waiter`, at once for a refused
    /// one); returns a guard that cancels it if dropped before completion,
    /// and the exchange to do on a lent connection when the request was
    /// sent at once on one parked on `runtime` (the caller's).
    pub(super) fn admit(
        &self,
        request: Request,
        pin: Option<PinId>,
        waiter: Waiter,
        runtime: Option<tokio::runtime::Id>,
    ) -> Result<(CancelOnDrop<'_>, Submitted), Error> {
        // Encoded once, here: a bad input is the caller's error, and the
        // slot task writes these bytes with its msg_id patched in.
        // Room for a header and a short body up front: growing from empty
        // reallocated once per request (6 % of the callers' thread in a
        // light-request profile).
        let mut frame = Vec::with_capacity(64);
        request.encode_frame(0, &mut frame).map_err(|e| Error::InvalidRequest(e.to_string()))?;
        let id = RequestId(self.inner.next_id.fetch_add(1, Ordering::Relaxed));
        let core = &*self.inner.engine().core;
        let now = core.now_on(runtime);
        let submitted = core.submit(id, Arc::new(request), frame, now, now + self.inner.timeout, pin, waiter, runtime);
        Ok((CancelOnDrop { core: Some(core), id }, submitted))
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

    /// One call. A caller on the runtime of the connection its request
    /// goes out on does the exchange itself (`runtime::lending`); its
    /// outcome comes from that, or else from the waiter.
    pub(super) async fn call_on(&self, request: Request, pin: Option<PinId>) -> Result<Reply, Error> {
        let span = tracing::debug_span!("request", command = request.name());
        async move {
            let runtime = tokio::runtime::Handle::try_current().ok().map(|h| h.id());
            let (mut guard, submitted) = self.admit(request, pin, Waiter::OnDemand(None), runtime)?;
            let core = &*self.inner.engine().core;
            let waiting = match submitted {
                Submitted::Done(outcome) => Ok(outcome),
                Submitted::Waiting(rx) => Err(rx),
                // Boxed: its ~950 bytes of state then live in a heap chunk
                // the allocator's per-thread cache hands back hot to the
                // next request on this thread, not in the caller's task
                // (cold again by the time it runs, with 160 of them: inline
                // measured 10-25 % slower at 20x8 in alternating runs, for
                // fewer instructions). Kept small enough for that cache.
                Submitted::Lent(lease) => match Box::pin(lease.run(core)).await {
                    Some(outcome) => Ok(outcome),
                    // Its request ended elsewhere, or went on elsewhere.
                    None => core.outcome(guard.id),
                },
                Submitted::Registered => {
                    return Err(Error::Internal("an async call's waiter is made on demand".into()));
                }
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
