//! Probe rounds: TCP connect latency to each candidate, concurrently with a
//! bound, each probe with its own timeout; with probe queries, also the
//! handshake and the queries, judged as the data canary judges them.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::proto::commands::Handshake;
use crate::proto::ex::EX_POOL_LOGIN;
use crate::proto::text::server_message;
use crate::proto::{Family, FrameDecoder, Request};
use crate::runtime::connector::Connector;
use crate::supervisor::{judge, Endpoint, RejectReason};

/// One candidate's probe.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeResult {
    /// The candidate.
    pub endpoint: Endpoint,
    /// Connect latency, `None` when the connect failed or timed out.
    pub latency: Option<Duration>,
    /// Why the candidate is not usable (`Unreachable` when the connect
    /// failed); `None` when it passed.
    pub rejected: Option<RejectReason>,
}

impl ProbeResult {
    /// Connected and, when queries were asked, answered them with data.
    pub fn is_good(&self) -> bool {
        self.latency.is_some() && self.rejected.is_none()
    }
}

/// Connects to every candidate, at most `concurrency` at a time, each
/// within `timeout`; returns results in candidate order. Measured on the
/// runtime's clock. With `queries`, a connected candidate must also
/// complete the handshake and answer every query with data (see
/// [`judge`]), all within another `timeout`; `None` checks the connect only.
pub async fn probe<C: Connector>(
    connector: Arc<C>,
    candidates: &[Endpoint],
    concurrency: usize,
    timeout: Duration,
    queries: Option<&[Request]>,
) -> Vec<ProbeResult> {
    assert!(concurrency > 0, "probe concurrency must be at least 1");
    let permits = Arc::new(tokio::sync::Semaphore::new(concurrency));
    let mut tasks = tokio::task::JoinSet::new();
    let queries: Option<Arc<[Request]>> = queries.map(Arc::from);
    for (i, endpoint) in candidates.iter().cloned().enumerate() {
        let (connector, permits, queries) = (connector.clone(), permits.clone(), queries.clone());
        tasks.spawn(async move {
            let _permit = permits.acquire_owned().await.expect("the semaphore is never closed");
            let started = tokio::time::Instant::now();
            let (latency, rejected) = match connector.connect(&endpoint, timeout).await {
                Ok(mut stream) => {
                    let latency = started.elapsed();
                    let rejected = match queries {
                        None => None,
                        Some(queries) => match tokio::time::timeout(timeout, validate(&mut stream, &queries)).await {
                            Ok(verdict) => verdict.err(),
                            Err(_) => Some(RejectReason::Stalled),
                        },
                    };
                    (Some(latency), rejected)
                }
                Err(e) => {
                    tracing::debug!(%endpoint, error = %e, "probe failed");
                    (None, Some(RejectReason::Unreachable))
                }
            };
            if let Some(reason) = &rejected {
                tracing::debug!(%endpoint, %reason, "probe rejected the server");
            }
            (i, ProbeResult { endpoint, latency, rejected })
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
        .map(|(r, c)| {
            r.unwrap_or(ProbeResult { endpoint: c.clone(), latency: None, rejected: Some(RejectReason::Unreachable) })
        })
        .collect()
}

/// What a probe connection sends first: the 7709 handshake, or the 0x2454
/// login the `ex` pool sends ([`EX_POOL_LOGIN`]) when the queries are 7727
/// commands (a 7727 server speaks no 7709).
fn opening(queries: &[Request]) -> Request {
    match queries.first().map(Request::family) {
        Some(Family::Ex) => Request::from(EX_POOL_LOGIN),
        _ => Request::from(Handshake::default()),
    }
}

/// The opening (handshake or login), then each query, one at a time on one connection.
async fn validate<S: AsyncRead + AsyncWrite + Unpin>(stream: &mut S, queries: &[Request]) -> Result<(), RejectReason> {
    let mut decoder = FrameDecoder::new();
    let handshake = opening(queries);
    let payload = exchange(stream, &mut decoder, 1, &handshake).await.map_err(|_| RejectReason::HandshakeFailed)?;
    if let Err(e) = handshake.parse_reply(&payload) {
        tracing::debug!(error = %e, "probe handshake reply did not parse");
        return Err(server_message(&payload).map_or(RejectReason::HandshakeFailed, RejectReason::Mismatch));
    }
    for (i, query) in queries.iter().enumerate() {
        let payload = exchange(stream, &mut decoder, 2 + i as u32, query).await?;
        let reply = query.parse_reply(&payload).map_err(|e| {
            server_message(&payload).map_or(RejectReason::BadData(e.to_string()), RejectReason::Mismatch)
        })?;
        judge(&reply)?;
    }
    Ok(())
}

/// Sends `request` with `msg_id` and returns its reply's payload; frames
/// with other ids are skipped. A closed or broken connection is `Unreachable`.
async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    decoder: &mut FrameDecoder,
    msg_id: u32,
    request: &Request,
) -> Result<bytes::Bytes, RejectReason> {
    let lost = |e: &dyn std::fmt::Display| {
        tracing::debug!(error = %e, "probe connection lost");
        RejectReason::Unreachable
    };
    let mut wire = Vec::new();
    request.encode_frame(msg_id, &mut wire).map_err(|e| RejectReason::BadData(e.to_string()))?;
    stream.write_all(&wire).await.map_err(|e| lost(&e))?;
    let mut buf = vec![0u8; 16 * 1024];
    // Bounded: the decoder's staging is bounded, and every turn reads bytes
    // or ends (a closed connection reads 0).
    loop {
        while let Some(frame) = decoder.next_frame().map_err(|e| RejectReason::BadData(e.to_string()))? {
            if frame.header.msg_id == msg_id && frame.header.msg_type == request.msg_type() {
                return Ok(frame.payload);
            }
        }
        let room = decoder.staging_room().min(buf.len());
        if room == 0 {
            return Err(RejectReason::BadData("reply larger than the decoder stages".into()));
        }
        let n = stream.read(&mut buf[..room]).await.map_err(|e| lost(&e))?;
        if n == 0 {
            return Err(lost(&"closed by the server"));
        }
        decoder.feed(&buf[..n]).map_err(|e| RejectReason::BadData(e.to_string()))?;
    }
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

/// Probes `candidates` (with `queries`, as [`probe`] does), applies the
/// round to what `store` holds (read after the probe, so the freshest file
/// wins) and saves the result atomically.
pub async fn probe_and_save<C: Connector>(
    connector: Arc<C>,
    candidates: &[Endpoint],
    concurrency: usize,
    timeout: Duration,
    queries: Option<&[Request]>,
    store: Option<&super::RankingStore>,
) -> Round {
    let results = probe(connector, candidates, concurrency, timeout, queries).await;
    let mut ranking = store.map_or_else(super::Ranking::new, super::RankingStore::load);
    ranking.apply_probe(&results, super::unix_ms_now());
    let saved = store.map_or(Ok(()), |s| s.save(&ranking));
    Round { results, ranking, saved }
}
