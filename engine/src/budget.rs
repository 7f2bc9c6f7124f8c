//! Engine-wide memory budgets: atomic counters with RAII reservations.
//!
//! A [`Budget`] has a fixed limit in bytes. [`Budget::try_reserve`] either
//! takes `n` bytes out of it, returning a [`Reservation`] that gives them
//! back when dropped, or refuses at once: it never waits and never lets the
//! total pass the limit, however many threads reserve at the same time (a
//! compare-and-swap loop; checked under loom in `loom_budget`). Peaks are
//! tracked for diagnostics.
//!
//! Under pressure the engine serves replies to sent requests first, then
//! pauses the reads of the slot that could not reserve (TCP backpressure);
//! a slot that breaks its own bound retires its generation only.

use crate::sync::{Arc, AtomicUsize, Ordering};

/// One bounded pool of bytes (raw staging, decoded frames, or pushes).
#[derive(Debug)]
pub struct Budget {
    name: &'static str,
    limit: usize,
    /// Invariant: `used <= limit`.
    used: AtomicUsize,
    peak: AtomicUsize,
    refusals: AtomicUsize,
}

impl Budget {
    /// A budget of `limit` bytes; `name` appears in diagnostics.
    pub fn new(name: &'static str, limit: usize) -> Arc<Self> {
        assert!(limit > 0, "budget {name} must have a positive limit");
        Arc::new(Self {
            name,
            limit,
            used: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            refusals: AtomicUsize::new(0),
        })
    }

    /// Takes `bytes` from `budget`, or refuses at once when that would pass
    /// the limit. (An associated function, like `Arc::clone`, because loom's
    /// `Arc` cannot be a method receiver.)
    pub fn try_reserve(budget: &Arc<Self>, bytes: usize) -> Option<Reservation> {
        let this = &**budget;
        let mut used = this.used.load(Ordering::Relaxed);
        loop {
            let next = match used.checked_add(bytes) {
                Some(next) if next <= this.limit => next,
                _ => {
                    this.refusals.fetch_add(1, Ordering::Relaxed);
                    return None;
                }
            };
            match this.used.compare_exchange_weak(used, next, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => {
                    this.peak.fetch_max(next, Ordering::Relaxed);
                    return Some(Reservation { budget: budget.clone(), bytes });
                }
                Err(actual) => used = actual,
            }
        }
    }

    /// Bytes reserved now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    /// Largest `used` ever seen.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    /// The limit.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Reservations refused so far.
    pub fn refusals(&self) -> usize {
        self.refusals.load(Ordering::Relaxed)
    }

    /// The name given at creation.
    pub fn name(&self) -> &'static str {
        self.name
    }

    fn release(&self, bytes: usize) {
        let before = self.used.fetch_sub(bytes, Ordering::AcqRel);
        debug_assert!(before >= bytes, "budget {} released more than it held", self.name);
    }
}

/// Bytes held from a [`Budget`]; given back on drop.
#[derive(Debug)]
#[must_use = "a reservation is released as soon as it is dropped"]
pub struct Reservation {
    budget: Arc<Budget>,
    bytes: usize,
}

impl Reservation {
    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Adds `other`'s bytes (from the same budget) to this reservation.
    pub fn merge(&mut self, mut other: Reservation) {
        assert!(Arc::ptr_eq(&self.budget, &other.budget), "merge reservations of one budget only");
        self.bytes += std::mem::take(&mut other.bytes);
    }

    /// Gives back all but `keep` bytes (for example once a frame's real size is known).
    pub fn shrink_to(&mut self, keep: usize) {
        assert!(keep <= self.bytes, "shrink_to may not grow a reservation");
        self.budget.release(self.bytes - keep);
        self.bytes = keep;
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if self.bytes > 0 {
            self.budget.release(self.bytes);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn reserve_release_and_refuse() {
        let budget = Budget::new("decoded", 100);
        let a = Budget::try_reserve(&budget, 60).unwrap();
        assert!(Budget::try_reserve(&budget, 41).is_none(), "past the limit");
        let mut b = Budget::try_reserve(&budget, 40).unwrap();
        assert_eq!((budget.used(), budget.peak()), (100, 100));
        b.shrink_to(10);
        assert_eq!(budget.used(), 70);
        drop(a);
        drop(b);
        assert_eq!(budget.used(), 0);
        assert_eq!(budget.refusals(), 1);
        assert!(Budget::try_reserve(&budget, usize::MAX).is_none(), "overflow is a refusal, not a wrap");
    }

    #[test]
    fn threads_never_pass_the_limit() {
        let budget = Budget::new("raw", 1000);
        std::thread::scope(|s| {
            for _ in 0..4 {
                let budget = budget.clone();
                s.spawn(move || {
                    for i in 0..10_000 {
                        if let Some(r) = Budget::try_reserve(&budget, 1 + i % 300) {
                            assert!(budget.used() <= 1000);
                            drop(r);
                        }
                    }
                });
            }
        });
        assert_eq!(budget.used(), 0);
        assert!(budget.peak() <= 1000);
    }
}

#[cfg(all(test, loom))]
mod loom_budget {
    use super::*;

    /// Two threads race for a budget that fits only one of them at a time:
    /// in every interleaving the total never passes the limit, exactly the
    /// reserved bytes are accounted, and dropping guards returns to zero.
    #[test]
    fn concurrent_reserve_release_is_exact() {
        loom::model(|| {
            let budget = Budget::new("loom", 10);
            let threads: Vec<_> = (0..2)
                .map(|_| {
                    let budget = budget.clone();
                    loom::thread::spawn(move || {
                        let r = Budget::try_reserve(&budget, 6);
                        if let Some(r) = &r {
                            assert_eq!(r.bytes(), 6);
                        }
                        assert!(budget.used() <= 10);
                        r.is_some()
                    })
                })
                .collect();
            let won: usize = threads.into_iter().map(|t| usize::from(t.join().unwrap())).sum();
            assert!(won >= 1, "at least one reservation fits");
            assert_eq!(budget.used(), 0, "guards dropped in the threads released everything");
            assert!(budget.peak() <= 10);
        });
    }

    /// A shrink racing a reserve: the freed bytes become available, and the
    /// accounting ends exact.
    #[test]
    fn shrink_races_reserve() {
        loom::model(|| {
            let budget = Budget::new("loom", 8);
            let mut held = Budget::try_reserve(&budget, 8).unwrap();
            let other = {
                let budget = budget.clone();
                loom::thread::spawn(move || Budget::try_reserve(&budget, 4).map(|r| r.bytes()))
            };
            held.shrink_to(4);
            let got = other.join().unwrap();
            assert!(budget.used() <= 8);
            assert!(got.is_none() || got == Some(4));
            drop(held);
            assert_eq!(budget.used(), 0);
        });
    }
}
