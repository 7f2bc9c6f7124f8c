//! Helpers for tests that live beside pure code.

use std::time::Instant;

/// An arbitrary origin for virtual time. Pure modules (the Supervisor) never
/// read a clock, not even in their tests; tests take their `t0` from here
/// and move time forward by adding durations.
pub(crate) fn time_origin() -> Instant {
    Instant::now()
}
