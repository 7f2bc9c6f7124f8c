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
        budget.take(bytes).then(|| Reservation { budget: budget.clone(), bytes })
    }

    /// A reservation of nothing from `budget`, to grow with
    /// [`Reservation::try_grow`]: it takes no bytes and cannot be refused.
    pub fn empty_reservation(budget: &Arc<Self>) -> Reservation {
        Reservation { budget: budget.clone(), bytes: 0 }
    }

    /// Takes `bytes` for as long as the returned hold borrows this budget:
    /// a reservation without a reference count to touch, for bytes held
    /// only within one caller's scope (a frame between decode and apply).
    pub fn try_hold(&self, bytes: usize) -> Option<Hold<'_>> {
        // Made only once taken: a hold dropped on a refusal would release
        // bytes never taken (`then_some` would build it either way).
        if self.take(bytes) {
            Some(Hold { budget: self, bytes })
        } else {
            None
        }
    }

    /// The one compare-and-swap loop every reservation goes through.
    fn take(&self, bytes: usize) -> bool {
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            let next = match used.checked_add(bytes) {
                Some(next) if next <= self.limit => next,
                _ => {
                    self.refusals.fetch_add(1, Ordering::Relaxed);
                    return false;
                }
            };
            match self.used.compare_exchange_weak(used, next, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => {
                    // Read first: a read-modify-write on every reservation
                    // would pull the line from the other cores each time.
                    if next > self.peak.load(Ordering::Relaxed) {
                        self.peak.fetch_max(next, Ordering::Relaxed);
                    }
                    return true;
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

    /// Takes `bytes` more from the same budget into this reservation, or
    /// refuses at once (as [`Budget::try_reserve`]); a held reservation,
    /// even of 0 bytes, grows without touching the budget's reference count.
    pub fn try_grow(&mut self, bytes: usize) -> bool {
        let grown = self.budget.take(bytes);
        if grown {
            self.bytes += bytes;
        }
        grown
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

/// Bytes held from a [`Budget`] it borrows ([`Budget::try_hold`]); given
/// back on drop.
#[derive(Debug)]
#[must_use = "a hold is released as soon as it is dropped"]
pub struct Hold<'a> {
    budget: &'a Budget,
    bytes: usize,
}

impl Hold<'_> {
    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for Hold<'_> {
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
    fn grow_and_hold_account_like_reserve() {
        let budget = Budget::new("raw", 100);
        let mut held = Budget::empty_reservation(&budget);
        assert_eq!((held.bytes(), budget.used()), (0, 0));
        assert!(held.try_grow(70));
        assert!(!held.try_grow(31), "past the limit");
        assert_eq!((held.bytes(), budget.used(), budget.refusals()), (70, 70, 1));
        let hold = budget.try_hold(30).unwrap();
        assert_eq!((hold.bytes(), budget.used(), budget.peak()), (30, 100, 100));
        assert!(budget.try_hold(1).is_none());
        drop(hold);
        held.shrink_to(0);
        assert_eq!(budget.used(), 0);
        assert!(held.try_grow(5), "a reservation shrunk to nothing grows again");
        drop(held);
        assert_eq!((budget.used(), budget.peak(), budget.refusals()), (0, 100, 2));
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

    /// A reservation growing in place races a borrowed hold for the last
    /// bytes: at most one wins them, the peak never passes the limit, and
    /// releasing both returns to zero.
    #[test]
    fn grow_races_hold() {
        loom::model(|| {
            let budget = Budget::new("loom", 10);
            let mut held = Budget::try_reserve(&budget, 4).unwrap();
            let other = {
                let budget = budget.clone();
                loom::thread::spawn(move || {
                    let hold = budget.try_hold(6);
                    assert!(budget.used() <= 10);
                    hold.map(|h| h.bytes())
                })
            };
            let grew = held.try_grow(6);
            let got = other.join().unwrap();
            assert!(budget.peak() <= 10);
            assert!(grew || got.is_some(), "one of them fits whenever the other holds the bytes");
            assert_eq!(held.bytes(), if grew { 10 } else { 4 });
            drop(held);
            assert_eq!(budget.used(), 0);
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
