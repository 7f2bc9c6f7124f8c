//! A connector that counts the connections it handed out and that are
//! still alive, so the simulation can prove close leaves no socket behind.
//! (turmoil's own per-host stream count also keeps entries for connects
//! that were refused or abandoned, so it cannot tell.)

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tdx_engine::runtime::connector::Connector;
use tdx_engine::supervisor::Endpoint;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Wraps a connector; `live` is the number of its streams not yet dropped.
pub struct Counting<C> {
    inner: C,
    live: Arc<AtomicUsize>,
}

impl<C> Counting<C> {
    /// Counts `inner`'s streams into `live`.
    pub fn new(inner: C, live: Arc<AtomicUsize>) -> Self {
        Self { inner, live }
    }
}

/// A counted stream.
pub struct Counted<S> {
    stream: S,
    live: Arc<AtomicUsize>,
}

impl<S> Drop for Counted<S> {
    fn drop(&mut self) {
        self.live.fetch_sub(1, Ordering::SeqCst);
    }
}

impl<C: Connector> Connector for Counting<C> {
    type Stream = Counted<C::Stream>;

    async fn connect(&self, endpoint: &Endpoint, timeout: Duration) -> io::Result<Self::Stream> {
        let stream = self.inner.connect(endpoint, timeout).await?;
        self.live.fetch_add(1, Ordering::SeqCst);
        Ok(Counted { stream, live: self.live.clone() })
    }

    fn read_ready(&self, stream: &mut Self::Stream, waker: &std::task::Waker) -> bool {
        self.inner.read_ready(&mut stream.stream, waker)
    }

    fn begin_thread_loan(&self, stream: &mut Self::Stream) -> bool {
        self.inner.begin_thread_loan(&mut stream.stream)
    }

    fn read_slice(&self, stream: &mut Self::Stream, buf: &mut [u8], cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        self.inner.read_slice(&mut stream.stream, buf, cx)
    }

    fn end_thread_loan(&self, stream: &mut Self::Stream) {
        self.inner.end_thread_loan(&mut stream.stream)
    }

    fn off_reactor(&self, stream: &Self::Stream) -> bool {
        self.inner.off_reactor(&stream.stream)
    }

    fn reattach(&self, stream: &mut Self::Stream) -> io::Result<()> {
        self.inner.reattach(&mut stream.stream)
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}
