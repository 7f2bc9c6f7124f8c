//! Server ranking: the bundled candidate list, the per-user ranking file,
//! and probe rounds that measure TCP connect latency.
//!
//! The ranking file (`ranking.json`, schema-versioned JSON) lives in
//! `$TDX_ENGINE_DATA_DIR` or the platform data directory under
//! `tdx-engine/`. It records, per server and in rank order, the last
//! latency, the last probe and last success times, and consecutive
//! failures. Writes are atomic (temp file in the same directory, fsync,
//! rename, directory fsync): a crash leaves the old file or the new one. A
//! corrupt file is ignored with a warning and rebuilt. A probe round where
//! every server fails updates failure counts but keeps the last good order
//! and success times, so a bad network day never erases a good ranking.
//!
//! Nothing here connects anywhere by itself: probes go where they are told.
//! Tests probe loopback servers only; the bundled list is for users who ask
//! for real servers.

mod probe;
mod store;

pub use probe::{probe, probe_and_save, ProbeResult, Round};
pub use store::{engine_data_dir, RankingStore, SaveStep, DATA_DIR_ENV};

use serde::{Deserialize, Serialize};

use crate::supervisor::{Endpoint, RejectReason};

/// Version of the ranking file's schema.
pub const SCHEMA_VERSION: u32 = 1;

/// The bundled candidates: public TDX 7709 servers (from eltdx 3.3.0).
/// Used only when a user asks for real servers; never by tests or CI.
const BUNDLED_HOSTS: &str = include_str!("hosts.json");
/// Public servers of TDX's MAC channel (eltdx 3.3.0, from easy_tdx).
const BUNDLED_MAC_HOSTS: &str = include_str!("mac-hosts.json");
/// Public 7709 servers that answer money flow (eltdx 3.3.0).
const BUNDLED_MONEY_FLOW_HOSTS: &str = include_str!("money-flow-hosts.json");
/// Public 7727 extended-market servers (eltdx 3.3.0).
const BUNDLED_EX_HOSTS: &str = include_str!("ex-hosts.json");

/// The bundled 7709 candidate list, in its own order.
pub fn bundled_candidates() -> Vec<Endpoint> {
    parse_bundled(BUNDLED_HOSTS)
}

/// The bundled MAC-channel candidates, in their own order.
pub fn bundled_mac_candidates() -> Vec<Endpoint> {
    parse_bundled(BUNDLED_MAC_HOSTS)
}

/// The bundled money-flow candidates, in their own order.
pub fn bundled_money_flow_candidates() -> Vec<Endpoint> {
    parse_bundled(BUNDLED_MONEY_FLOW_HOSTS)
}

/// The bundled 7727 extended-market candidates, in their own order.
pub fn bundled_ex_candidates() -> Vec<Endpoint> {
    parse_bundled(BUNDLED_EX_HOSTS)
}

fn parse_bundled(json: &str) -> Vec<Endpoint> {
    #[derive(Deserialize)]
    struct Bundled {
        hosts: Vec<String>,
    }
    let bundled: Bundled = serde_json::from_str(json).expect("a bundled host list is valid JSON");
    bundled.hosts.iter().filter_map(|h| h.parse().ok()).collect()
}

/// Wall-clock milliseconds since the Unix epoch, for the ranking's records.
pub fn unix_ms_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// One server's record in the ranking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerRecord {
    /// `HOST:PORT`.
    pub host: String,
    /// Connect latency of the last successful probe, in microseconds
    /// (an integer, so the file round-trips exactly).
    pub last_latency_us: Option<u64>,
    /// When it was last probed (Unix milliseconds).
    pub last_probe_unix_ms: Option<u64>,
    /// When a probe last succeeded (Unix milliseconds).
    pub last_success_unix_ms: Option<u64>,
    /// Probes failed since the last success.
    pub consecutive_failures: u32,
    /// Why the last probe found it unusable; `None` when it passed (or was
    /// never probed). Absent in files written before data probes.
    #[serde(default)]
    pub rejected: Option<RejectReason>,
}

impl ServerRecord {
    fn new(host: String) -> Self {
        Self {
            host,
            last_latency_us: None,
            last_probe_unix_ms: None,
            last_success_unix_ms: None,
            consecutive_failures: 0,
            rejected: None,
        }
    }
}

/// The ranking: servers best first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ranking {
    /// Always [`SCHEMA_VERSION`] when written by this crate.
    pub schema_version: u32,
    /// Servers in rank order.
    pub servers: Vec<ServerRecord>,
}

