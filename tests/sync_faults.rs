//! `tdx sync` under faults: killed with SIGKILL in each phase of a run
//! (downloading, writing a data file, writing the manifest) at moments
//! drawn from a seed, on a store that grows a day at a time; a full disk
//! and a read-only store; a damaged manifest and damaged Parquet files.
//! Every time, the store ends equal, file by file and row by row, to a
//! clean sync of the same market, and no temporary file is left.
//!
//! `TDX_FAULT_SEED=N` draws other kill moments (the default is fixed, so
//! CI runs one known plan); a failure names its seed.

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use arrow_array::RecordBatch;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::Value;

/// A stock, an index and a fund per market (every market seed lists them).
const CODES: &str = "sz000001,sz399001,sz159915,sh000001,sh510300,sh600000,bj430047,bj899050";
/// Day and week bars, a view, the raw capital changes and the finance
/// table: every kind of file the store writes.
const SYNC_ARGS: [&str; 8] = ["--codes", CODES, "--periods", "day,week", "--views", "qfq", "--with", "xdxr,finance"];
/// The embedded exchange's default today.
const LAST_DAY: &str = "20261127";

fn tdx(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tdx"));
    cmd.args(args).env("TDX_ENGINE_LOOPBACK_ONLY", "1").env_remove("RUST_LOG").env_remove("TDX_SYNC_STOP_AT");
    cmd
}

/// `tdx --local --as-of DAY -o json sync --out DIR ...` (not yet run).
fn sync_command(dir: &Path, day: &str) -> Command {
    let mut args = vec!["--local", "--as-of", day, "-o", "json", "sync", "--out", dir.to_str().unwrap()];
    args.extend(SYNC_ARGS);
    tdx(&args)
}

/// A sync that must succeed; its JSON summary.
fn sync_ok(dir: &Path, day: &str) -> Value {
    let out = sync_command(dir, day).output().expect("tdx runs");
    assert!(out.status.success(), "sync of {day} into {}: {}", dir.display(), String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("a JSON summary")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tdx-sync-faults-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    dir
}

/// Every file under `dir`: relative path -> bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.insert(path.strip_prefix(root).unwrap().display().to_string(), fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn temporaries(dir: &Path) -> Vec<String> {
    files(dir).into_keys().filter(|k| k.contains(".tmp-")).collect()
}

/// Every row of a Parquet file's bytes, as record batches.
fn rows(bytes: &[u8]) -> Vec<RecordBatch> {
    let bytes = bytes::Bytes::copy_from_slice(bytes);
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes).unwrap().build().unwrap();
    reader.map(|b| b.unwrap()).collect()
}

/// Same files; every Parquet file with the same rows; the same manifest.
fn assert_same_store(got: &Path, want: &Path, context: &str) {
    let (g, w) = (files(got), files(want));
    assert_eq!(g.keys().collect::<Vec<_>>(), w.keys().collect::<Vec<_>>(), "{context}: file lists differ");
    for (name, bytes) in &w {
        if name.ends_with(".parquet") {
            assert!(rows(&g[name]) == rows(bytes), "{context}: {name} has other rows than a clean sync");
        }
    }
    let manifest = |d: &Path| -> Value { serde_json::from_slice(&fs::read(d.join("manifest.json")).unwrap()).unwrap() };
    assert_eq!(manifest(got), manifest(want), "{context}: manifests differ");
}

/// A clean sync of `day`, made once per test binary and day.
fn clean(day: &str) -> PathBuf {
    static CLEAN: std::sync::Mutex<BTreeMap<String, PathBuf>> = std::sync::Mutex::new(BTreeMap::new());
    let mut made = CLEAN.lock().unwrap_or_else(|e| e.into_inner());
    made.entry(day.to_owned())
        .or_insert_with(|| {
            let dir = scratch(&format!("clean-{day}"));
            sync_ok(&dir, day);
            dir
        })
        .clone()
}

/// splitmix64: the kill plan's draws.
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `1..=n`.
    fn upto(&mut self, n: u64) -> u64 {
        1 + self.next() % n
    }
}

/// The trading days the embedded exchange can serve its market as of, up
/// to its today, oldest first.
fn trading_days() -> Vec<String> {
    let (first, _) = tdx_sim::testkit::LocalExchange::as_of_range();
    let last: tdx_engine::proto::Date = LAST_DAY.parse().unwrap();
    (first.days_since_epoch()..=last.days_since_epoch())
        // 1970-01-01 was a Thursday: weekdays are 0..5 counted from Monday.
        .filter(|days| (days + 3).rem_euclid(7) < 5)
        .filter_map(tdx_engine::proto::Date::from_days_since_epoch)
        .filter(|d| tdx_sim::Market::as_of(1, *d).is_ok())
        .map(|d| format!("{:08}", d.yyyymmdd()))
        .collect()
}

