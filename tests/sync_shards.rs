//! `tdx sync --shard I/N` in N processes at once, then `--merge-manifests`,
//! against the embedded exchange: the store equals one unsharded sync's,
//! file by file and manifest entry by manifest entry, on a first download
//! and on the next day's update; each shard holds exactly the securities
//! the documented hash gives it; a shard run again resumes from its own
//! fragment; a merge with a shard missing writes nothing.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

mod store_files;
use store_files::files;

const N: u32 = 3;
/// A stock, an index and a fund per market (every shard of three gets two
/// or more), two periods, and every per-security file kind a shard writes.
const ARGS: [&str; 8] = [
    "--codes",
    "sz000001,sz399001,sz159915,sh000001,sh510300,sh600000,bj430047,bj899050",
    "--periods",
    "day,5m",
    "--with",
    "xdxr",
    "--views",
    "qfq",
];

fn tdx(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tdx"));
    cmd.args(args).env("TDX_ENGINE_LOOPBACK_ONLY", "1").env_remove("RUST_LOG");
    cmd
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tdx-shards-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn sync_args<'a>(dir: &'a Path, as_of: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut all = vec!["--local", "--as-of", as_of, "-o", "json", "sync", "--out", dir.to_str().unwrap()];
    all.extend(ARGS);
    all.extend(extra);
    all
}

fn must(args: &[&str], out: Output) -> Value {
    assert!(out.status.success(), "tdx {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("a JSON summary")
}

/// The N shards of a sync, as N processes running at once.
fn sharded_sync(dir: &Path, as_of: &str) -> Vec<Value> {
    let specs: Vec<String> = (0..N).map(|i| format!("{i}/{N}")).collect();
    let children: Vec<_> = specs
        .iter()
        .map(|spec| {
            let args = sync_args(dir, as_of, &["--shard", spec]);
            let mut cmd = tdx(&args);
            let child = cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn();
            (args.iter().map(|s| s.to_string()).collect::<Vec<_>>(), child.expect("tdx starts"))
        })
        .collect();
    children
        .into_iter()
        .map(|(args, child)| {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            must(&args, child.wait_with_output().unwrap())
        })
        .collect()
}

fn merge(dir: &Path) -> Output {
    tdx(&["-o", "json", "sync", "--out", dir.to_str().unwrap(), "--merge-manifests"]).output().unwrap()
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The split as docs/SYNC.md defines it, computed here independently.
fn shard_of(code: &str) -> u32 {
    let h = code.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    (h % u64::from(N)) as u32
}

fn assert_same_store(sharded: &Path, whole: &Path) {
    let (fs, fw) = (files(sharded), files(whole));
    assert!(!fs.keys().any(|k| k.starts_with("shards/") || k.contains(".tmp-")), "fragments or temporaries left");
    assert_eq!(fs.keys().collect::<Vec<_>>(), fw.keys().collect::<Vec<_>>());
    for (name, bytes) in &fw {
        assert!(fs[name] == *bytes, "{name} differs from the unsharded sync's");
    }
    assert_eq!(json(&sharded.join("manifest.json")), json(&whole.join("manifest.json")));
}

#[test]
fn three_shards_and_a_merge_equal_one_unsharded_sync() {
    let (sharded, whole) = (scratch("sharded"), scratch("whole"));
    let day1 = must(&[], tdx(&sync_args(&whole, "20261127", &[])).output().unwrap());
    assert_eq!(day1["failed"], serde_json::json!([]), "{day1}");
    let summaries = sharded_sync(&sharded, "20261127");
    assert!(!sharded.join("manifest.json").exists(), "a shard wrote the store's manifest");
    // Each fragment holds exactly the securities the hash gives its shard.
    let listed: BTreeSet<String> = json(&whole.join("manifest.json"))["corporate"]
        .as_object()
        .unwrap()
        .keys()
        .chain(json(&whole.join("manifest.json"))["bars"].as_object().unwrap().keys())
        .map(|k| k.rsplit('/').next().unwrap().to_owned())
        .collect();
    let mut seen = BTreeSet::new();
    for i in 0..N {
        let fragment = json(&sharded.join(format!("shards/{i}-of-{N}.json")));
        assert_eq!(fragment["shard"], serde_json::json!({"index": i, "count": N}));
        let codes: BTreeSet<String> = fragment["manifest"]["bars"]
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.rsplit('/').next().unwrap().to_owned())
            .collect();
        assert!(!codes.is_empty(), "shard {i} got no security");
        for code in &codes {
            assert_eq!(shard_of(code), i, "{code} in shard {i}");
            assert!(seen.insert(code.clone()), "{code} in two shards");
        }
        assert_eq!(summaries[i as usize]["securities"], codes.len(), "shard {i}");
    }
    assert_eq!(seen, listed, "the shards together hold every security");
    let merged = must(&[], merge(&sharded));
    assert_eq!(merged["merged_shards"], N);
    assert_same_store(&sharded, &whole);
    // The next day: an update of each shard against the merged manifest.
    let day2 = must(&[], tdx(&sync_args(&whole, "20261130", &[])).output().unwrap());
    let updates = sharded_sync(&sharded, "20261130");
    for period in ["day", "5m"] {
        let new: u64 = updates.iter().map(|u| u["periods"][period]["new_bars"].as_u64().unwrap()).sum();
        assert!(new > 0, "{period}: the next day brought no bars");
        assert_eq!(new, day2["periods"][period]["new_bars"].as_u64().unwrap(), "{period}: fetched once, not again");
    }
    must(&[], merge(&sharded));
    assert_same_store(&sharded, &whole);
    for dir in [sharded, whole] {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[test]
fn a_merge_with_a_shard_missing_writes_nothing() {
    let dir = scratch("missing");
    let args = sync_args(&dir, "20261127", &["--shard", "1/3"]);
    let first = must(&args, tdx(&args).output().unwrap());
    assert!(first["factor_files_written"].as_u64() > Some(0), "{first}");
    // Run again before any merge: the shard resumes from its own fragment
    // (checksums and corporate actions), so nothing is written again.
    let again = must(&args, tdx(&args).output().unwrap());
    assert_eq!(again["factor_files_written"], 0, "{again}");
    assert_eq!(again["view_files_written"], 0, "{again}");
    assert_eq!(again["periods"]["day"]["files_written"], 0, "{again}");
    let out = merge(&dir);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("[0, 2]"), "{stderr}");
    assert!(!dir.join("manifest.json").exists(), "a manifest from a partial split");
    assert!(dir.join("shards/1-of-3.json").exists(), "the finished shard's fragment was lost");
    // One file of every stock has no shard: refused before any server is asked.
    let finance = tdx(&["-o", "json", "sync", "--out", dir.to_str().unwrap(), "--with", "finance", "--shard", "0/3"])
        .output()
        .unwrap();
    assert_eq!(finance.status.code(), Some(2), "{}", String::from_utf8_lossy(&finance.stderr));
    let bad = tdx(&["sync", "--out", dir.to_str().unwrap(), "--shard", "3/3"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    std::fs::remove_dir_all(dir).unwrap();
}
