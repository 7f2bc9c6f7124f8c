//! Exchanges: one request (or heartbeat, or canary query) in flight per
//! connection; matching a frame to it (else stale, late, or a push); the
//! reply and its second opinion; idle heartbeats; the push buffer's reads.

use std::sync::Arc;
use std::time::Instant;

use super::push::{PushBatch, PushFrame};
use super::slot::{Exchange, Owner, SlotState};
use super::timer::Timer;
use super::{Action, FrameBody, Generation, RequestError, RequestId, Sent, SlotError, SlotId, SlotRef, Supervisor};
use crate::mutants::{on as mutant, Mutant};
use crate::proto::{Reply, Request, ResponseHeader};

impl Supervisor {
    pub(super) fn start_exchange(&mut self, slot: SlotId, owner: Owner, request: Arc<Request>) {
        let msg_id = self.take_msg_id();
        let s = &mut self.slots[slot.index()];
        assert!(matches!(s.state, SlotState::Ready), "one exchange per socket: slot {} is {}", slot.0, s.state.name());
        s.state = SlotState::Busy(Exchange {
            owner,
            msg_id,
            reply_id: request.wire_msg_id(msg_id),
            msg_type: request.msg_type(),
        });
        let generation = s.generation;
        let id = match owner {
            Owner::Request(id) => Some(id),
            Owner::Heartbeat | Owner::Canary(_) => None,
        };
        let at = SlotRef { slot, epoch: self.epoch, generation };
        self.actions.push_back(Action::Send { at, msg_id, request, id });
    }

    pub(super) fn take_msg_id(&mut self) -> u32 {
        let id = self.next_msg_id;
        self.next_msg_id = self.next_msg_id.wrapping_add(1).max(1);
        debug_assert_ne!(id, 0, "msg_id 0 is never sent");
        id
    }

    pub(super) fn frame(&mut self, at: SlotRef, header: ResponseHeader, body: FrameBody, sent: Option<Sent>) {
        let SlotRef { slot, epoch, generation } = at;
        let generation = match self.slots.get(slot.index()) {
            Some(s) if mutant(Mutant::GenerationCheckSkipped) => s.generation,
            _ => generation,
        };
        let known = self.slots.get(slot.index()).is_some_and(|s| epoch <= self.epoch && generation <= s.generation);
        if known && !(epoch == self.epoch && generation == self.slots[slot.index()].generation) {
            self.counters.stale_frames += 1;
            return;
        }
        // With the mutant on, `generation` may differ from `at`'s.
        if !self.live(SlotRef { slot, epoch, generation }) {
            return;
        }
        let s = &mut self.slots[slot.index()];
        s.frames += 1;
        // The exchange's request written before this frame was read.
        let written = match (s.state, sent) {
            (SlotState::Busy(ex), Some(sent)) if sent.msg_id == ex.msg_id => Some((ex, sent.at)),
            _ => None,
        };
        if let Some((ex, sent_at)) = written {
            let mac = ex.reply_id == 0;
            let reply_id = if mac && mutant(Mutant::MacReplyMatchedByEngineId) { ex.msg_id } else { ex.reply_id };
            let id_matches = reply_id == header.msg_id || mutant(Mutant::StaleFrameAccepted);
            if id_matches && ex.msg_type == header.msg_type {
                return self.reply(slot, ex, sent_at, body);
            }
        }
        if header.msg_id == 0 {
            tracing::debug!(slot = slot.0, "frame with msg_id 0; retiring the connection");
            return self.retire(slot, Some(RequestError::ConnectionLost(SlotError::Protocol("msg_id 0".into()))));
        }
        if s.last_msg_id == Some(header.msg_id) {
            self.counters.late_frames += 1;
            return;
        }
        match body {
            FrameBody::Unparsed(payload) => {
                s.bytes += payload.len() as u64;
                self.counters.pushes += 1;
                self.pushes.push(PushFrame { slot, header, payload });
            }
            // The slot task parsed it, so it believed it was the reply; the
            // Supervisor's stricter match says no: treat it as stale.
            FrameBody::Reply(_) | FrameBody::Invalid(_) | FrameBody::ServerMessage(_) => {
                self.counters.stale_frames += 1
            }
        }
    }

