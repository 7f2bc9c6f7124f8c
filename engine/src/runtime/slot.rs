//! Slot tasks: one per TCP connection, on a worker runtime.
//!
//! A slot task connects, sends its setup (the 0x000d handshake), then serves the
//! engine: it writes the requests it is given, reads and decodes frames
//! (zlib included), parses the frame that answers its request in flight,
//! and applies everything to the core ([`super::core`]) as
//! Supervisor inputs, outside the lock for all the decoding (the exchange
//! itself is [`super::session`]'s, shared with borrowers). When its own
//! input makes the Supervisor send on this connection (the next queued
//! request after a reply), the task writes it at once; sends caused by
//! others' inputs arrive on its command channel. It never decides
//! anything: matching, retries and deadlines are the Supervisor's.
//!
//! Whenever it has nothing in hand, the task parks its connection with its
//! [`Lender`], where a caller on the same runtime may borrow it for its own
//! request ([`super::loan`]); the task then waits for the connection's
//! next bytes or its next command. A panic inside the task is caught and
//! reported as a failure of that slot only.

use std::future::{poll_fn, Future};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use tokio::sync::mpsc;
use tracing::Instrument;

use super::catch_panic::CatchPanic;
use super::connector::Connector;
use super::loan::{ConnectorOps, Lender};
use super::messages::{Applied, End, Holder, Outgoing, Reports, SlotCommand};
use super::session::{Conn, Ctx, EngineShared, SentAt, Session};
use crate::proto::Request;
use crate::supervisor::{Endpoint, Input, SlotError, SlotRef};
use crate::sync::Closed;

/// The core as a slot task reaches it: its connection's inputs, and the
/// offer of its ready connection for loans.
pub(crate) trait SlotCore: Reports {
    /// Offers the ready connection at `at` to callers on the current
    /// runtime, through `lender`.
    fn offer(&self, at: SlotRef, lender: Arc<Lender>);
}

/// Everything a slot task needs for one generation.
pub(crate) struct SlotTask<C: Connector> {
    /// The slot, epoch and generation this task serves.
    pub(crate) at: SlotRef,
    pub(crate) endpoint: Endpoint,
    pub(crate) connect_timeout: Duration,
    pub(crate) connector: Arc<C>,
    /// Where its inputs go.
    pub(crate) core: Arc<dyn SlotCore>,
    pub(crate) budgets: EngineShared,
    /// What the connection sends before it is ready.
    pub(crate) setup: Arc<[Request]>,
}

impl<C: Connector> SlotTask<C> {
    /// Runs the task to its end; panics inside are caught and reported.
    pub(crate) async fn run(self, commands: mpsc::Receiver<SlotCommand>) {
        let span = self.span();
        let (at, core, budgets) = (self.at, self.core.clone(), self.budgets.clone());
        let outcome = CatchPanic(Box::pin(self.serve(commands).instrument(span))).await;
        report_end(at, &*core, &budgets, outcome);
    }

    fn span(&self) -> tracing::Span {
        let SlotRef { slot, generation, .. } = self.at;
        tracing::debug_span!("slot", slot = slot.0, generation = generation.0, endpoint = %self.endpoint)
    }

    /// Applies `input` to the core; returns the request it made this
    /// connection send, if any.
    fn report(&self, input: Input) -> Result<Option<Outgoing>, End> {
        match self.core.slot_input(self.at, input, Holder::Task) {
            Ok(Applied { outgoing, .. }) => Ok(outgoing),
            Err(_) => Err(End::EngineGone),
        }
    }

