//! How slot tasks open connections: [`TcpConnector`] (tokio sockets tuned
//! through socket2) by default, or `TurmoilConnector` behind the
//! `turmoil` feature for simulations. Both take only literal `IP:port`
//! endpoints: resolving names would need a blocking thread per lookup.

use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};

pub use super::tcp_conn::{TcpConn, THREAD_READ_SLICE};
use crate::supervisor::Endpoint;

/// Opens one connection to an endpoint.
pub trait Connector: Send + Sync + 'static {
    /// The connection.
    type Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    /// Connects within `timeout`.
    fn connect(&self, endpoint: &Endpoint, timeout: Duration) -> impl Future<Output = io::Result<Self::Stream>> + Send;

    /// Registers `waker` to be woken when `stream` has bytes to read, and
    /// says whether it has some already. A borrowed connection goes back
    /// to its slot task this way without waking it. The default cannot
    /// register without reading and says `true`: the task is woken and
    /// polls the stream itself (correct, one wake-up dearer). Not called
    /// for a stream [off its reactor](Self::off_reactor).
    fn read_ready(&self, stream: &mut Self::Stream, waker: &Waker) -> bool {
        let _ = (stream, waker);
        true
    }

    /// Lends `stream` to a caller's own thread, which then waits in its
    /// reads ([`read_slice`](Self::read_slice)) instead of being woken by a
    /// reactor on another thread. False: it cannot, and the borrower waits
    /// as a task does (the default).
    fn begin_thread_loan(&self, stream: &mut Self::Stream) -> bool {
        let _ = stream;
        false
    }

    /// A thread borrower's read: up to `buf.len()` bytes, waiting at most
    /// [`THREAD_READ_SLICE`]. `Pending` when the slice passed with none (the
    /// waker is woken at once, so the caller's thread polls again after
    /// looking at its cancel flag). The default reads as a task does.
    fn read_slice(&self, stream: &mut Self::Stream, buf: &mut [u8], cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let mut read = tokio::io::ReadBuf::new(buf);
        std::pin::Pin::new(stream).poll_read(cx, &mut read).map_ok(|()| read.filled().len())
    }

    /// Ends a thread loan. The stream may stay [off its
    /// reactor](Self::off_reactor) for the next one.
    fn end_thread_loan(&self, stream: &mut Self::Stream) {
        let _ = stream;
    }

    /// Whether `stream` is off its runtime's reactor, left there by thread
    /// loans: nothing wakes its slot task for its bytes, so the task puts it
    /// back ([`reattach`](Self::reattach)) once the loans pause. Whoever
    /// reads or writes it as a task puts it back first.
    fn off_reactor(&self, stream: &Self::Stream) -> bool {
        let _ = stream;
        false
    }

    /// Puts `stream` back on its runtime's reactor.
    fn reattach(&self, stream: &mut Self::Stream) -> io::Result<()> {
        let _ = stream;
        Ok(())
    }
}

fn socket_addr(endpoint: &Endpoint) -> io::Result<SocketAddr> {
    let ip = endpoint.ip().ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, format!("{endpoint}: host must be an IP address"))
    })?;
    if !ip.is_loopback() && loopback_only() {
        let why = format!("{endpoint}: refused, {LOOPBACK_ONLY_ENV} is set and this is not a loopback address");
        return Err(io::Error::new(io::ErrorKind::PermissionDenied, why));
    }
    Ok(SocketAddr::new(ip, endpoint.port))
}

/// When set (to anything but empty or `0`), TCP connects go to loopback
/// addresses only. CI and the test scripts set it: a guard for the rule that
/// no test ever reaches a real server.
pub const LOOPBACK_ONLY_ENV: &str = "TDX_ENGINE_LOOPBACK_ONLY";

/// Whether [`LOOPBACK_ONLY_ENV`] is set: every client the project runs
/// (TCP, the F10 gateway, the store's object storage) keeps to loopback then.
pub fn loopback_only() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var(LOOPBACK_ONLY_ENV).is_ok_and(|v| !v.is_empty() && v != "0"))
}

