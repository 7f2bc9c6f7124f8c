//! The per-slot decoded-queue bound: frames and bytes a slot task has
//! handed to the driver that the driver has not taken yet.

use super::{AtomicUsize, Ordering};

/// Counts in flight between one producer (the slot task) and one consumer
/// (the driver), with a bound on each.
#[derive(Debug)]
pub(crate) struct QueueBound {
    frames: AtomicUsize,
    bytes: AtomicUsize,
    frames_max: usize,
    bytes_max: usize,
}

impl QueueBound {
    pub(crate) fn new(frames_max: usize, bytes_max: usize) -> Self {
        assert!(frames_max > 0 && bytes_max > 0, "a queue bound admits something");
        Self { frames: AtomicUsize::new(0), bytes: AtomicUsize::new(0), frames_max, bytes_max }
    }

    /// Counts one frame of `bytes` in if both bounds allow it. A frame larger
    /// than the byte bound is let in alone (into an empty queue), so it can
    /// never wait forever.
    pub(crate) fn try_admit(&self, bytes: usize) -> bool {
        // Frames first (a CAS, so racing producers could never pass the bound).
        let mut frames = self.frames.load(Ordering::Acquire);
        loop {
            if frames >= self.frames_max {
                return false;
            }
            match self.frames.compare_exchange_weak(frames, frames + 1, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => break,
                Err(now) => frames = now,
            }
        }
        let mut held = self.bytes.load(Ordering::Acquire);
        loop {
            let fits = held.checked_add(bytes).is_some_and(|n| n <= self.bytes_max) || held == 0;
            if !fits {
                self.frames.fetch_sub(1, Ordering::AcqRel);
                return false;
            }
            match self.bytes.compare_exchange_weak(held, held + bytes, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return true,
                Err(now) => held = now,
            }
        }
    }

    /// The consumer took one frame of `bytes`.
    pub(crate) fn taken(&self, bytes: usize) {
        let frames = self.frames.fetch_sub(1, Ordering::AcqRel);
        debug_assert!(frames > 0, "taken more frames than admitted");
        let held = self.bytes.fetch_sub(bytes, Ordering::AcqRel);
        debug_assert!(held >= bytes, "taken more bytes than admitted");
    }

    /// Frames and bytes counted in now (for tests and models).
    #[cfg(test)]
    pub(crate) fn held(&self) -> (usize, usize) {
        (self.frames.load(Ordering::Acquire), self.bytes.load(Ordering::Acquire))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn both_bounds_hold_and_an_oversize_frame_goes_alone() {
        let q = QueueBound::new(2, 100);
        assert!(q.try_admit(60));
        assert!(!q.try_admit(60), "bytes bound");
        assert!(q.try_admit(40));
        assert!(!q.try_admit(0), "frames bound");
        q.taken(60);
        q.taken(40);
        assert_eq!(q.held(), (0, 0));
        assert!(q.try_admit(500), "alone, an oversize frame passes");
        assert!(!q.try_admit(1));
    }
}

#[cfg(all(test, loom))]
mod loom_queue_bound {
    use super::*;
    use crate::sync::Arc;

    /// The slot task admits while the driver takes: the bounds are never
    /// passed and the counts end exact.
    #[test]
    fn admit_racing_take_keeps_exact_counts() {
        loom::model(|| {
            let q = Arc::new(QueueBound::new(1, 10));
            assert!(q.try_admit(6));
            let driver = {
                let q = q.clone();
                loom::thread::spawn(move || q.taken(6))
            };
            let admitted = q.try_admit(6);
            let (frames, bytes) = q.held();
            assert!(frames <= 1 && bytes <= 10, "bounds hold: {frames} frames, {bytes} bytes");
            driver.join().unwrap();
            assert_eq!(q.held(), if admitted { (1, 6) } else { (0, 0) });
        });
    }

    /// Two producers racing (never the case in the engine, but the bound
    /// must not rely on it): together they never pass either bound.
    #[test]
    fn racing_admits_never_pass_the_bound() {
        loom::model(|| {
            let q = Arc::new(QueueBound::new(1, 10));
            let other = {
                let q = q.clone();
                loom::thread::spawn(move || q.try_admit(4))
            };
            let mine = q.try_admit(4);
            let theirs = other.join().unwrap();
            assert!(mine ^ theirs, "exactly one fits the one-frame bound");
            assert_eq!(q.held(), (1, 4));
        });
    }
}
