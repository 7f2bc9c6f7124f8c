//! Ranking on loopback only: probes of reachable and closed ports with a
//! concurrency bound, and crash safety against a writer killed mid-write.
//! The bundled (real) server list is never contacted.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tdx_engine::ranking::{probe, Ranking, RankingStore};
use tdx_engine::runtime::connector::{Connector, TcpConnector};
use tdx_engine::supervisor::Endpoint;

/// Counts connects in flight, so the test can see the concurrency bound.
struct Counting {
    inner: TcpConnector,
    in_flight: AtomicUsize,
    peak: AtomicUsize,
}

impl Connector for Counting {
    type Stream = tdx_engine::runtime::connector::TcpConn;
    async fn connect(&self, endpoint: &Endpoint, timeout: Duration) -> std::io::Result<Self::Stream> {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(20)).await;
        let result = self.inner.connect(endpoint, timeout).await;
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        result
    }
}

#[tokio::test]
async fn probes_rank_reachable_servers_first_within_the_bound() {
    let mut listeners = Vec::new();
    let mut candidates = Vec::new();
    for _ in 0..5 {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        candidates.push(l.local_addr().unwrap().to_string().parse().unwrap());
        listeners.push(l);
    }
    // Two closed ports: bound, then released.
    for _ in 0..2 {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        candidates.insert(0, l.local_addr().unwrap().to_string().parse().unwrap());
    }
    let connector = Arc::new(Counting {
        inner: TcpConnector::default(),
        in_flight: AtomicUsize::new(0),
        peak: AtomicUsize::new(0),
    });
    let results = probe(connector.clone(), &candidates, 3, Duration::from_secs(2), None).await;
    assert_eq!(results.len(), 7);
    assert!(connector.peak.load(Ordering::SeqCst) <= 3, "concurrency bound");
    assert_eq!(results.iter().filter(|r| r.latency.is_some()).count(), 5);
    assert!(results[..2].iter().all(|r| r.latency.is_none()), "closed ports fail");
    let mut ranking = Ranking::new();
    ranking.apply_probe(&results, 1);
    let ranked = ranking.ranked();
    assert!(ranked[..5].iter().all(|e| !candidates[..2].contains(e)), "reachable servers rank first: {ranked:?}");
    assert_eq!(&ranked[5..], &candidates[..2]);
    drop(listeners);
}

const CHILD_ENV: &str = "TDX_RANKING_CHILD_PATH";

/// Not a test on its own: the body of the child process that
/// `a_writer_killed_mid_write_leaves_a_valid_file` spawns (with
/// `--ignored`) and kills. Ignored, so an ordinary run neither runs nor
/// counts it.
#[test]
#[ignore = "the child process of a_writer_killed_mid_write_leaves_a_valid_file"]
fn child_writer() {
    let path = std::env::var_os(CHILD_ENV).expect("run only as the child of the kill test");
    let store = RankingStore::at(std::path::PathBuf::from(path));
    let rankings = [ranking(&[1, 2, 3, 4, 5, 6, 7, 8]), ranking(&[8, 7, 6, 5, 4, 3, 2, 1])];
    for i in 0.. {
        store.save(&rankings[i % 2]).unwrap();
    }
}

fn ranking(order: &[u16]) -> Ranking {
    let results: Vec<_> = order
        .iter()
        .enumerate()
        .map(|(i, p)| tdx_engine::ranking::ProbeResult {
            endpoint: format!("127.0.0.1:{p}").parse().unwrap(),
            latency: Some(Duration::from_millis(1 + i as u64)),
            rejected: None,
        })
        .collect();
    let mut r = Ranking::new();
    r.apply_probe(&results, 7);
    r
}

/// Why: a process killed at any moment of a save leaves the old or the new
/// ranking, never a broken file.
#[test]
fn a_writer_killed_mid_write_leaves_a_valid_file() {
    let dir = std::env::temp_dir().join(format!("tdx-ranking-kill-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ranking.json");
    let valid = [ranking(&[1, 2, 3, 4, 5, 6, 7, 8]), ranking(&[8, 7, 6, 5, 4, 3, 2, 1])];
    for round in 0..5u64 {
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "child_writer", "--ignored", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, &path)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(150 + 37 * round));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(path.exists(), "round {round}: the child saved before it was killed");
        let loaded = RankingStore::at(&path).load();
        assert!(valid.contains(&loaded), "round {round}: a broken file after the kill: {loaded:?}");
    }
    let _ = std::fs::remove_dir_all(dir);
}
