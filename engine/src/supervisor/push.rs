//! The push buffer: unsolicited frames waiting for a reader.
//!
//! Bounded by frame count and payload bytes. When a new frame does not fit,
//! the oldest frames are dropped until it does (a frame larger than the whole
//! byte bound is itself dropped); the running total of drops is reported
//! once, on the next read, as [`PushBatch::overflow_total`].

use std::collections::VecDeque;

use bytes::Bytes;

use super::ids::SlotId;
use crate::proto::ResponseHeader;

/// An unsolicited frame: buffered by the Supervisor, delivered to a push reader.
#[derive(Debug, Clone)]
pub struct PushFrame {
    /// The slot it arrived on.
    pub slot: SlotId,
    /// Its header.
    pub header: ResponseHeader,
    /// Its payload.
    pub payload: Bytes,
}

/// What one push read returns ([`Supervisor::read_pushes`](super::Supervisor::read_pushes)).
#[derive(Debug, Default)]
pub struct PushBatch {
    /// Frames dropped since the engine started, when some were dropped
    /// since the last read (reported once).
    pub overflow_total: Option<u64>,
    /// The frames read, oldest first.
    pub frames: Vec<PushFrame>,
}

#[derive(Debug)]
pub(crate) struct PushBuffer {
    frames: VecDeque<PushFrame>,
    /// Invariant: `bytes == sum of frames' payload lengths <= bytes_max`.
    bytes: usize,
    frames_max: usize,
    bytes_max: usize,
    dropped_total: u64,
    /// Drops happened since the last report.
    overflow_unreported: bool,
    /// Largest byte and frame counts ever held, for diagnostics.
    pub(crate) bytes_peak: usize,
    pub(crate) frames_peak: usize,
}

impl PushBuffer {
    pub(crate) fn new(frames_max: usize, bytes_max: usize) -> Self {
        assert!(frames_max > 0 && bytes_max > 0, "push bounds must be positive");
        Self {
            frames: VecDeque::new(),
            bytes: 0,
            frames_max,
            bytes_max,
            dropped_total: 0,
            overflow_unreported: false,
            bytes_peak: 0,
            frames_peak: 0,
        }
    }

    pub(crate) fn push(&mut self, frame: PushFrame) {
        let len = frame.payload.len();
        if len > self.bytes_max {
            self.note_drop(1);
            return;
        }
        while self.frames.len() >= self.frames_max || self.bytes + len > self.bytes_max {
            let oldest = self.frames.pop_front().expect("over a bound, so not empty");
            self.bytes -= oldest.payload.len();
            self.note_drop(1);
        }
        self.bytes += len;
        self.frames.push_back(frame);
        self.bytes_peak = self.bytes_peak.max(self.bytes);
        self.frames_peak = self.frames_peak.max(self.frames.len());
        debug_assert!(self.bytes <= self.bytes_max && self.frames.len() <= self.frames_max);
    }

    fn note_drop(&mut self, n: u64) {
        self.dropped_total += n;
        self.overflow_unreported = true;
    }

    /// The overflow report due on this read, if any; clears it.
    pub(crate) fn take_overflow(&mut self) -> Option<u64> {
        std::mem::take(&mut self.overflow_unreported).then_some(self.dropped_total)
    }

    pub(crate) fn pop(&mut self) -> Option<PushFrame> {
        let frame = self.frames.pop_front()?;
        self.bytes -= frame.payload.len();
        Some(frame)
    }

    pub(crate) fn len(&self) -> usize {
        self.frames.len()
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    pub(crate) fn dropped_total(&self) -> u64 {
        self.dropped_total
    }

    pub(crate) fn clear(&mut self) {
        self.frames.clear();
        self.bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(n: usize) -> PushFrame {
        let header =
            ResponseHeader { control: 0x0c, msg_id: 1, reserved: 0, msg_type: 0x547, zip_length: 0, length: 0 };
        PushFrame { slot: SlotId(0), header, payload: Bytes::from(vec![0u8; n]) }
    }

    #[test]
    fn drops_oldest_and_reports_once() {
        let mut buffer = PushBuffer::new(3, 100);
        for _ in 0..5 {
            buffer.push(frame(10));
        }
        assert_eq!(buffer.len(), 3);
        assert_eq!(buffer.take_overflow(), Some(2));
        assert_eq!(buffer.take_overflow(), None, "reported once");
        buffer.push(frame(95));
        assert_eq!((buffer.len(), buffer.bytes()), (1, 95), "byte bound drops the rest");
        assert_eq!(buffer.take_overflow(), Some(5));
        buffer.push(frame(101));
        assert_eq!(buffer.len(), 1, "a frame over the whole bound is itself dropped");
        assert_eq!(buffer.dropped_total(), 6);
        assert!(buffer.pop().is_some());
        assert_eq!(buffer.bytes(), 0);
    }
}
