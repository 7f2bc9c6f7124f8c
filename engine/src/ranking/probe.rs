//! Probe rounds: TCP connect latency to each candidate, concurrently with a
//! bound, each probe with its own timeout.

use std::sync::Arc;
use std::time::Duration;

use crate::runtime::connector::Connector;
use crate::supervisor::Endpoint;

/// One candidate's probe.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeResult {
    /// The candidate.
    pub endpoint: Endpoint,
    /// Connect latency, `None` when the connect failed or timed out.
    pub latency: Option<Duration>,
}

/// Connects to every candidate, at most `concurrency` at a time, each
/// within `timeout`; returns results in candidate order. Measured on the
/// runtime's clock.
pub async fn probe<C: Connector>(
    connector: Arc<C>,
    candidates: &[Endpoint],
    concurrency: usize,
    timeout: Duration,
) -> Vec<ProbeResult> {
    assert!(concurrency > 0, "probe concurrency must be at least 1");
    let permits = Arc::new(tokio::sync::Semaphore::new(concurrency));
    let mut tasks = tokio::task::JoinSet::new();
    for (i, endpoint) in candidates.iter().cloned().enumerate() {
        let (connector, permits) = (connector.clone(), permits.clone());
        tasks.spawn(async move {
            let _permit = permits.acquire_owned().await.expect("the semaphore is never closed");
            let started = tokio::time::Instant::now();
            let latency = match connector.connect(&endpoint, timeout).await {
                Ok(stream) => {
                    drop(stream);
                    Some(started.elapsed())
                }
                Err(e) => {
                    tracing::debug!(%endpoint, error = %e, "probe failed");
                    None
                }
            };
            (i, ProbeResult { endpoint, latency })
        });
    }
    let mut results: Vec<Option<ProbeResult>> = vec![None; candidates.len()];
    while let Some(done) = tasks.join_next().await {
        if let Ok((i, result)) = done {
            results[i] = Some(result);
        }
    }
    results
        .into_iter()
        .zip(candidates)
        .map(|(r, c)| r.unwrap_or(ProbeResult { endpoint: c.clone(), latency: None }))
        .collect()
}

/// One probe round, folded into the saved ranking.
#[derive(Debug)]
pub struct Round {
    /// Each candidate's result, in the candidates' order.
    pub results: Vec<ProbeResult>,
    /// The ranking after the round.
    pub ranking: super::Ranking,
    /// Whether saving it worked (`Ok` when there is no store); the caller
    /// decides if a failed save is an error or a warning.
    pub saved: std::io::Result<()>,
}

/// Probes `candidates`, applies the round to what `store` holds (read after
/// the probe, so the freshest file wins) and saves the result atomically.
pub async fn probe_and_save<C: Connector>(
    connector: Arc<C>,
    candidates: &[Endpoint],
    concurrency: usize,
    timeout: Duration,
    store: Option<&super::RankingStore>,
) -> Round {
    let results = probe(connector, candidates, concurrency, timeout).await;
    let mut ranking = store.map_or_else(super::Ranking::new, super::RankingStore::load);
    ranking.apply_probe(&results, super::unix_ms_now());
    let saved = store.map_or(Ok(()), |s| s.save(&ranking));
    Round { results, ranking, saved }
}
