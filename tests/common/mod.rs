//! Helpers shared by the integration tests.

use std::sync::Arc;
use std::time::Duration;

use tdx_engine::{Client, EngineDiagnostics};

/// Every slot of the pool is connected and ready.
pub fn pool_ready(d: &EngineDiagnostics) -> bool {
    d.supervisor.slots.iter().all(|s| s.state == "ready")
}

/// The diagnostics snapshot once it satisfies `ready`, or the latest one
/// after `limit`: snapshots are refreshed every 25 ms, and batched connects
/// and background probes land a little later than the calls that caused them.
pub async fn diagnostics_when(
    client: &Client,
    limit: Duration,
    ready: impl Fn(&EngineDiagnostics) -> bool,
) -> Arc<EngineDiagnostics> {
    let step = Duration::from_millis(20);
    let mut waited = Duration::ZERO;
    loop {
        let d = client.diagnostics();
        if ready(&d) || waited >= limit {
            return d;
        }
        tokio::time::sleep(step).await;
        waited += step;
    }
}