/// Whether a URL's host (`127.0.0.1`, `[::1]`, `localhost`) names this
/// machine: the check the HTTP clients (the F10 gateway, the store's object
/// storage) make under [`loopback_only`]. A v4-mapped `[::ffff:127.0.0.1]`
/// is not loopback here, as the standard library says.
pub fn is_loopback_host(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost") || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Tokio TCP: no Nagle delay, keepalive probes, a connect timeout.
#[derive(Debug, Clone)]
pub struct TcpConnector {
    /// Idle time before keepalive probes start; `None` leaves the OS default.
    pub keepalive: Option<Duration>,
}

impl Default for TcpConnector {
    fn default() -> Self {
        Self { keepalive: Some(Duration::from_secs(60)) }
    }
}

impl Connector for TcpConnector {
    type Stream = TcpConn;

    async fn connect(&self, endpoint: &Endpoint, timeout: Duration) -> io::Result<Self::Stream> {
        let addr = socket_addr(endpoint)?;
        let stream = tokio::time::timeout(timeout, tokio::net::TcpStream::connect(addr))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, format!("connect to {endpoint} timed out")))??;
        stream.set_nodelay(true)?;
        if let Some(idle) = self.keepalive {
            let keepalive = socket2::TcpKeepalive::new().with_time(idle);
            socket2::SockRef::from(&stream).set_tcp_keepalive(&keepalive)?;
        }
        Ok(TcpConn::new(stream))
    }

    /// Tokio keeps one read waker per socket for `poll_*` readers: this
    /// one replaces a borrower's, without reading.
    fn read_ready(&self, stream: &mut TcpConn, waker: &Waker) -> bool {
        if stream.off_reactor() {
            // Nothing to register with until its slot task puts it back.
            return false;
        }
        match stream.reattach() {
            Ok(stream) => stream.poll_read_ready(&mut Context::from_waker(waker)).is_ready(),
            Err(_) => true,
        }
    }

    /// The socket leaves its runtime's reactor and turns blocking, with
    /// read and write timeouts of one slice, so the reply wakes only the
    /// caller's thread; it stays off while loans follow one another
    /// ([`TcpConn`]).
    fn begin_thread_loan(&self, stream: &mut TcpConn) -> bool {
        stream.begin_thread_loan()
    }

    fn end_thread_loan(&self, stream: &mut TcpConn) {
        stream.end_thread_loan();
    }

    fn off_reactor(&self, stream: &TcpConn) -> bool {
        stream.off_reactor()
    }

    fn reattach(&self, stream: &mut TcpConn) -> io::Result<()> {
        stream.reattach().map(drop)
    }
}

/// turmoil's simulated TCP. Endpoints name turmoil hosts (`server:7709`).
#[cfg(feature = "turmoil")]
#[derive(Debug, Clone, Default)]
pub struct TurmoilConnector;

/// A simulated connection, with the reactor's part of [`TcpConn`] modelled:
/// off the reactor (after a thread loan) its bytes wake nobody until a task
/// puts it back, so the simulation checks that the slot task does.
#[cfg(feature = "turmoil")]
#[derive(Debug)]
pub struct SimConn {
    stream: turmoil::net::TcpStream,
    off: bool,
    thread_loan: bool,
}

#[cfg(feature = "turmoil")]
impl SimConn {
    /// Used as a task: back on the reactor first, as [`TcpConn`] is.
    fn as_task(&mut self) -> std::pin::Pin<&mut turmoil::net::TcpStream> {
        if !self.thread_loan {
            self.off = false;
        }
        std::pin::Pin::new(&mut self.stream)
    }
}

#[cfg(feature = "turmoil")]
impl AsyncRead for SimConn {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.get_mut().as_task().poll_read(cx, buf)
    }
}

#[cfg(feature = "turmoil")]
impl AsyncWrite for SimConn {
    fn poll_write(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.get_mut().as_task().poll_write(cx, buf)
    }

    fn poll_flush(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().as_task().poll_flush(cx)
    }

    fn poll_shutdown(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().as_task().poll_shutdown(cx)
    }
}

#[cfg(feature = "turmoil")]
impl Connector for TurmoilConnector {
    type Stream = SimConn;

    async fn connect(&self, endpoint: &Endpoint, timeout: Duration) -> io::Result<Self::Stream> {
        let target = (endpoint.host.clone(), endpoint.port);
        let stream = tokio::time::timeout(timeout, turmoil::net::TcpStream::connect(target))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, format!("connect to {endpoint} timed out")))??;
        Ok(SimConn { stream, off: false, thread_loan: false })
    }

    /// Off the reactor nothing can be registered (and nothing wakes).
    fn read_ready(&self, stream: &mut SimConn, _: &Waker) -> bool {
        !stream.off
    }

    /// Simulated sockets cannot block a thread: a thread borrower in a
    /// simulation reads as a task does (the default `read_slice`), so the
    /// thread loan's path (lending to a thread, its begin and end, the
    /// socket off its reactor between loans) runs under turmoil.
    fn begin_thread_loan(&self, stream: &mut SimConn) -> bool {
        stream.off = true;
        stream.thread_loan = true;
        true
    }

    fn end_thread_loan(&self, stream: &mut SimConn) {
        stream.thread_loan = false;
    }

    fn off_reactor(&self, stream: &SimConn) -> bool {
        stream.off
    }

    fn reattach(&self, stream: &mut SimConn) -> io::Result<()> {
        stream.off = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::is_loopback_host;

    #[test]
    fn loopback_hosts_are_this_machine_only() {
        for host in ["127.0.0.1", "127.8.9.10", "[::1]", "::1", "localhost", "LOCALHOST"] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in ["[::ffff:127.0.0.1]", "192.0.2.1", "localhost.example", "", "[::]", "example.com"] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }
}