impl Ranking {
    /// An empty ranking.
    pub fn new() -> Self {
        Self { schema_version: SCHEMA_VERSION, servers: Vec::new() }
    }

    /// Adds candidates the ranking does not know yet, after the known ones.
    pub fn merge_candidates(&mut self, candidates: &[Endpoint]) {
        for c in candidates {
            let host = c.to_string();
            if !self.servers.iter().any(|s| s.host == host) {
                self.servers.push(ServerRecord::new(host));
            }
        }
    }

    /// Folds one probe round in. Good servers move to the front by
    /// latency; unreachable and rejected ones keep their relative order
    /// behind them, with the reason. A round where every probe failed only
    /// counts the failures: the order and the success times stay as they were.
    pub fn apply_probe(&mut self, results: &[ProbeResult], now_unix_ms: u64) {
        self.merge_candidates(&results.iter().map(|r| r.endpoint.clone()).collect::<Vec<_>>());
        let any_success = results.iter().any(ProbeResult::is_good);
        for r in results {
            let host = r.endpoint.to_string();
            let Some(record) = self.servers.iter_mut().find(|s| s.host == host) else { continue };
            record.last_probe_unix_ms = Some(now_unix_ms);
            if let Some(latency) = r.latency {
                record.last_latency_us = Some(u64::try_from(latency.as_micros()).unwrap_or(u64::MAX));
            }
            record.rejected = r.rejected.clone();
            if r.is_good() {
                record.last_success_unix_ms = Some(now_unix_ms);
                record.consecutive_failures = 0;
            } else {
                record.consecutive_failures = record.consecutive_failures.saturating_add(1);
            }
        }
        if !any_success {
            return;
        }
        let probed_ok = |s: &ServerRecord| s.consecutive_failures == 0 && s.last_latency_us.is_some();
        // Stable: equal keys keep their order.
        self.servers.sort_by(|a, b| match (probed_ok(a), probed_ok(b)) {
            (true, true) => a.last_latency_us.unwrap_or(u64::MAX).cmp(&b.last_latency_us.unwrap_or(u64::MAX)),
            (true, false) => std::cmp::Ordering::Less,
            (false, true) => std::cmp::Ordering::Greater,
            (false, false) => std::cmp::Ordering::Equal,
        });
    }

    /// Endpoints in rank order.
    pub fn ranked(&self) -> Vec<Endpoint> {
        self.servers.iter().filter_map(|s| s.host.parse().ok()).collect()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn result(host: &str, ms: Option<u64>) -> ProbeResult {
        let rejected = ms.is_none().then_some(RejectReason::Unreachable);
        ProbeResult { endpoint: host.parse().unwrap(), latency: ms.map(Duration::from_millis), rejected }
    }

    #[test]
    fn bundled_list_has_the_43_candidates() {
        let c = bundled_candidates();
        assert_eq!(c.len(), 43);
        assert!(c.iter().all(|e| e.port == 7709));
    }

    #[test]
    fn bundled_ex_list_is_eltdxs_16_on_7727() {
        let c = bundled_ex_candidates();
        assert_eq!(c.len(), 16);
        assert!(c.iter().all(|e| e.port == 7727));
        // eltdx's one host measured answering instrument pages leads.
        assert_eq!(c[0].to_string(), "150.158.20.127:7727");
    }

    #[test]
    fn probes_order_by_latency_and_all_fail_keeps_the_order() {
        let mut r = Ranking::new();
        r.apply_probe(
            &[result("127.0.0.1:1", Some(30)), result("127.0.0.1:2", Some(10)), result("127.0.0.1:3", None)],
            1000,
        );
        let hosts: Vec<_> = r.servers.iter().map(|s| s.host.as_str()).collect();
        assert_eq!(hosts, ["127.0.0.1:2", "127.0.0.1:1", "127.0.0.1:3"]);
        let good = r.clone();
        r.apply_probe(&[result("127.0.0.1:1", None), result("127.0.0.1:2", None), result("127.0.0.1:3", None)], 2000);
        assert_eq!(r.ranked(), good.ranked(), "a round where everything fails keeps the order");
        for (now, before) in r.servers.iter().zip(&good.servers) {
            assert_eq!(now.last_success_unix_ms, before.last_success_unix_ms);
            assert_eq!(now.consecutive_failures, before.consecutive_failures + 1);
            assert_eq!(now.last_probe_unix_ms, Some(2000));
        }
        // A later good round moves the recovered server up again.
        r.apply_probe(&[result("127.0.0.1:3", Some(1))], 3000);
        assert_eq!(r.servers[0].host, "127.0.0.1:3");
    }
}