    async fn serve(self, mut commands: mpsc::Receiver<SlotCommand>) -> End {
        let connect = self.connector.connect(&self.endpoint, self.connect_timeout);
        let stream = match before_ready(&mut commands, connect).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => return End::Failed(SlotError::Connect(e.to_string())),
            Err(end) => return end,
        };
        if let Err(end) = self.report(Input::SlotConnected { at: self.at }) {
            return end;
        }
        let mut conn = Conn::new(Box::new(stream), self.budgets.clone());
        match before_ready(&mut commands, conn.handshake(&self.setup)).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => return End::Failed(error),
            Err(end) => return end,
        }
        self.exchange_phase(Box::new(Session::new(conn)), commands).await
    }

    /// Serves a ready connection until it ends. The connection is offered
    /// for lending (on the runtime it is registered with) before
    /// `SlotReady` is applied, so the first request the Supervisor sends on
    /// it may already be a caller's own exchange.
    async fn exchange_phase(self, session: Box<Session>, mut commands: mpsc::Receiver<SlotCommand>) -> End {
        let ops = Arc::new(ConnectorOps(self.connector.clone()));
        let lender = Arc::new(Lender::new(self.at, self.budgets.clone(), ops));
        // However the task ends (a panic unwinding included), nothing is
        // lent afterwards and a parked connection is closed.
        let _closed = CloseOnDrop(&lender);
        self.core.offer(self.at, lender.clone());
        let first = match self.report(Input::SlotReady { at: self.at }) {
            Ok(outgoing) => outgoing,
            Err(end) => return self.end(&lender, end),
        };
        let end = self.drive(&lender, session, &mut commands, first).await;
        self.end(&lender, end)
    }

    /// Closes the loan cell as the generation ends; the end is reported
    /// only if nobody (a failed borrower) reported it first.
    fn end(&self, lender: &Lender, end: End) -> End {
        match (lender.cell.close(), end) {
            (Closed::Already, End::Failed(_) | End::Retired) => End::ReportedElsewhere,
            (_, end) => end,
        }
    }

    /// A ready connection's work, in the order it is done each time its
    /// task wakes (quinn's `ConnectionDriver::poll` has this shape):
    ///
    /// 1. the core's commands: write a request others' inputs caused, or
    ///    retire;
    /// 2. the socket's bytes: decode a round, apply each frame to the core
    ///    (the reply parsed outside the lock), and write at once the request
    ///    an applied frame made this connection send;
    /// 3. after a full round, yield to the worker's other connections.
    ///
    /// Between the steps the connection is parked with its lender, so a
    /// caller on this runtime may borrow it for its own request
    /// ([`super::loan`]).
    async fn drive(
        &self,
        lender: &Lender,
        session: Box<Session>,
        commands: &mut mpsc::Receiver<SlotCommand>,
        first: Option<Outgoing>,
    ) -> End {
        let ctx = Ctx { at: self.at, core: &*self.core, budgets: &self.budgets, own: None };
        let mut session = session;
        if let Some(outgoing) = first {
            if let Err(end) = session.write(outgoing, SentAt::Now(ctx.core)).await {
                return end;
            }
        }
        lender.cell.park(session);
        // Set while thread loans keep the connection off its reactor.
        let mut watch: Option<Watch> = None;
        let watch_ends = tokio::time::sleep(OFF_REACTOR_WATCH);
        tokio::pin!(watch_ends);
        loop {
            let watching = watch.is_some();
            tokio::select! {
                biased;
                command = commands.recv() => match command {
                    Some(SlotCommand::Send(outgoing)) => {
                        // Parked, or back from a borrower soon (it gives it back when its reply is in).
                        let Some(mut session) = poll_fn(|cx| lender.cell.poll_take(cx)).await else {
                            return End::ReportedElsewhere;
                        };
                        // Written as a task: the stream goes back on its reactor first.
                        if let Err(end) = session.write(outgoing, SentAt::Now(ctx.core)).await {
                            return end;
                        }
                        lender.cell.park(session);
                    }
                    other => return retired_or_gone(other),
                },
                () = &mut watch_ends, if watching => {
                    let borrows = lender.cell.borrows();
                    let Some(w) = watch.as_mut() else { continue };
                    let quiet = borrows == w.borrows;
                    let taken = if quiet { lender.cell.try_take() } else { None };
                    let Some(mut session) = taken else {
                        // Borrowed meanwhile, or lent now: watch another interval.
                        w.borrows = borrows;
                        watch_ends.as_mut().reset(tokio::time::Instant::now() + OFF_REACTOR_WATCH);
                        continue;
                    };
                    if crate::mutants::on(crate::mutants::Mutant::OffReactorNeverReattached) {
                        watch_ends.as_mut().reset(tokio::time::Instant::now() + OFF_REACTOR_WATCH);
                        lender.cell.park(session);
                        continue;
                    }
                    if let Err(e) = lender.ops.reattach(&mut *session.conn.stream) {
                        return End::Failed(SlotError::Io(e.to_string()));
                    }
                    // Held here, so no borrower sees the flags change under it.
                    lender.off_reactor.store(false, Ordering::SeqCst);
                    lender.watched.store(false, Ordering::SeqCst);
                    watch = None;
                    lender.cell.park(session);
                }
                work = poll_fn(|cx| {
                    if !watching && lender.off_reactor.load(Ordering::SeqCst) {
                        return Poll::Ready(Some(None));
                    }
                    lender.cell.poll_work(cx, |session, cx| {
                        if !session.has_staged_frames() && lender.ops.off_reactor(&*session.conn.stream) {
                            // Its bytes wake nobody: the watch puts it back once the loans pause.
                            return Poll::Pending;
                        }
                        session.poll_fill(cx)
                    }).map(|work| work.map(Some))
                }) => {
                    let Some(work) = work else {
                        // Closed by a borrower whose exchange failed (it reported that).
                        return End::ReportedElsewhere;
                    };
                    let Some((mut session, read)) = work else {
                        // A thread loan left the connection off its reactor: watch it.
                        lender.watched.store(true, Ordering::SeqCst);
                        watch = Some(Watch { borrows: lender.cell.borrows() });
                        watch_ends.as_mut().reset(tokio::time::Instant::now() + OFF_REACTOR_WATCH);
                        continue;
                    };
                    if let Err(end) = session.serve(read, &ctx).await {
                        return end;
                    }
                    let yield_now = session.round_full();
                    lender.cell.park(session);
                    if yield_now {
                        tokio::task::yield_now().await;
                    }
                }
            }
        }
    }
}