/// What one attempt ended as.
enum Ending {
    /// Stopped by the hook at the line it printed, then SIGKILLed.
    Killed(String),
    /// Ran to the end before reaching the armed point.
    Finished(Output),
}

/// Runs a sync of `day` stopped at `phase:n`, and kills it there.
fn run_and_kill(dir: &Path, day: &str, phase: &str, n: u64) -> Ending {
    let mut child = sync_command(dir, day)
        .env("TDX_SYNC_STOP_AT", format!("{phase}:{n}"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let stop = line.starts_with("sync test hook: stopped in");
            let _ = tx.send(line);
            if stop {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    loop {
        match rx.recv_timeout(Duration::from_secs(120)) {
            Ok(line) if line.starts_with("sync test hook: stopped in") => {
                child.kill().unwrap(); // SIGKILL
                child.wait().unwrap();
                return Ending::Killed(line);
            }
            Ok(line) => seen.push(line),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let status = child.wait().unwrap();
                let stderr = seen.join("\n").into_bytes();
                return Ending::Finished(Output { status, stdout: Vec::new(), stderr });
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                panic!("sync of {day} armed at {phase}:{n} neither stopped nor ended in 120 s: {seen:?}");
            }
        }
    }
}

/// At least ten SIGKILLs, a few in each phase, each at the Nth arrival
/// drawn from the seed, while the store is brought forward a trading day
/// per run; then one run to the end equals a clean sync.
#[test]
fn kills_in_every_phase_resume_to_the_clean_store() {
    let seed: u64 = std::env::var("TDX_FAULT_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(40);
    let mut draw = Draw(seed);
    let days = trading_days();
    // Four kills per phase, in an order drawn from the seed.
    let mut plan: Vec<&str> = ["download", "write", "manifest"].iter().flat_map(|p| [*p; 4]).collect();
    for i in (1..plan.len()).rev() {
        plan.swap(i, draw.next() as usize % (i + 1));
    }
    assert!(days.len() > plan.len(), "{} trading days for {} runs", days.len(), plan.len());
    let dir = scratch("kills");
    let mut kills: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, phase) in plan.iter().enumerate() {
        let day = &days[days.len() - 1 - plan.len() + i];
        // Every run of a new day asks at least a page per series (16) and
        // rewrites every bars and view file (32); the manifest is written
        // at least at the end.
        let n = match *phase {
            "download" => draw.upto(16),
            "write" => draw.upto(32),
            _ => 1,
        };
        let context = format!("seed {seed}, run {i} ({day}, {phase}:{n})");
        match run_and_kill(&dir, day, phase, n) {
            Ending::Killed(line) => {
                eprintln!("{context}: {line}");
                assert!(line.contains(&format!("stopped in {phase} #{n}")), "{context}: {line}");
                if *phase != "download" {
                    // Killed halfway through a temporary copy: it is still there.
                    let left = temporaries(&dir);
                    assert!(!left.is_empty(), "{context}: killed mid-write but no temporary file: {line}");
                    if *phase == "manifest" {
                        assert!(left.iter().any(|t| t.contains(".manifest.json.tmp-")), "{context}: {left:?}");
                    }
                }
                *kills.entry(phase).or_default() += 1;
            }
            Ending::Finished(out) => panic!(
                "{context}: the run ended before the armed point ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ),
        }
    }
    assert!(kills.values().sum::<usize>() >= 10 && kills.len() == 3, "seed {seed}: kills {kills:?}");
    let last = sync_ok(&dir, LAST_DAY);
    assert_eq!(last["failed"], serde_json::json!([]), "{last}");
    assert_eq!(temporaries(&dir), Vec::<String>::new(), "seed {seed}: temporaries left");
    assert_same_store(&dir, &clean(LAST_DAY), &format!("seed {seed} after kills {kills:?}"));
    fs::remove_dir_all(dir).unwrap();
}

/// A small filesystem for one test, unmounted when dropped: a tmpfs when
/// this process may mount (root, as CI runs), else a plain directory.
struct Disk {
    dir: PathBuf,
    mounted: bool,
}

impl Disk {
    fn new(name: &str, bytes: usize) -> Self {
        let dir = scratch(name);
        fs::create_dir_all(&dir).unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs", dir.to_str().unwrap()])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        Self { dir, mounted }
    }

    fn remount(&self, options: &str) {
        let status = Command::new("mount").args(["-o", options, self.dir.to_str().unwrap()]).status().unwrap();
        assert!(status.success(), "mount -o {options}");
    }
}

impl Drop for Disk {
    fn drop(&mut self) {
        if self.mounted {
            let _ = Command::new("umount").arg(&self.dir).status();
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// The one line a failed run prints on stderr.
fn one_line(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line on stderr: {stderr}");
    lines[0].to_owned()
}

/// After a failed run every file is whole: the one it had (`before`) or
/// the one a clean sync of the new day has, row for row.
fn assert_whole(dir: &Path, before: &BTreeMap<String, Vec<u8>>, after: &Path) {
    let now = files(dir);
    let new = files(after);
    assert!(temporaries(dir).is_empty(), "temporaries left: {:?}", temporaries(dir));
    let manifest: Value = serde_json::from_slice(&now["manifest.json"]).expect("the manifest still parses");
    assert!(manifest["bars"].is_object());
    for (name, bytes) in &now {
        if !name.ends_with(".parquet") {
            continue;
        }
        let r = rows(bytes);
        let old = before.get(name).is_some_and(|b| rows(b) == r);
        let clean = new.get(name).is_some_and(|b| rows(b) == r);
        assert!(old || clean, "{name} is neither its last complete state nor the new one");
    }
}

/// A full disk: one line naming the file, exit 1, the store whole; the
/// next run with space finishes it. On a tmpfs when the test may mount
/// one; else under RLIMIT_FSIZE (a file larger than the limit fails with
/// EFBIG, SIGXFSZ ignored as the shell's `trap` leaves it).
#[test]
fn a_full_disk_fails_in_one_line_and_the_next_run_finishes() {
    let (days, last) = (trading_days(), LAST_DAY);
    let before_day = &days[days.len() - 3];
    let disk = Disk::new("full", 8 << 20);
    let dir = disk.dir.join("store");
    sync_ok(&dir, before_day);
    let before = files(&dir);
    let out = if disk.mounted {
        // Fill all but 40 KB: less than any day bars file.
        let free = fs2_free(&disk.dir);
        fs::write(disk.dir.join("filler"), vec![0u8; free.saturating_sub(40 << 10) as usize]).unwrap();
        sync_command(&dir, last).output().unwrap()
    } else {
        let mut cmd = Command::new("bash");
        let program = env!("CARGO_BIN_EXE_tdx");
        let mut line = format!(
            "trap '' XFSZ; ulimit -f 40; exec {program} --local --as-of {last} -o json sync --out {}",
            dir.display()
        );
        for a in SYNC_ARGS {
            line.push_str(&format!(" {a}"));
        }
        cmd.args(["-c", &line]).env("TDX_ENGINE_LOOPBACK_ONLY", "1").env_remove("TDX_SYNC_STOP_AT");
        cmd.output().unwrap()
    };
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let line = one_line(&out);
    eprintln!("full disk ({}): {line}", if disk.mounted { "tmpfs" } else { "RLIMIT_FSIZE" });
    assert!(line.contains(dir.to_str().unwrap()) && line.contains(".parquet"), "names the file: {line}");
    assert!(line.contains("No space left on device") || line.contains("File too large"), "{line}");
    assert_whole(&dir, &before, &clean(last));
    let _ = fs::remove_file(disk.dir.join("filler"));
    sync_ok(&dir, last);
    assert_same_store(&dir, &clean(last), "after the disk had room again");
}

/// Free bytes of the filesystem holding `dir` (`df`'s available column).
fn fs2_free(dir: &Path) -> u64 {
    let out = Command::new("df").args(["-B1", "--output=avail"]).arg(dir).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .nth(1)
        .and_then(|l| l.trim().parse().ok())
        .expect("df prints the free bytes")
}

/// A read-only store: one line naming the path, exit 1, nothing changed;
/// writable again, the next run finishes it.
#[test]
fn a_read_only_store_fails_in_one_line_and_is_left_as_it_was() {
    let (days, last) = (trading_days(), LAST_DAY);
    let before_day = &days[days.len() - 2];
    let disk = Disk::new("read-only", 16 << 20);
    let dir = disk.dir.join("store");
    sync_ok(&dir, before_day);
    let before = files(&dir);
    let root = is_root();
    if disk.mounted {
        disk.remount("remount,ro");
    } else if !root {
        set_read_only(&dir, true);
    } else {
        eprintln!("skipped: root cannot be refused a write without a mount, and this process may not mount");
        return;
    }
    let out = sync_command(&dir, last).output().unwrap();
    if disk.mounted {
        disk.remount("remount,rw");
    } else {
        set_read_only(&dir, false);
    }
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let line = one_line(&out);
    eprintln!("read-only store: {line}");
    assert!(line.contains(dir.to_str().unwrap()), "names the path: {line}");
    assert!(line.contains("Read-only file system") || line.contains("Permission denied"), "{line}");
    assert_eq!(files(&dir), before, "a refused run changes nothing");
    sync_ok(&dir, last);
    assert_same_store(&dir, &clean(last), "after the store was writable again");
}

/// True when running as root (`id -u` prints 0).
fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}

fn set_read_only(dir: &Path, read_only: bool) {
    let mode = if read_only { "a-w" } else { "u+w" };
    assert!(Command::new("chmod").args(["-R", mode]).arg(dir).status().unwrap().success());
}

/// A truncated manifest, one of garbage, one of a newer schema: the first
/// two are rebuilt from the files (a warning names the file) and the store
/// ends as a clean sync; the last is refused in one line, nothing touched.
#[test]
fn a_damaged_manifest_is_rebuilt_and_a_newer_one_refused() {
    let dir = scratch("manifest");
    sync_ok(&dir, LAST_DAY);
    let path = dir.join("manifest.json");
    let good = fs::read(&path).unwrap();
    let damaged: [(&str, Vec<u8>); 3] = [
        ("truncated", good[..good.len() / 2].to_vec()),
        ("garbage", b"\x00\xff\x1b[2J not json at all".to_vec()),
        ("foreign", br#"{"schema_version":1,"bars":{"day/sz000001":{"file":"../../outside.parquet","rows":1,"first":"","last":"","bytes":1}},"corporate":{}}"#.to_vec()),
    ];
    for (what, bytes) in damaged {
        fs::write(&path, bytes).unwrap();
        let out = sync_command(&dir, LAST_DAY).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{what}: {stderr}");
        assert!(stderr.contains("manifest.json") && stderr.contains("rebuilding"), "{what}: {stderr}");
        assert!(!stderr.contains('\u{1b}'), "{what}: an escape reached stderr: {stderr:?}");
        assert_same_store(&dir, &clean(LAST_DAY), what);
    }
    let newer = String::from_utf8(good).unwrap().replace("\"schema_version\": 1", "\"schema_version\": 7");
    fs::write(&path, &newer).unwrap();
    let before = files(&dir);
    let out = sync_command(&dir, LAST_DAY).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let line = one_line(&out);
    assert!(line.contains("manifest.json") && line.contains("upgrade"), "{line}");
    assert_eq!(files(&dir), before, "a newer store is left alone");
    fs::remove_dir_all(dir).unwrap();
}

/// A bars file with a flipped byte, a view cut short, a factors file
/// gone, and a bars file with its footer cut while the manifest holds no
/// checksums (written before them): each is downloaded or written again,
/// a warning names it, and the store ends as a clean sync.
#[test]
fn damaged_parquet_files_are_downloaded_again() {
    let dir = scratch("parquet");
    sync_ok(&dir, LAST_DAY);
    let bars = dir.join("bars/period=day/market=sz/sz000001.parquet");
    let view = dir.join("bars_qfq/period=day/market=sh/sh600000.parquet");
    let factors = dir.join("factors/market=sz/sz000001.parquet");
    let mut bytes = fs::read(&bars).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x10;
    fs::write(&bars, bytes).unwrap();
    let cut = fs::read(&view).unwrap();
    fs::write(&view, &cut[..cut.len() / 3]).unwrap();
    fs::remove_file(&factors).unwrap();
    let out = sync_command(&dir, LAST_DAY).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["files_repaired"], 2, "{summary} {stderr}");
    assert!(stderr.contains("sz000001.parquet") && stderr.contains("sh600000.parquet"), "{stderr}");
    assert_same_store(&dir, &clean(LAST_DAY), "after a flipped byte, a cut view and a lost factors file");

    // A manifest from before checksums: a file cut short no longer decodes.
    let path = dir.join("manifest.json");
    let mut manifest: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    for entry in manifest["bars"].as_object_mut().unwrap().values_mut() {
        entry.as_object_mut().unwrap().remove("checksum");
    }
    manifest.as_object_mut().unwrap().remove("files");
    fs::write(&path, serde_json::to_vec_pretty(&manifest).unwrap()).unwrap();
    let bytes = fs::read(&bars).unwrap();
    fs::write(&bars, &bytes[..bytes.len() - 5]).unwrap();
    let out = sync_command(&dir, LAST_DAY).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("sz000001.parquet"), "{stderr}");
    assert_same_store(&dir, &clean(LAST_DAY), "after a cut file under a manifest without checksums");
    fs::remove_dir_all(dir).unwrap();
}
