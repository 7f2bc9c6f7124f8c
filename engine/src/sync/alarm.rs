//! The clock task's alarm: when it will wake next. Kept inside the locked
//! core's state and changed only under that lock, by two parties:
//!
//! - the clock task, which arms it for the Supervisor's next timeout before
//!   it sleeps;
//! - every applier, which after its input asks whether the next timeout is
//!   now earlier than the armed one; if so it lowers the alarm and, after
//!   unlocking, wakes the clock task (a stored permit: a wake sent before the
//!   task sleeps is not lost).
//!
//! The property (loom-checked below): once every applier has unlocked, the
//! clock task either sleeps until no later than the earliest timeout, or
//! has a wake pending. A lowered timeout is never slept through.

/// When the clock task will wake by at the latest (`None`: not armed; it
/// sleeps until woken).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Alarm<T> {
    armed: Option<T>,
}

impl<T> Default for Alarm<T> {
    fn default() -> Self {
        Self { armed: None }
    }
}

impl<T: Ord + Copy> Alarm<T> {
    /// The clock task arms for `next` (the Supervisor's next timeout).
    pub(crate) fn arm(&mut self, next: Option<T>) -> Option<T> {
        self.armed = next;
        next
    }

    /// An applier saw `next` as the next timeout: lowers the alarm and
    /// returns true (wake the clock task) when `next` is earlier than the
    /// armed instant or nothing is armed.
    pub(crate) fn lower(&mut self, next: Option<T>) -> bool {
        match next {
            Some(at) if self.armed.is_none_or(|armed| at < armed) => {
                self.armed = Some(at);
                true
            }
            _ => false,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn only_an_earlier_timeout_wakes_the_clock() {
        let mut alarm = Alarm::default();
        assert!(!alarm.lower(None), "no timeout: nothing to wake for");
        assert!(alarm.lower(Some(10)), "nothing armed: wake");
        assert!(!alarm.lower(Some(10)), "the same instant is already armed");
        assert!(!alarm.lower(Some(12)), "later: the clock wakes first anyway");
        assert!(alarm.lower(Some(5)), "earlier: wake to re-arm");
        assert_eq!(alarm.arm(Some(7)), Some(7));
        assert!(!alarm.lower(Some(9)));
        assert_eq!(alarm.arm(None), None);
        assert!(alarm.lower(Some(9)), "disarmed: any timeout wakes");
    }
}

#[cfg(all(test, loom))]
mod loom_alarm {
    use loom::sync::atomic::{AtomicBool, Ordering};
    use loom::sync::{Arc, Mutex};

    use super::Alarm;

    /// The core's state as far as the alarm is concerned: the Supervisor's
    /// pending timeouts and the alarm, under one lock.
    struct State {
        timeouts: Vec<u64>,
        alarm: Alarm<u64>,
    }

    /// Why: appliers on other threads bring the next timeout earlier while
    /// the clock task arms for the one it saw. In every interleaving the
    /// clock ends up either armed no later than the earliest timeout or
    /// with a wake pending (it re-arms on waking), so no timeout is slept
    /// through.
    #[test]
    fn loom_no_timeout_is_slept_through() {
        loom::model(|| {
            let state = Arc::new(Mutex::new(State { timeouts: vec![50], alarm: Alarm::default() }));
            let woken = Arc::new(AtomicBool::new(false));
            let appliers: Vec<_> = [30u64, 20]
                .into_iter()
                .map(|deadline| {
                    let (state, woken) = (state.clone(), woken.clone());
                    loom::thread::spawn(move || {
                        let wake = {
                            let mut s = state.lock().unwrap();
                            s.timeouts.push(deadline);
                            let next = s.timeouts.iter().copied().min();
                            s.alarm.lower(next)
                        };
                        // After unlocking, as the core does.
                        if wake {
                            woken.store(true, Ordering::Release);
                        }
                    })
                })
                .collect();
            let planned = {
                let mut s = state.lock().unwrap();
                let next = s.timeouts.iter().copied().min();
                s.alarm.arm(next)
            };
            for applier in appliers {
                applier.join().unwrap();
            }
            let earliest = state.lock().unwrap().timeouts.iter().copied().min();
            let pending = woken.load(Ordering::Acquire);
            assert!(
                pending || planned <= earliest,
                "the clock sleeps until {planned:?} past the earliest timeout {earliest:?} with no wake pending"
            );
        });
    }
}
