//! A value its owner parks between uses and a borrower may take while it is
//! parked: a ready connection, which its slot task parks whenever it has
//! nothing to do and a caller on the same runtime borrows to do its own
//! exchange (write, wait, read, apply), so the one wake-up of a request is
//! the caller's own.
//!
//! Who holds the value is always one of three: parked here, the owner, or
//! one borrower. The owner's waker is kept so a borrower giving the value
//! back can either re-arm it (register it where the owner waits, without
//! waking it) or wake it when it asked for the value meanwhile. Closing
//! (the owner's generation ends) drops a parked value, refuses later
//! borrows, wakes a borrower, and makes a value given back be dropped; the
//! first `close` is told it was first, so exactly one side reports the end.

use std::task::{Context, Poll, Waker};

use super::Mutex;

/// A connection's loan cell (see the module docs).
#[derive(Debug)]
pub(crate) struct LoanCell<T> {
    inner: Mutex<Inner<T>>,
}

#[derive(Debug)]
struct Inner<T> {
    /// The value while nobody uses it.
    parked: Option<T>,
    /// A borrower has it.
    lent: bool,
    closed: bool,
    /// The owner's waker, from its last poll.
    owner: Option<Waker>,
    /// The owner waits for the value itself (to write a request on it, or
    /// to move it), not only for it to have work: a give-back wakes it.
    owner_wants: bool,
    /// The borrower's waker, woken by `close` and `stop_borrower`.
    borrower: Option<Waker>,
    /// The borrower was told to stop (`stop_borrower`): until the next borrow.
    stopped: bool,
    /// Borrows so far.
    borrows: u64,
}

/// Whether a `close` was the first (its caller reports the end).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Closed {
    First,
    Already,
}

impl<T> Default for LoanCell<T> {
    /// Nothing parked: the owner holds the value.
    fn default() -> Self {
        Self {
            inner: Mutex::new(Inner {
                parked: None,
                lent: false,
                closed: false,
                owner: None,
                owner_wants: false,
                borrower: None,
                stopped: false,
                borrows: 0,
            }),
        }
    }
}

impl<T> LoanCell<T> {
    fn lock(&self) -> super::MutexGuard<'_, Inner<T>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    // ---- the owner ----

    /// Parks the value; after a close it is dropped instead.
    pub(crate) fn park(&self, value: T) {
        let mut inner = self.lock();
        debug_assert!(inner.parked.is_none() && !inner.lent, "one holder at a time");
        if inner.closed {
            drop(inner);
            drop(value);
            return;
        }
        inner.parked = Some(value);
    }