    pub(super) fn reply(&mut self, slot: SlotId, ex: Exchange, sent_at: Instant, body: FrameBody) {
        if let Owner::Canary(step) = ex.owner {
            return self.canary_reply(slot, step, body);
        }
        let latency_us = self.now.saturating_duration_since(sent_at).as_secs_f64() * 1e6;
        let reply = match body {
            FrameBody::Reply(reply) => reply,
            FrameBody::Invalid(error) => {
                self.counters.bad_replies += 1;
                if mutant(Mutant::RetryOnSameConnection) && self.resend_on_same_slot(slot, ex) {
                    return;
                }
                return self.retire(slot, Some(RequestError::BadReply(error.to_string())));
            }
            FrameBody::Unparsed(_) => {
                self.counters.bad_replies += 1;
                return self.retire(slot, Some(RequestError::BadReply("reply was not parsed".into())));
            }
            FrameBody::ServerMessage(text) => {
                self.counters.bad_replies += 1;
                return self.retire(slot, Some(RequestError::BadReply(format!("the server said: {text}"))));
            }
        };
        let s = &mut self.slots[slot.index()];
        s.record_latency(latency_us);
        s.exchanges += 1;
        s.last_msg_id = Some(ex.msg_id);
        let endpoint = s.endpoint;
        let mut contradicted = None;
        if let Owner::Request(id) = ex.owner {
            if self.ask_again(id, endpoint, &reply) {
                return self.release(slot);
            }
            if let Some(req) = self.requests.get(id) {
                let doubtful = self.known_ends.doubtful(&req.request, &reply);
                if let (Some(first), false) = (req.avoid(), doubtful) {
                    contradicted = Some(first);
                }
                self.known_ends.learn(&req.request, &reply);
            }
            let reply = if contradicted.is_some() && mutant(Mutant::SecondOpinionReturnsFirst) {
                super::second_opinion::emptied(reply)
            } else {
                reply
            };
            if mutant(Mutant::ReplyCompletedTwice) {
                self.actions.push_back(Action::Complete { id, outcome: Ok(reply.clone()) });
            }
            self.finish(id, Ok(reply));
        }
        self.release(slot);
        if let Some(first) = contradicted {
            self.counters.contradictions += 1;
            if !mutant(Mutant::ContradictedNotDemoted) {
                self.demote(first);
            }
        }
    }

    /// A reply empty where data is expected (see [`second_opinion`]) goes
    /// back for a second opinion from another server, once, within the
    /// request's deadline. True when it did.
    pub(super) fn ask_again(&mut self, id: RequestId, endpoint: usize, reply: &Reply) -> bool {
        if !self.config.second_opinion || self.config.server_count < 2 || self.close.is_closing() {
            return false;
        }
        let Some(req) = self.requests.get(id) else { return false };
        // A pinned request too: data commands carry no session state, so
        // its second opinion may run off its pin's connection.
        if req.avoid().is_some() || self.now >= req.deadline {
            return false;
        }
        if !self.known_ends.doubtful(&req.request, reply) {
            return false;
        }
        tracing::debug!(request = id.0, endpoint = %self.config.endpoints[endpoint], "empty reply: asking another server");
        self.requests.ask_second(id, endpoint);
        self.counters.second_opinions += 1;
        true
    }

    /// The [`Mutant::RetryOnSameConnection`] bug: resends a retry-safe
    /// request on the connection that just failed it.
    pub(super) fn resend_on_same_slot(&mut self, slot: SlotId, ex: Exchange) -> bool {
        let Owner::Request(id) = ex.owner else { return false };
        let Some(req) = self.requests.get_mut(id) else { return false };
        if !req.retry_safe || req.retried || req.pin.is_some() {
            return false;
        }
        req.retried = true;
        let request = req.request.clone();
        self.counters.retries += 1;
        self.slots[slot.index()].state = SlotState::Ready;
        self.start_exchange(slot, ex.owner, request);
        true
    }

    /// Takes up to `max` buffered pushes, oldest first, with the overflow
    /// report if pushes were dropped since the last read. A query: it
    /// changes only the push buffer, so it is not an [`Input`](super::Input)
    /// and leaves no action.
    pub fn read_pushes(&mut self, max: usize) -> PushBatch {
        let overflow_total = self.pushes.take_overflow().filter(|_| !mutant(Mutant::PushOverflowUnreported));
        let frames = std::iter::from_fn(|| self.pushes.pop()).take(max).collect();
        PushBatch { overflow_total, frames }
    }

    pub(super) fn arm_heartbeat(&mut self, slot: SlotId) {
        let Some(interval) = self.config.heartbeat_interval else {
            return;
        };
        let s = &mut self.slots[slot.index()];
        if !s.heartbeat_armed {
            s.heartbeat_armed = true;
            let when = s.idle_since + interval;
            self.timers.set(when, Timer::Heartbeat(slot, s.generation));
        }
    }

    pub(super) fn heartbeat_due(&mut self, slot: SlotId, generation: Generation) {
        let Some(interval) = self.config.heartbeat_interval else {
            return;
        };
        let s = &mut self.slots[slot.index()];
        if s.generation != generation {
            return;
        }
        s.heartbeat_armed = false;
        if !self.idle.contains(slot) || self.close.is_closing() {
            return;
        }
        if self.now < s.idle_since + interval {
            // Used since it was armed: wait for a full idle interval again.
            return self.arm_heartbeat(slot);
        }
        self.idle.remove(slot);
        let heartbeat = self.heartbeat.clone();
        self.start_exchange(slot, Owner::Heartbeat, heartbeat);
        let SlotState::Busy(ex) = self.slots[slot.index()].state else { unreachable!("exchange just started") };
        self.counters.heartbeats += 1;
        self.timers.set(self.now + self.config.heartbeat_timeout, Timer::HeartbeatReply(slot, generation, ex.msg_id));
    }

    pub(super) fn heartbeat_expired(&mut self, slot: SlotId, generation: Generation, msg_id: u32) {
        let s = &self.slots[slot.index()];
        if s.generation != generation {
            return;
        }
        if let SlotState::Busy(ex) = s.state {
            if ex.owner == Owner::Heartbeat && ex.msg_id == msg_id {
                self.retire(slot, Some(RequestError::TimedOut));
            }
        }
    }
}