/// How long thread loans must pause before a slot task puts its connection
/// back on its reactor: pushes and a server's close on a connection idle
/// after thread loans are seen within two of these.
pub const OFF_REACTOR_WATCH: Duration = Duration::from_millis(25);

/// The watch over a connection off its reactor: the borrows counted when
/// its interval began.
struct Watch {
    borrows: u64,
}

/// Closes a loan cell when dropped (the normal ends close it first, to
/// learn whether they report).
struct CloseOnDrop<'a>(&'a Lender);

impl Drop for CloseOnDrop<'_> {
    fn drop(&mut self) {
        let _ = self.0.cell.close();
    }
}

/// Applies a finished task's last input: `SlotClosed` after a retire,
/// `SlotFailed` otherwise (a panic included, counted apart).
fn report_end(at: SlotRef, core: &dyn Reports, budgets: &EngineShared, outcome: Result<End, String>) {
    let input = match outcome {
        Ok(End::EngineGone | End::ReportedElsewhere) => return,
        Ok(End::Retired) => Input::SlotClosed { at },
        Ok(End::Failed(error)) => Input::SlotFailed { at, error },
        Err(panic) => {
            budgets.slot_panics.fetch_add(1, Ordering::Relaxed);
            let error = SlotError::Io(format!("slot task panicked: {panic}"));
            tracing::error!(slot = at.slot.0, %error, "slot task panicked; retiring the slot");
            Input::SlotFailed { at, error }
        }
    };
    // A finished engine has nobody to tell.
    let _ = core.slot_input(at, input, Holder::Task);
}

/// Runs `work` (connect or handshake) to its end unless the engine retires
/// the slot first. `work` is polled from one pinned future, so it is never
/// restarted (a restarted handshake would be sent twice).
async fn before_ready<T>(commands: &mut mpsc::Receiver<SlotCommand>, work: impl Future<Output = T>) -> Result<T, End> {
    tokio::pin!(work);
    tokio::select! {
        biased;
        command = commands.recv() => Err(retired_or_gone(command)),
        done = &mut work => Ok(done),
    }
}

fn retired_or_gone(command: Option<SlotCommand>) -> End {
    match command {
        Some(SlotCommand::Retire) => End::Retired,
        // A Send before the slot is ready cannot happen; treat it as retire.
        Some(SlotCommand::Send { .. }) => End::Retired,
        None => End::EngineGone,
    }
}

#[cfg(test)]
mod tests {
    //! The slot task against a minimal 7709 responder built from the codec.
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;
    use crate::proto::commands::{HandshakeReply, SecurityCount};
    use crate::proto::frame::encode_response;
    use crate::proto::{Compression, Market, Reply, Request, RequestDecoder};
    use crate::runtime::connector::TcpConnector;
    use crate::runtime::messages::{Finished, SLOT_COMMANDS_MAX};
    use crate::supervisor::{Epoch, FrameBody, Generation, SlotId};

