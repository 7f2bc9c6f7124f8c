//! Input sequences against the Supervisor, including nonsense (unknown
//! slots, future generations, repeated ids, time going backwards), read from
//! the input as a [`tdx_fuzz::SupervisorCase`]: a 12-byte configuration
//! header, then operations of an opcode byte and fixed fields ([`Op::read`]).
//! Invariants: no panic; `check_invariants` holds after every input; no
//! request completes twice; after close nothing is admitted.
#![no_main]

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use tdx_engine::proto::commands::SecurityCount;
use tdx_engine::proto::{Market, Reply, Request, ResponseHeader};
use tdx_engine::supervisor::testing::Drive;
use tdx_engine::supervisor::*;
use tdx_fuzz::{Op, SupervisorCase};

fn header(msg_id: u32, msg_type: u16) -> ResponseHeader {
    ResponseHeader { control: 0x0c, msg_id, reserved: 0, msg_type, zip_length: 0, length: 0 }
}

fuzz_target!(|data: &[u8]| {
    let input = SupervisorCase::read(data);
    let servers = 1 + usize::from(input.servers % 3);
    let config = SupervisorConfig {
        endpoints: (0..servers + 1).map(|i| Endpoint::new("fuzz", 7709 + i as u16)).collect(),
        server_count: servers,
        connections_per_server: 1 + usize::from(input.per_server % 3),
        max_pending_requests: usize::from(input.pending % 8),
        push_frames_max: 4,
        push_bytes_max: 256,
        rng_seed: input.seed,
        canary: input.establish & 1 != 0,
        connect_concurrency: Some(1 + usize::from(input.establish >> 1 & 3)),
        connects_per_host: 1 + usize::from(input.establish >> 3 & 1),
        start_probe: match input.establish >> 4 & 3 {
            0 => StartProbe::Off,
            1 => StartProbe::Wait,
            _ => StartProbe::Background,
        },
        ..Default::default()
    };
    let mut now = Instant::now();
    // The drive loop is the model harness's: it drains, checks that no
    // request completes twice and the invariants, and keeps the recent
    // connects and sends this target picks from.
    let mut drive = Drive::new(Supervisor::new(config, now).expect("valid config"));
    drive.drain();
    let mut next_id = 0u64;
    // Each connection's request written, as its slot task would report it
    // with the frames it reads next (`Op::SendCompleted` writes one).
    let mut written: std::collections::BTreeMap<(SlotId, Generation), Sent> = Default::default();
    let skewed = |g: Generation, skew: i8| Generation(g.0.saturating_add_signed(i64::from(skew % 3)));
    for op in input.ops.into_iter().take(512) {
        let event = match op {
            Op::Submit { repeat, retry_safe, timeout_ms, pin } => {
                // Fresh ids, or the last one again while it is still open (ignored as a repeat).
                if !(repeat && next_id > 0 && !drive.completed(RequestId(next_id))) {
                    next_id += 1;
                }
                let id = next_id;
                let request = Arc::new(Request::from(SecurityCount { market: Market::Sz, client_date: 0 }));
                let deadline = now + Duration::from_millis(u64::from(timeout_ms));
                let pin = pin.map(|p| PinId(u64::from(p % 4)));
                Input::Submit { id: RequestId(id), request, deadline, retry_safe, pin }
            }
            Op::Cancel { back } => Input::Cancel { id: RequestId(next_id.saturating_sub(u64::from(back % 8))) },
            Op::Pin { id, timeout_ms } => Input::Pin {
                id: PinId(u64::from(id % 4)),
                deadline: now + Duration::from_millis(u64::from(timeout_ms)),
            },
            Op::Release { id } => Input::Release { id: PinId(u64::from(id % 4)) },
            Op::Connected { pick, skew }
            | Op::Ready { pick, skew }
            | Op::Failed { pick, skew }
            | Op::Closed { pick, skew }
                if !drive.connects.is_empty() =>
            {
                let at = drive.connects[usize::from(pick) % drive.connects.len()];
                let at = SlotRef { generation: skewed(at.generation, skew), ..at };
                match op {
                    Op::Connected { .. } => Input::SlotConnected { at },
                    Op::Ready { .. } => Input::SlotReady { at },
                    Op::Failed { .. } => Input::SlotFailed { at, error: SlotError::PeerClosed },
                    _ => Input::SlotClosed { at },
                }
            }
            Op::SendCompleted { pick, skew } if !drive.sends.is_empty() => {
                let (at, msg_id, _) = drive.sends[usize::from(pick) % drive.sends.len()];
                written.insert((at.slot, skewed(at.generation, skew)), Sent { msg_id, at: now });
                continue;
            }
            Op::Reply { pick, skew, wrong_type, zero_id, invalid } if !drive.sends.is_empty() => {
                let (at, msg_id, msg_type) = drive.sends[usize::from(pick) % drive.sends.len()];
                let msg_type = if wrong_type { msg_type ^ 1 } else { msg_type };
                let msg_id = if zero_id { 0 } else { msg_id };
                let body = if invalid {
                    FrameBody::Invalid(tdx_engine::proto::ProtoError::VarintUnterminated)
                } else if msg_type == 0x0004 {
                    FrameBody::Reply(Box::new(Reply::Heartbeat(Default::default())))
                } else {
                    FrameBody::Reply(Box::new(Reply::SecurityCount(1)))
                };
                let at = SlotRef { generation: skewed(at.generation, skew), ..at };
                let sent = written.get(&(at.slot, at.generation)).copied();
                Input::Frame { at, header: header(msg_id, msg_type), body, sent }
            }
            Op::Push { slot, msg_id, len } => {
                let slot = SlotId(u32::from(slot % 8));
                let at = drive.connects.iter().rev().find(|c| c.slot == slot).copied();
                let at = at.unwrap_or(SlotRef { slot, epoch: Epoch(0), generation: Generation(0) });
                let body = FrameBody::Unparsed(Bytes::from(vec![0u8; usize::from(len)]));
                let sent = written.get(&(at.slot, at.generation)).copied();
                Input::Frame { at, header: header(msg_id, 0x0547), body, sent }
            }
            Op::ReadPushes { max } => {
                let max = usize::from(max % 8);
                assert!(drive.sup.read_pushes(max).frames.len() <= max);
                drive.drain();
                continue;
            }
            Op::ProbeDone { old_epoch, latencies } => Input::ProbeDone {
                epoch: if old_epoch { Epoch(0) } else { drive.sup.diagnostics().epoch },
                latencies: latencies.into_iter().map(|l| l.map(|ms| Duration::from_millis(u64::from(ms)))).collect(),
            },
            Op::Advance { ms } => {
                now += Duration::from_millis(u64::from(ms));
                Input::Tick
            }
            Op::Rewind { ms } => {
                let earlier = now.checked_sub(Duration::from_millis(u64::from(ms))).unwrap_or(now);
                drive.handle(earlier, Input::Tick);
                continue;
            }
            Op::Close => Input::Close,
            Op::NewEpoch { endpoints } => Input::NewEpoch {
                endpoints: (0..usize::from(endpoints % 5)).map(|i| Endpoint::new("fuzz2", 8000 + i as u16)).collect(),
            },
            _ => Input::Tick,
        };
        let closing = drive.sup.close_state().is_closing();
        let submitted = match &event {
            Input::Submit { id, .. } => Some(*id),
            _ => None,
        };
        drive.handle(now, event);
        if let (true, Some(id)) = (closing, submitted) {
            // After close nothing is admitted: a new id is refused at once.
            assert!(drive.completed(id), "request {} admitted after close", id.0);
        }
    }
});
