//! A one-shot completion a thread waits on with a time limit: a blocking
//! caller's outcome (waited for in short steps, so it can notice a cancel
//! flag between them), and the end of an owned engine's clock task (which
//! dropping the engine waits for, within the close gate).

use std::time::Duration;

use super::{Condvar, Mutex};

/// Set once, taken once by the thread waiting for it.
#[derive(Debug)]
pub(crate) struct Completion<T> {
    value: Mutex<Option<T>>,
    ready: Condvar,
}

impl<T> Default for Completion<T> {
    fn default() -> Self {
        Self { value: Mutex::new(None), ready: Condvar::new() }
    }
}

impl<T> Completion<T> {
    /// Stores the value and wakes the waiter.
    pub(crate) fn complete(&self, value: T) {
        let mut slot = self.value.lock().unwrap_or_else(|e| e.into_inner());
        debug_assert!(slot.is_none(), "a completion is set once");
        *slot = Some(value);
        drop(slot);
        self.ready.notify_all();
    }

    /// The value, waiting up to about `step` for it. The value is checked
    /// under the lock before waiting, so a completion that lands before the
    /// wait starts is never missed.
    pub(crate) fn wait(&self, step: Duration) -> Option<T> {
        let mut slot = self.value.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            slot = self.ready.wait_timeout(slot, step).unwrap_or_else(|e| e.into_inner()).0;
        }
        slot.take()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_value_set_before_or_during_the_wait_is_taken_once() {
        let c = std::sync::Arc::new(Completion::default());
        c.complete(7);
        assert_eq!(c.wait(Duration::from_millis(1)), Some(7));
        assert_eq!(c.wait(Duration::from_millis(1)), None, "taken once");
        let c = std::sync::Arc::new(Completion::default());
        let setter = {
            let c = c.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                c.complete(8);
            })
        };
        let mut got = None;
        while got.is_none() {
            got = c.wait(Duration::from_millis(5));
        }
        assert_eq!(got, Some(8));
        setter.join().unwrap();
    }
}

#[cfg(all(test, loom))]
mod loom_completion {
    use super::*;
    use crate::sync::Arc;

    /// The engine completes while the caller checks and waits: in every
    /// interleaving the caller gets the value (loom's `wait_timeout` never
    /// times out, so a lost wake-up would deadlock and fail the model).
    #[test]
    fn completion_racing_the_wait_is_never_lost() {
        loom::model(|| {
            let cell = Arc::new(Completion::default());
            let engine = {
                let cell = cell.clone();
                loom::thread::spawn(move || cell.complete(42u32))
            };
            let got = cell.wait(Duration::from_millis(25));
            engine.join().unwrap();
            assert_eq!(got, Some(42));
            assert!(cell.value.lock().unwrap().is_none(), "taken exactly once");
        });
    }
}