    /// Answers handshakes and count requests (with 42) on every connection.
    async fn responder(listener: tokio::net::TcpListener) {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else { return };
            tokio::spawn(async move {
                let mut decoder = RequestDecoder::new();
                let mut buf = vec![0u8; 4096];
                loop {
                    let Ok(n) = stream.read(&mut buf).await else { return };
                    if n == 0 || decoder.feed(&buf[..n]).is_err() {
                        return;
                    }
                    while let Ok(Some(frame)) = decoder.next_frame() {
                        let request = Request::decode(frame.header.msg_type, &frame.body).unwrap();
                        let reply = match &request {
                            Request::Handshake(_) => Reply::Handshake(HandshakeReply::default()),
                            _ => Reply::SecurityCount(42),
                        };
                        let mut payload = Vec::new();
                        request.encode_reply(&reply, &mut payload).unwrap();
                        let mut out = Vec::new();
                        encode_response(
                            &mut out,
                            frame.header.msg_id,
                            frame.header.msg_type,
                            &payload,
                            Compression::Never,
                        )
                        .unwrap();
                        if stream.write_all(&out).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    }

    async fn next(events: &mut mpsc::UnboundedReceiver<Input>) -> Input {
        events.recv().await.expect("the slot reports")
    }

    /// Stands in for the core: passes every input on, never asks for a
    /// send, lends nothing.
    struct Inputs(mpsc::UnboundedSender<Input>);

    impl Reports for Inputs {
        fn slot_input(&self, _: SlotRef, input: Input, _: Holder) -> Result<Applied, Finished> {
            self.0.send(input).map(|()| Applied::default()).map_err(|_| Finished)
        }

        fn now(&self) -> std::time::Instant {
            std::time::Instant::now()
        }
    }

    impl SlotCore for Inputs {
        fn offer(&self, _: SlotRef, _: Arc<Lender>) {}
    }

    /// Why: a slot task is the only writer of its connection's requests
    /// that others' inputs cause; each reply must come back as one `Frame`
    /// input carrying its request's send, whether the client encoded the
    /// frame or the task did, and a retire must end it with `SlotClosed`.
    #[tokio::test]
    async fn a_ready_slot_serves_its_commands_and_retires() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(responder(listener));
        let (events_tx, mut events) = mpsc::unbounded_channel();
        let (commands, rx) = mpsc::channel(SLOT_COMMANDS_MAX);
        let task = SlotTask {
            at: SlotRef { slot: SlotId(0), epoch: Epoch(0), generation: Generation(0) },
            endpoint: Endpoint::new("127.0.0.1", addr.port()),
            connect_timeout: Duration::from_secs(5),
            connector: Arc::new(TcpConnector::default()),
            core: Arc::new(Inputs(events_tx)),
            budgets: EngineShared::new(1 << 20, 1 << 20),
            setup: Arc::new([Request::from(crate::proto::commands::Handshake::default())]),
        };
        let running = tokio::spawn(task.run(rx));
        assert!(matches!(next(&mut events).await, Input::SlotConnected { .. }));
        assert!(matches!(next(&mut events).await, Input::SlotReady { .. }));
        let request = Arc::new(Request::from(SecurityCount { market: Market::Sz, client_date: 0 }));
        for (round, msg_id) in [(0, 7u32), (1, 8)] {
            // The first round sends the client's encoding, the second encodes here.
            let mut frame = Vec::new();
            request.encode_frame(0, &mut frame).unwrap();
            let frame = (round == 0).then_some(frame);
            commands.send(SlotCommand::Send(Outgoing { msg_id, request: request.clone(), frame })).await.unwrap();
            match next(&mut events).await {
                Input::Frame { header, body: FrameBody::Reply(reply), sent: Some(sent), .. } => {
                    assert_eq!(header.msg_id, msg_id);
                    assert_eq!(sent.msg_id, msg_id, "the reply carries its request's send");
                    assert_eq!(*reply, Reply::SecurityCount(42));
                }
                other => panic!("expected the reply, got {other:?}"),
            }
        }
        commands.send(SlotCommand::Retire).await.unwrap();
        assert!(matches!(next(&mut events).await, Input::SlotClosed { .. }));
        running.await.unwrap();
    }
}
