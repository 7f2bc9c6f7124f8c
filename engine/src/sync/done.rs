//! The close gate: the engine's owner waits, with a bound, for the clock
//! task to report that the engine finished closing before it stops the workers.

use std::time::Duration;

use super::{Condvar, Mutex};

/// Signalled once; waited on with a timeout.
#[derive(Debug, Default)]
pub(crate) struct DoneSignal {
    done: Mutex<bool>,
    cond: Condvar,
}

impl DoneSignal {
    /// Marks it done and wakes the waiter.
    pub(crate) fn signal(&self) {
        *self.done.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.cond.notify_all();
    }

    /// Waits until done or `limit` passed; true when done.
    pub(crate) fn wait(&self, limit: Duration) -> bool {
        let done = self.done.lock().unwrap_or_else(|e| e.into_inner());
        if *done {
            return true;
        }
        let (done, _) = self.cond.wait_timeout(done, limit).unwrap_or_else(|e| e.into_inner());
        *done
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn waits_for_the_signal_or_the_limit() {
        let gate = std::sync::Arc::new(DoneSignal::default());
        assert!(!gate.wait(Duration::from_millis(5)), "the limit passes without a signal");
        let signaller = {
            let gate = gate.clone();
            std::thread::spawn(move || gate.signal())
        };
        signaller.join().unwrap();
        assert!(gate.wait(Duration::from_secs(5)));
    }
}

#[cfg(all(test, loom))]
mod loom_done {
    use super::*;
    use crate::sync::Arc;

    /// The clock task signals while the owner starts waiting: the owner always
    /// sees it (loom's `wait_timeout` never times out, so a lost wake-up
    /// would deadlock and fail the model).
    #[test]
    fn the_close_gate_never_misses_the_clock_task() {
        loom::model(|| {
            let gate = Arc::new(DoneSignal::default());
            let driver = {
                let gate = gate.clone();
                loom::thread::spawn(move || gate.signal())
            };
            assert!(gate.wait(Duration::from_secs(2)));
            driver.join().unwrap();
        });
    }
}
