//! A test hook that freezes a run at a chosen point, so a fault test can
//! kill it there and know where it was.
//!
//! `TDX_SYNC_STOP_AT=PHASE:N` (PHASE: `download`, `write` or `manifest`)
//! stops the run at the Nth time it reaches that phase: before a page of
//! bars is asked for, or halfway through writing a data file's or the
//! manifest's temporary copy. It prints one line on stderr,
//! `sync test hook: stopped in PHASE #N (WHAT)`, then blocks the thread
//! for good. Unset (as for every user), each call is one relaxed load.

use std::fmt;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

/// The environment variable that arms the hook.
pub const STOP_AT: &str = "TDX_SYNC_STOP_AT";

/// Where a run can be stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Before a page of bars is requested.
    Download,
    /// Halfway through a data file's temporary copy.
    Write,
    /// Halfway through the manifest's temporary copy.
    Manifest,
}

impl Phase {
    const ALL: [Phase; 3] = [Phase::Download, Phase::Write, Phase::Manifest];

    fn name(self) -> &'static str {
        match self {
            Phase::Download => "download",
            Phase::Write => "write",
            Phase::Manifest => "manifest",
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The armed stop, read once: `None` when the variable is unset or unreadable.
fn armed() -> Option<(Phase, u64)> {
    static ARMED: OnceLock<Option<(Phase, u64)>> = OnceLock::new();
    *ARMED.get_or_init(|| {
        let value = std::env::var(STOP_AT).ok()?;
        let (phase, n) = value.split_once(':')?;
        let phase = Phase::ALL.into_iter().find(|p| p.name() == phase)?;
        Some((phase, n.parse().ok()?))
    })
}

/// Counts one arrival at `phase`; at the armed one, says so and blocks.
pub fn reached(phase: Phase, what: impl fmt::Display) {
    static ARRIVALS: [AtomicU64; 3] = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];
    let Some((stop, n)) = armed() else { return };
    if stop != phase {
        return;
    }
    let slot = Phase::ALL.iter().position(|p| *p == phase).unwrap_or(0);
    if ARRIVALS[slot].fetch_add(1, Ordering::Relaxed) + 1 != n {
        return;
    }
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "sync test hook: stopped in {phase} #{n} ({what})");
    let _ = err.flush();
    drop(err);
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}
