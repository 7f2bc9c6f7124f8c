//! [`TcpConn`], the stream of [`super::connector::TcpConnector`]: a TCP
//! connection that leaves its runtime's reactor for thread borrowers and
//! stays off it while their loans follow one another.
//!
//! Registered, every reply would also wake the reactor's thread (for
//! nobody: the borrower's blocking read takes the bytes), a context switch
//! a request on the cores the server and the callers share. Off, a loan
//! costs no system call beyond its write and reads; going off and back on
//! costs four (`epoll_ctl` both ways, blocking mode both ways), paid once
//! per run of loans: the slot task puts the connection back once a whole
//! watch interval passes with no loan (docs/decisions/0018).
//!
//! Whoever uses it as a task (its slot task, a borrower on the runtime)
//! puts it back first, so no task ever waits in a blocking socket.

use std::io::{self, Read, Write};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The longest a thread borrower waits in one read: between slices it
/// looks whether its request ended elsewhere and its caller whether it was
/// cancelled (Ctrl+C in Python), so both are noticed within this.
pub const THREAD_READ_SLICE: Duration = Duration::from_millis(25);

/// A TCP connection of the engine's, on or off its runtime's reactor.
#[derive(Debug)]
pub struct TcpConn {
    socket: Socket,
    /// The runtime it registers with: its slot task's.
    runtime: tokio::runtime::Handle,
    /// A caller's thread has it now: reads and writes block (a slice at most).
    thread_loan: bool,
    /// Its read and write timeouts are set (on its first time off).
    timeouts_set: bool,
}

#[derive(Debug)]
enum Socket {
    /// Registered with the reactor, non-blocking: how tasks use it.
    On(tokio::net::TcpStream),
    /// Off the reactor, blocking with timeouts of one slice: how threads use it.
    Off(std::net::TcpStream),
    /// A move between the two failed; it is closed.
    Closed,
}

fn closed() -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, "the connection failed to move on or off its reactor")
}

impl TcpConn {
    /// `stream`, registered with the current runtime.
    pub(crate) fn new(stream: tokio::net::TcpStream) -> Self {
        let runtime = tokio::runtime::Handle::current();
        Self { socket: Socket::On(stream), runtime, thread_loan: false, timeouts_set: false }
    }

    /// Whether it is off its runtime's reactor: nothing wakes its slot task
    /// for its bytes until it is put back.
    pub fn off_reactor(&self) -> bool {
        matches!(self.socket, Socket::Off(_))
    }

    /// Puts it back on its runtime's reactor, non-blocking.
    pub fn reattach(&mut self) -> io::Result<&mut tokio::net::TcpStream> {
        if let Socket::Off(_) = self.socket {
            let Socket::Off(std) = std::mem::replace(&mut self.socket, Socket::Closed) else { unreachable!() };
            std.set_nonblocking(true)?;
            // Tokio registers with the runtime it is entered in.
            let _entered = self.runtime.enter();
            self.socket = Socket::On(tokio::net::TcpStream::from_std(std)?);
        }
        match &mut self.socket {
            Socket::On(stream) => Ok(stream),
            _ => Err(closed()),
        }
    }

    /// Readies it for a caller's thread: off the reactor (unless already),
    /// blocking. False: it cannot, and stays as it was or closed.
    pub(crate) fn begin_thread_loan(&mut self) -> bool {
        if let Socket::On(_) = self.socket {
            let Socket::On(stream) = std::mem::replace(&mut self.socket, Socket::Closed) else { unreachable!() };
            let Ok(std) = stream.into_std() else { return false };
            let timeouts = |s: &std::net::TcpStream| {
                s.set_read_timeout(Some(THREAD_READ_SLICE))?;
                s.set_write_timeout(Some(THREAD_READ_SLICE))
            };
            if (!self.timeouts_set && timeouts(&std).is_err()) || std.set_nonblocking(false).is_err() {
                self.socket = Socket::Off(std);
                // Back as a task needs it, if it can.
                return self.reattach().map(|_| false).unwrap_or(false);
            }
            self.timeouts_set = true;
            self.socket = Socket::Off(std);
        }
        self.thread_loan = true;
        true
    }

    /// The thread loan ended; the socket stays off the reactor.
    pub(crate) fn end_thread_loan(&mut self) {
        self.thread_loan = false;
    }

    /// The blocking socket while a thread has it.
    fn thread_socket(&mut self) -> Option<&mut std::net::TcpStream> {
        match &mut self.socket {
            Socket::Off(std) if self.thread_loan => Some(std),
            _ => None,
        }
    }
}

/// A blocking call's outcome as a poll: a timed-out slice is `Pending`,
/// the waker woken at once, so the thread polls again after looking at
/// its cancel flag.
fn sliced<T>(result: io::Result<T>, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
    match result {
        // A timeout is EAGAIN on Linux, a timeout elsewhere.
        Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
            cx.waker().wake_by_ref();
            Poll::Pending
        }
        other => Poll::Ready(other),
    }
}

impl AsyncRead for TcpConn {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Some(std) = this.thread_socket() {
            return sliced(std.read(buf.initialize_unfilled()), cx).map_ok(|n| buf.advance(n));
        }
        match this.reattach() {
            Ok(stream) => Pin::new(stream).poll_read(cx, buf),
            Err(e) => Poll::Ready(Err(e)),
        }
    }
}

impl AsyncWrite for TcpConn {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if let Some(std) = this.thread_socket() {
            return sliced(std.write(buf), cx);
        }
        match this.reattach() {
            Ok(stream) => Pin::new(stream).poll_write(cx, buf),
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        // TCP writes are not buffered here.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut().reattach() {
            Ok(stream) => Pin::new(stream).poll_shutdown(cx),
            Err(e) => Poll::Ready(Err(e)),
        }
    }
}
