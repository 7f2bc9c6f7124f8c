//! Full request cycles through the Supervisor alone (submit, send, send
//! completed, reply, complete), with 8 and 160 slots kept busy. This is the
//! Supervisor's share of a request's cost; the bar is 1,000,000 cycles/s on
//! one core.
//!
//! Run: `cargo bench -p tdx-engine --bench supervisor`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tdx_engine::proto::commands::SecurityCount;
use tdx_engine::proto::{Market, Reply, Request, ResponseHeader};
use tdx_engine::supervisor::*;

struct Bench {
    sup: Supervisor,
    now: Instant,
    next_id: u64,
    request: Arc<Request>,
    /// Sends waiting for their reply, in order.
    in_flight: std::collections::VecDeque<(SlotId, Generation, u32)>,
    /// The reply box handed back by the last completion, reused for the next reply.
    spare: Option<Box<Reply>>,
}

impl Bench {
    fn new(servers: usize, per_server: usize) -> Self {
        let now = Instant::now();
        let config = SupervisorConfig {
            endpoints: (0..servers).map(|i| Endpoint::new("bench", 7709 + i as u16)).collect(),
            server_count: servers,
            connections_per_server: per_server,
            heartbeat_interval: None,
            ..Default::default()
        };
        let mut sup = Supervisor::new(config, now).unwrap();
        let mut connects = Vec::new();
        while let Some(action) = sup.poll_action() {
            if let Action::OpenSlot { at: SlotRef { slot, epoch, generation }, .. } = action {
                connects.push(Input::SlotReady { at: SlotRef { slot, epoch, generation } });
            }
        }
        for ready in connects {
            sup.handle(now, ready);
        }
        let request = Arc::new(Request::from(SecurityCount { market: Market::Sz, client_date: 0 }));
        let mut bench = Self { sup, now, next_id: 0, request, in_flight: Default::default(), spare: None };
        // Fill every slot.
        for _ in 0..servers * per_server {
            bench.submit();
        }
        bench
    }

    fn submit(&mut self) {
        self.next_id += 1;
        let deadline = self.now + Duration::from_secs(8);
        let input = Input::Submit {
            id: RequestId(self.next_id),
            request: self.request.clone(),
            deadline,
            retry_safe: true,
            pin: None,
        };
        self.sup.handle(self.now, input);
        self.drain();
    }

    fn drain(&mut self) {
        while let Some(action) = self.sup.poll_action() {
            match action {
                Action::Send { at: SlotRef { slot, generation, .. }, msg_id, .. } => {
                    self.in_flight.push_back((slot, generation, msg_id));
                }
                Action::Complete { outcome: Ok(reply), .. } => self.spare = Some(reply),
                other => panic!("unexpected {other:?}"),
            }
        }
    }

    /// Completes the oldest exchange and submits a new request: one cycle.
    fn cycle(&mut self) {
        let (slot, generation, msg_id) = self.in_flight.pop_front().expect("slots are busy");
        let header = ResponseHeader { control: 0x0c, msg_id, reserved: 0, msg_type: 0x044e, zip_length: 2, length: 2 };
        let reply = self.spare.take().unwrap_or_else(|| Box::new(Reply::SecurityCount(1)));
        let body = FrameBody::Reply(reply);
        let sent = Some(Sent { msg_id, at: self.now });
        let input = Input::Frame { at: SlotRef { slot, epoch: Epoch(0), generation }, header, body, sent };
        self.sup.handle(self.now, input);
        self.drain();
        self.submit();
    }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("supervisor_cycle");
    for (servers, per_server) in [(2, 4), (20, 8)] {
        let slots = servers * per_server;
        group.throughput(Throughput::Elements(1));
        group.bench_function(format!("{slots}_slots"), |b| {
            let mut bench = Bench::new(servers, per_server);
            b.iter(|| bench.cycle());
            assert_eq!(bench.sup.counters().errors, 0);
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