    /// The parked value once `ready` says it has work (polled under the
    /// lock with the owner's context, so the owner's waker is registered
    /// wherever `ready` waits); `Ready(None)` once closed. While the value
    /// is lent the owner only waits: the borrower re-arms or wakes it.
    pub(crate) fn poll_work<R>(
        &self,
        cx: &mut Context<'_>,
        ready: impl FnOnce(&mut T, &mut Context<'_>) -> Poll<R>,
    ) -> Poll<Option<(T, R)>> {
        let mut inner = self.lock();
        if inner.closed {
            return Poll::Ready(None);
        }
        remember(&mut inner.owner, cx.waker());
        let Some(value) = inner.parked.as_mut() else { return Poll::Pending };
        match ready(value, cx) {
            Poll::Ready(r) => Poll::Ready(inner.parked.take().map(|v| (v, r))),
            Poll::Pending => Poll::Pending,
        }
    }

    /// The value itself, as soon as it is parked; `Ready(None)` once closed.
    pub(crate) fn poll_take(&self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let mut inner = self.lock();
        if inner.closed {
            return Poll::Ready(None);
        }
        if let Some(value) = inner.parked.take() {
            inner.owner_wants = false;
            return Poll::Ready(Some(value));
        }
        remember(&mut inner.owner, cx.waker());
        inner.owner_wants = true;
        Poll::Pending
    }

    /// The value if it is parked now, without registering a waker.
    pub(crate) fn try_take(&self) -> Option<T> {
        let mut inner = self.lock();
        if inner.closed {
            return None;
        }
        inner.parked.take()
    }

    // ---- either side ----

    /// Ends lending: a parked value is dropped, a borrower woken, and a
    /// value given back later dropped.
    pub(crate) fn close(&self) -> Closed {
        let mut inner = self.lock();
        if inner.closed {
            return Closed::Already;
        }
        inner.closed = true;
        let parked = inner.parked.take();
        let borrower = inner.borrower.take();
        let owner = inner.owner.take();
        drop(inner);
        // Outside the lock: dropping a connection closes its socket, and
        // a waker may run code of its own.
        drop(parked);
        for waker in [borrower, owner].into_iter().flatten() {
            waker.wake();
        }
        Closed::First
    }

    // ---- a borrower ----

    /// Takes the parked value for a borrower.
    pub(crate) fn try_borrow(&self) -> Option<T> {
        let mut inner = self.lock();
        if inner.closed || inner.lent {
            return None;
        }
        let value = inner.parked.take()?;
        inner.lent = true;
        inner.stopped = false;
        inner.borrows += 1;
        Some(value)
    }

    /// Borrows so far: the owner sees whether any came in an interval.
    pub(crate) fn borrows(&self) -> u64 {
        self.lock().borrows
    }

    /// Registers the borrower's waker (woken by `close` and
    /// `stop_borrower`); `false` once closed or the borrower was stopped:
    /// it should give the value back.
    pub(crate) fn register_borrower(&self, waker: &Waker) -> bool {
        let mut inner = self.lock();
        remember(&mut inner.borrower, waker);
        !inner.closed && !inner.stopped
    }

    /// Stops the borrower and wakes it (its request ended elsewhere). A
    /// stop that comes after its borrow ended stops the next borrower:
    /// harmless, as a stopped borrower only gives the value back early.
    pub(crate) fn stop_borrower(&self) {
        let mut inner = self.lock();
        if !inner.lent {
            return;
        }
        inner.stopped = true;
        let waker = inner.borrower.take();
        drop(inner);
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Gives the value back. `rearm` registers the owner's waker wherever
    /// the owner waits for work and says whether there is work now; the
    /// owner is woken when there is, or when it waits for the value itself.
    /// After a close the value is dropped.
    pub(crate) fn give_back(&self, mut value: T, rearm: impl FnOnce(&mut T, &Waker) -> bool) {
        let mut inner = self.lock();
        debug_assert!(inner.lent, "given back without a borrow");
        inner.lent = false;
        inner.borrower = None;
        if inner.closed {
            drop(inner);
            drop(value);
            return;
        }
        let wants = std::mem::take(&mut inner.owner_wants);
        let work = inner.owner.as_ref().is_some_and(|owner| rearm(&mut value, owner));
        let wake = wants || work;
        inner.parked = Some(value);
        let owner = if wake { inner.owner.clone() } else { None };
        drop(inner);
        if let Some(owner) = owner {
            owner.wake();
        }
    }
}

/// Keeps `waker` in `slot`, cloning only when it is another task's.
fn remember(slot: &mut Option<Waker>, waker: &Waker) {
    if !slot.as_ref().is_some_and(|w| w.will_wake(waker)) {
        *slot = Some(waker.clone());
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Wake;

    use super::*;

    #[derive(Default)]
    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn waker() -> (Arc<Count>, Waker) {
        let count = Arc::new(Count::default());
        (count.clone(), Waker::from(count))
    }

    /// Why: the point of lending is that handing a connection back costs
    /// the slot task no wake-up when it has no work; and that it is woken
    /// when it does, or when it waits for the connection itself.
    #[test]
    fn giving_back_rearms_the_owner_and_wakes_it_only_with_work() {
        let lend = LoanCell::default();
        let (owner_count, owner) = waker();
        lend.park(7u32);
        let mut cx = Context::from_waker(&owner);
        assert_eq!(lend.poll_work(&mut cx, |_, _| Poll::<()>::Pending), Poll::Pending);
        let value = lend.try_borrow().expect("parked");
        assert_eq!(lend.try_borrow(), None, "one borrower at a time");
        assert_eq!(lend.try_take(), None, "the owner cannot take a lent value");
        let mut rearmed = false;
        lend.give_back(value, |_, w| {
            rearmed = w.will_wake(&owner);
            false
        });
        assert!(rearmed, "the owner's waker is re-armed");
        assert_eq!(owner_count.0.load(Ordering::SeqCst), 0, "no work: no wake-up");
        let value = lend.try_borrow().unwrap();
        lend.give_back(value, |_, _| true);
        assert_eq!(owner_count.0.load(Ordering::SeqCst), 1, "work: woken");
        let value = lend.try_borrow().unwrap();
        assert_eq!(lend.poll_take(&mut cx), Poll::Pending, "lent: the owner waits");
        lend.give_back(value, |_, _| false);
        assert_eq!(owner_count.0.load(Ordering::SeqCst), 2, "the owner wanted it: woken");
        assert_eq!(lend.poll_take(&mut cx), Poll::Ready(Some(7)));
    }

    /// Why: a retired connection must end for both sides: a borrower is
    /// woken, a value given back after the close is dropped (its socket
    /// closed), and only the first close reports.
    #[test]
    fn close_wakes_the_borrower_and_drops_what_comes_back() {
        let lend = LoanCell::default();
        let token = Arc::new(());
        lend.park(token.clone());
        let value = lend.try_borrow().unwrap();
        let (borrower_count, borrower) = waker();
        assert!(lend.register_borrower(&borrower));
        assert_eq!(lend.close(), Closed::First);
        assert_eq!(lend.close(), Closed::Already);
        assert_eq!(borrower_count.0.load(Ordering::SeqCst), 1);
        assert!(!lend.register_borrower(&borrower));
        lend.give_back(value, |_, _| panic!("no owner to re-arm after a close"));
        assert_eq!(Arc::strong_count(&token), 1, "dropped, not parked");
        assert_eq!(lend.try_borrow(), None);
        let (_, owner) = waker();
        assert_eq!(lend.poll_take(&mut Context::from_waker(&owner)), Poll::Ready(None));
    }

    /// Why: a lent request that ends elsewhere (its deadline, a close)
    /// must not leave its caller waiting on the socket: the stop wakes the
    /// borrower and its next registration says to give the value back. A
    /// stop with nothing lent does nothing, and a new borrow starts unstopped.
    #[test]
    fn a_stopped_borrower_is_woken_and_told_to_give_back() {
        let lend = LoanCell::default();
        lend.park(1u32);
        lend.stop_borrower();
        let value = lend.try_borrow().expect("parked");
        let (borrower_count, borrower) = waker();
        assert!(lend.register_borrower(&borrower), "a stop before the borrow does not count");
        lend.stop_borrower();
        assert_eq!(borrower_count.0.load(Ordering::SeqCst), 1, "woken");
        assert!(!lend.register_borrower(&borrower), "told to give back");
        lend.give_back(value, |_, _| false);
        let value = lend.try_borrow().expect("given back, parked");
        assert!(lend.register_borrower(&borrower), "the next borrow starts unstopped");
        lend.give_back(value, |_, _| false);
    }
}

#[cfg(all(test, loom))]
mod loom_lend {
    use std::future::poll_fn;
    use std::task::Poll;

    use loom::sync::atomic::{AtomicBool, Ordering};
    use loom::sync::Arc;

    use super::*;

    /// A borrower waiting on its value until the line tells it to give it
    /// back (closed, or the borrower stopped).
    fn wait_until_told_to_give_back<T>(lend: &LoanCell<T>) {
        loom::future::block_on(poll_fn(|cx| {
            if lend.register_borrower(cx.waker()) {
                Poll::Pending
            } else {
                Poll::Ready(())
            }
        }));
    }

    /// Why: the slot task waits for its connection (to write a request on
    /// it) while a caller borrows it and gives it back. In every
    /// interleaving the owner gets the value exactly once and is never left
    /// waiting (a lost wake-up deadlocks `block_on`, which fails the model).
    #[test]
    fn loom_an_owner_waiting_for_a_lent_value_gets_it_back() {
        loom::model(|| {
            let lend = Arc::new(LoanCell::default());
            lend.park(1u32);
            let borrower = {
                let lend = lend.clone();
                loom::thread::spawn(move || {
                    if let Some(value) = lend.try_borrow() {
                        lend.give_back(value, |_, _| false);
                    }
                })
            };
            let got = loom::future::block_on(poll_fn(|cx| lend.poll_take(cx)));
            borrower.join().unwrap();
            assert_eq!(got, Some(1));
            assert_eq!(lend.try_borrow(), None, "the owner has it");
        });
    }

    /// Why: a borrower brings work (bytes arrived while it held the
    /// connection) and gives the value back while the owner polls for work.
    /// The owner must see the work: either its own poll finds it, or the
    /// give-back's re-arm reports it and wakes the owner.
    #[test]
    fn loom_work_that_arrives_during_a_loan_is_never_missed() {
        loom::model(|| {
            let lend = Arc::new(LoanCell::default());
            let work = Arc::new(AtomicBool::new(false));
            lend.park(());
            let value = lend.try_borrow().unwrap();
            let borrower = {
                let (lend, work) = (lend.clone(), work.clone());
                loom::thread::spawn(move || {
                    work.store(true, Ordering::SeqCst);
                    lend.give_back(value, |_, _| work.load(Ordering::SeqCst));
                })
            };
            let got = loom::future::block_on(poll_fn(|cx| {
                lend.poll_work(cx, |_, _| if work.load(Ordering::SeqCst) { Poll::Ready(()) } else { Poll::Pending })
            }));
            borrower.join().unwrap();
            assert!(got.is_some(), "the owner took the value with its work");
        });
    }

    /// Why: the owner retires the connection while a caller has it and
    /// waits on it. The borrower is woken (it would otherwise wait for a
    /// reply that never comes), and what it gives back is dropped: the
    /// value's last reference goes, whatever the order.
    #[test]
    fn loom_close_during_a_loan_wakes_the_borrower_and_drops_the_value() {
        loom::model(|| {
            let lend = Arc::new(LoanCell::default());
            let token = Arc::new(());
            lend.park(token.clone());
            let value = lend.try_borrow().unwrap();
            let owner = {
                let lend = lend.clone();
                loom::thread::spawn(move || {
                    assert_eq!(lend.close(), Closed::First);
                })
            };
            wait_until_told_to_give_back(&lend);
            lend.give_back(value, |_, _| false);
            owner.join().unwrap();
            assert_eq!(Arc::strong_count(&token), 1, "the value was dropped, not parked");
        });
    }

    /// Why: a lent request ends elsewhere (its deadline) while its caller
    /// waits on the socket. Whatever the order of the stop and the
    /// borrower's registration, the borrower learns of it (a lost wake-up
    /// deadlocks `block_on`, which fails the model) and the value goes back
    /// to its owner, not dropped.
    #[test]
    fn loom_a_stop_during_a_loan_is_never_missed() {
        loom::model(|| {
            let lend = Arc::new(LoanCell::default());
            lend.park(1u32);
            let value = lend.try_borrow().unwrap();
            let stopper = {
                let lend = lend.clone();
                loom::thread::spawn(move || lend.stop_borrower())
            };
            wait_until_told_to_give_back(&lend);
            lend.give_back(value, |_, _| false);
            stopper.join().unwrap();
            assert_eq!(lend.try_take(), Some(1), "given back to the owner");
        });
    }
}
