//! One connection held for exclusive use (a file downloaded from one
//! server's copy, calls that must run in order). A pin is taken through
//! the same FIFO as requests and released when dropped.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::sync::oneshot;

use super::commands::Listed;
use super::pools::Pool;
use super::Client;
use crate::error::Error;
use crate::proto::commands::TypedCommand;
use crate::proto::{Reply, Request};
use crate::runtime::core::Core;
use crate::supervisor::{PinId, RequestError, SlotId};

/// Releases its pin when dropped: one input to the core, applied right
/// here (it can neither wait nor fail).
struct ReleaseOnDrop {
    core: Arc<Core>,
    id: PinId,
}

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        self.core.release(self.id);
    }
}

/// One connection held for exclusive use; released on drop. It has every
/// typed command method the [`Client`] has (from the command list).
pub struct Pinned {
    client: Client,
    pool: Pool,
    id: PinId,
    slot: SlotId,
    _release: ReleaseOnDrop,
}

impl std::fmt::Debug for Pinned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pinned").field("pool", &self.pool).field("id", &self.id).field("slot", &self.slot).finish()
    }
}

impl Client {
    /// Takes one connection of the main pool for exclusive use, through the
    /// same FIFO as requests. Calls on the pin run in order on that
    /// connection; dropping it returns the connection.
    pub async fn pin(&self) -> Result<Pinned, Error> {
        self.pin_in(Pool::Main).await
    }

    /// Takes one connection of `pool` for exclusive use (see [`pin`](Self::pin));
    /// a command of another pool on it is refused as `InvalidRequest`.
    pub async fn pin_in(&self, pool: Pool) -> Result<Pinned, Error> {
        let id = PinId(self.inner.next_id.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        let core = self.inner.pool(pool)?.core.clone();
        let deadline = core.now() + self.inner.timeout;
        core.pin(id, deadline, tx);
        let release = ReleaseOnDrop { core, id };
        let slot = rx.await.map_err(|_| Error::Request(RequestError::Closed))?.map_err(Error::Request)?;
        Ok(Pinned { client: self.clone(), pool, id, slot, _release: release })
    }
}

impl Pinned {
    /// The slot held.
    pub fn slot(&self) -> SlotId {
        self.slot
    }

    /// The pool the slot is in.
    pub fn pool(&self) -> Pool {
        self.pool
    }

    /// Sends a typed command on the pinned connection and awaits its whole reply.
    pub async fn call<C: TypedCommand>(&self, command: C) -> Result<C::Reply, Error> {
        super::call::take::<C>(self.call_raw(command.into()).await?)
    }

    /// Sends any request on the pinned connection; calls run in order.
    pub async fn call_raw(&self, request: Request) -> Result<Reply, Error> {
        self.client.call_on(request, Some((self.pool, self.id))).await
    }

    pub(super) async fn call_listed<C: Listed>(&self, command: C) -> Result<C::Output, Error> {
        self.call(command).await.map(C::output)
    }
}
