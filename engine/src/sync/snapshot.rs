//! The latest published value (the diagnostics snapshot): readers clone an
//! `Arc` under a short lock and never wait on whoever builds the next one.

use super::{Arc, Mutex};

/// A value replaced whole; readers see either the old or the new one.
#[derive(Debug)]
pub(crate) struct Snapshot<T>(Mutex<Arc<T>>);

impl<T> Snapshot<T> {
    pub(crate) fn new(first: T) -> Self {
        Self(Mutex::new(Arc::new(first)))
    }

    /// The latest value.
    pub(crate) fn get(&self) -> Arc<T> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Publishes `next`; the old value lives on while readers hold it.
    pub(crate) fn set(&self, next: T) {
        let next = Arc::new(next);
        // The old value is dropped after the lock is released.
        let _old = std::mem::replace(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()), next);
    }
}

#[cfg(all(test, loom))]
mod loom_snapshot {
    use super::*;

    /// A reader racing two publications sees a whole value, never a mix,
    /// and never goes back in time after seeing a newer one.
    #[test]
    fn readers_see_whole_values_in_order() {
        loom::model(|| {
            let cell = Arc::new(Snapshot::new((0u32, 0u32)));
            let writer = {
                let cell = cell.clone();
                loom::thread::spawn(move || {
                    cell.set((1, 1));
                    cell.set((2, 2));
                })
            };
            let first = *cell.get();
            let second = *cell.get();
            assert_eq!(first.0, first.1, "whole value");
            assert_eq!(second.0, second.1, "whole value");
            assert!(second.0 >= first.0, "no going back: {first:?} then {second:?}");
            writer.join().unwrap();
            assert_eq!(*cell.get(), (2, 2));
        });
    }
}
