//! The clock task: the one task the engine keeps besides its slot tasks.
//! It sleeps until the Supervisor's next timeout (one timer for the
//! engine's life, moved only when that timeout changes) and applies `Tick`;
//! any input that brings the timeout earlier wakes it to re-arm. Every
//! [`DIAGNOSTICS_REFRESH`] it weighs worker load and republishes the
//! diagnostics. It ends when the engine has closed.

use std::sync::Arc;
use std::time::Instant;

use tracing::Instrument;

use super::diagnostics::DIAGNOSTICS_REFRESH;
use super::locked::Core;

/// Runs until the engine is closed (or failed closed and orphaned).
pub(crate) async fn run(core: Arc<Core>, pool: usize) {
    let span = tracing::info_span!("engine", pool);
    async move {
        let mut refresh = tokio::time::interval(DIAGNOSTICS_REFRESH);
        refresh.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let timer = tokio::time::sleep_until(tokio::time::Instant::now());
        tokio::pin!(timer);
        let mut set_for: Option<Instant> = None;
        core.start();
        loop {
            // Registered before arming, so a wake in between is kept.
            let woken = core.clock.notified();
            let Some(next) = core.arm() else { break };
            if let Some(at) = next.filter(|at| set_for != Some(*at)) {
                timer.as_mut().reset(at.into());
                set_for = Some(at);
            }
            tokio::select! {
                biased;
                () = woken => {}
                () = &mut timer, if next.is_some() => {
                    // Fired: the next timeout re-arms it, even at the same instant.
                    set_for = None;
                    core.tick();
                }
                _ = refresh.tick() => core.refresh(DIAGNOSTICS_REFRESH.as_secs_f64()),
            }
        }
        core.publish();
        tracing::debug!(state = ?core.close_state(), "engine finished");
    }
    .instrument(span)
    .await
}
