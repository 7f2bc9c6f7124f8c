//! One request's life on the client side: encode its frame, once (a bad
//! input is the caller's error, before anything is queued), admit it without waiting,
//! await its reply, and cancel it if the caller's future is dropped first.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};
use tracing::Instrument;

use super::commands::Listed;
use super::Client;
use crate::error::Error;
use crate::proto::commands::TypedCommand;
use crate::proto::{Reply, Request};
use crate::runtime::driver::{Admission, Control, Outcome, Waiter};
use crate::supervisor::{PinId, RequestError, RequestId};

/// Room reserved on the control lane for one message sent from `Drop`,
/// which can neither wait nor fail (see `Control`).
pub(super) type ControlPermit = mpsc::OwnedPermit<Control>;

/// Cancels its request when dropped before completion (disarmed by
/// dropping the permit).
pub(super) struct CancelOnDrop {
    pub(super) permit: Option<ControlPermit>,
    id: RequestId,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(permit) = self.permit.take() {
            permit.send(Control::Cancel(self.id));
        }
    }
}

/// A lane that cannot take the message: full is `PoolBusy`, gone is `Closed`.
pub(super) fn refused(e: mpsc::error::TrySendError<impl Sized>) -> Error {
    match e {
        mpsc::error::TrySendError::Full(_) => Error::Request(RequestError::PoolBusy),
        mpsc::error::TrySendError::Closed(_) => Error::Request(RequestError::Closed),
    }
}

/// The typed reply of `C` out of `reply`. Another command's reply is the
/// engine's bug (it pairs replies with their requests), not the caller's.
pub(super) fn take<C: TypedCommand>(reply: Reply) -> Result<C::Reply, Error> {
    C::take_reply(reply).ok_or_else(|| Error::Internal(format!("{} got a reply of another command", C::NAME)))
}

impl Client {
    /// Room for the one control message (a cancel or an unpin) the
    /// caller's handle may send when dropped; none left is `PoolBusy`.
    pub(super) fn control_permit(&self) -> Result<ControlPermit, Error> {
        self.inner.engine().control.clone().try_reserve_owned().map_err(refused)
    }

    /// Admits a request; returns a guard that cancels it if dropped before
    /// completion.
    pub(super) fn admit(&self, request: Request, pin: Option<PinId>, waiter: Waiter) -> Result<CancelOnDrop, Error> {
        // Encoded once, here: a bad input is the caller's error, and the
        // slot task writes these bytes with its msg_id patched in.
        // Room for a header and a short body up front: growing from empty
        // reallocated once per request (6 % of the callers' thread in a
        // light-request profile).
        let mut frame = Vec::with_capacity(64);
        request.encode_frame(0, &mut frame).map_err(|e| Error::InvalidRequest(e.to_string()))?;
        let permit = self.control_permit()?;
        let id = RequestId(self.inner.next_id.fetch_add(1, Ordering::Relaxed));
        let deadline = self.inner.deadline();
        let admission = Admission::Submit { id, request: Arc::new(request), frame, deadline, pin, waiter };
        self.inner.engine().admit.try_send(admission).map_err(refused)?;
        Ok(CancelOnDrop { permit: Some(permit), id })
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

    pub(super) async fn call_on(&self, request: Request, pin: Option<PinId>) -> Result<Reply, Error> {
        let span = tracing::debug_span!("request", command = request.name());
        async move {
            let (tx, rx) = oneshot::channel::<Outcome>();
            let mut guard = self.admit(request, pin, Waiter::Async(tx))?;
            let outcome = rx.await.map_err(|_| Error::Request(RequestError::Closed))?;
            guard.permit = None;
            outcome.map(|reply| *reply).map_err(Error::Request)
        }
        .instrument(span)
        .await
    }
}
