//! The clock task: the one task the engine keeps besides its slot tasks.
//! One timer for the engine's life, set to the Supervisor's next timeout or
//! the next diagnostics refresh, whichever is first: at a timeout it applies
//! `Tick`; every [`DIAGNOSTICS_REFRESH`] it weighs worker load and
//! republishes the diagnostics. An input that brings the next timeout
//! before the armed instant wakes it to re-arm (see [`crate::sync::Alarm`]);
//! since the refresh bounds how long it sleeps, a new request's deadline
//! (seconds away) never wakes it. It ends when the engine has closed.

use std::sync::Arc;

use tracing::Instrument;

use super::core::Core;
use super::diagnostics::DIAGNOSTICS_REFRESH;

/// Runs until the engine is closed (or failed closed and orphaned).
pub(crate) async fn run(core: Arc<Core>, pool: usize) {
    let span = tracing::info_span!("engine", pool);
    async move {
        let timer = tokio::time::sleep_until(tokio::time::Instant::now());
        tokio::pin!(timer);
        let mut set_for = None;
        let mut next_refresh = core.now() + DIAGNOSTICS_REFRESH;
        core.start();
        loop {
            // Registered before arming, so a wake in between is kept.
            let woken = core.clock.notified();
            let Some((at, is_timeout)) = core.arm(next_refresh) else { break };
            if set_for != Some(at) {
                timer.as_mut().reset(at.into());
                set_for = Some(at);
            }
            tokio::select! {
                biased;
                () = woken => {}
                () = &mut timer => {
                    // Fired: the next arming sets it again, even at the same instant.
                    set_for = None;
                    if is_timeout {
                        core.tick();
                    }
                    let now = core.now();
                    if now >= next_refresh {
                        core.refresh(DIAGNOSTICS_REFRESH.as_secs_f64());
                        next_refresh = now + DIAGNOSTICS_REFRESH;
                    }
                }
            }
        }
        core.publish();
        tracing::debug!(state = ?core.close_state(), "engine finished");
    }
    .instrument(span)
    .await
}
