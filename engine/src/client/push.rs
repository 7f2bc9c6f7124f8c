//! Unsolicited frames (0x0547 updates after a `refresh_quotes`): the engine
//! buffers them within a bound; callers receive them in batches, tokio's
//! way: `recv_pushes` waits and returns `None` once the engine is closed and
//! nothing is left.

use super::Client;
use crate::runtime::core::PushBatch;
use crate::runtime::PushFrame;

/// Pushes returned by one read.
#[derive(Debug, Default)]
pub struct Pushes {
    /// Total pushes dropped since start, if any were dropped since the last read.
    pub overflow_total: Option<u64>,
    /// The frames, oldest first.
    pub frames: Vec<PushFrame>,
}

impl Pushes {
    fn is_empty(&self) -> bool {
        self.frames.is_empty() && self.overflow_total.is_none()
    }
}

impl From<PushBatch> for Pushes {
    fn from(batch: PushBatch) -> Self {
        Self { overflow_total: batch.overflow_total, frames: batch.frames }
    }
}

impl Client {
    /// Waits for up to `max` pushes (at least one frame, or a report of
    /// dropped ones). `None` once the engine is closed and nothing is
    /// buffered: the stream of pushes has ended.
    pub async fn recv_pushes(&self, max: usize) -> Option<Pushes> {
        let core = &self.inner.engine().core;
        loop {
            // Registered before reading, so a push that lands in between wakes us.
            let notified = core.pushed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let pushes = self.read_pushes(max);
            if !pushes.is_empty() {
                return Some(pushes);
            }
            if self.is_closed() {
                return None;
            }
            notified.await;
        }
    }

    /// Pushes as an async stream of batches (each up to `max_batch` frames),
    /// ending when [`recv_pushes`](Self::recv_pushes) would return `None`.
    pub fn push_stream(&self, max_batch: usize) -> PushStream {
        PushStream { client: self.clone(), max_batch, pending: None }
    }

    /// Whatever pushes are buffered now, without waiting for more (empty
    /// when there are none, whether or not the engine is closed).
    pub async fn drain_pushes(&self) -> Pushes {
        self.read_pushes(usize::MAX)
    }

    fn read_pushes(&self, max: usize) -> Pushes {
        self.inner.engine().core.read_pushes(max).into()
    }
}

/// An async stream of push batches; see [`Client::push_stream`].
pub struct PushStream {
    client: Client,
    max_batch: usize,
    pending: Option<std::pin::Pin<Box<dyn std::future::Future<Output = Option<Pushes>> + Send>>>,
}

impl std::fmt::Debug for PushStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushStream").field("max_batch", &self.max_batch).finish_non_exhaustive()
    }
}

impl futures_core::Stream for PushStream {
    type Item = Pushes;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Pushes>> {
        if self.pending.is_none() {
            let (client, max) = (self.client.clone(), self.max_batch);
            self.pending = Some(Box::pin(async move { client.recv_pushes(max).await }));
        }
        let pending = self.pending.as_mut().expect("set above");
        match pending.as_mut().poll(cx) {
            std::task::Poll::Pending => std::task::Poll::Pending,
            std::task::Poll::Ready(pushes) => {
                self.pending = None;
                std::task::Poll::Ready(pushes)
            }
        }
    }
}
