#!/usr/bin/env bash
# The test kit as a library consumer meets it: a new crate outside the
# workspace, in a temp dir, with path dependencies on tdx-sim and
# tdx-engine, writes a short fault test, runs it, and replays the seed a
# failure printed with the command it printed.
#
# Build cost: the crate copies the workspace's Cargo.lock (same dependency
# versions) and profile settings, and builds into the workspace's target
# dir (CARGO_TARGET_DIR=target), so the registry dependencies already built
# there are reused; tdx-engine and tdx-sim build again when the consumer's
# feature set differs from the workspace's (about a minute in debug).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/tests"

cat >"$dir/Cargo.toml" <<EOF
[package]
name = "kit-consumer"
version = "0.0.0"
edition = "2021"
publish = false

[dev-dependencies]
tdx-engine = { path = "$root/engine" }
tdx-sim = { path = "$root/sim" }
tokio = { version = "1", features = ["rt", "macros", "time"] }

# As the guide advises (and as the workspace builds them, so the builds are shared).
[profile.dev.package.tdx-sim]
opt-level = 2
[profile.dev.package.tdx-engine]
opt-level = 1
[profile.dev.package.turmoil]
opt-level = 2
[profile.dev.package.tokio]
opt-level = 2
[profile.dev.package.encoding_rs]
opt-level = 2
EOF
cp Cargo.lock "$dir/Cargo.lock"

cat >"$dir/tests/faults.rs" <<'EOF'
use std::time::Duration;
use tdx_engine::proto::commands::{Adjust, Period};
use tdx_engine::proto::SecurityCode;
use tdx_sim::testkit::{FaultKind, SimExchange};

/// A downloader that gives up at its first error: under faults it must fail.
async fn fetch(client: tdx_engine::Client, codes: Vec<SecurityCode>) -> Result<(), String> {
    for code in codes {
        client.all_bars(code, Period::Day, Adjust::None, Some(10)).await.map_err(|e| format!("{code}: {e}"))?;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    Ok(())
}

#[test]
fn downloader_survives_faults() {
    let codes: Vec<SecurityCode> = ["sz000001", "sh600000", "bj430047"].iter().map(|c| c.parse().unwrap()).collect();
    SimExchange::builder()
        .servers(2)
        .fault(1, FaultKind::Garbage { per_mille: 50 })
        .swarm(Duration::from_secs(2))
        .sweep(0..30, move |client| fetch(client, codes.clone()));
}
EOF

export CARGO_TARGET_DIR="$root/target"
cd "$dir"
echo "consumer crate in $dir: $(wc -l <tests/faults.rs) lines of test"
set +e
cargo test --quiet --test faults >"$dir/first.log" 2>&1
status=$?
set -e
if [ "$status" = 0 ]; then
    cat "$dir/first.log"
    echo "consumer: the naive downloader passed every seed; the kit caught nothing" >&2
    exit 1
fi
failed="$(grep -m1 -oE 'seed [0-9]+ failed: .*' "$dir/first.log" || true)"
hash="$(grep -m1 -E '^trace-hash: ' "$dir/first.log" || true)"
replay="$(grep -m1 -E '^replay: ' "$dir/first.log" | sed 's/^replay: //' || true)"
if [ -z "$failed" ] || [ -z "$replay" ]; then
    tail -n 40 "$dir/first.log"
    echo "consumer: the test failed without printing a seed and a replay command" >&2
    exit 1
fi
echo "caught: $failed"
echo "replay: $replay"
set +e
bash -c "$replay" >"$dir/replay.log" 2>&1
status=$?
set -e
if [ "$status" = 0 ] || ! grep -qF "$failed" "$dir/replay.log" || ! grep -qxF "$hash" "$dir/replay.log"; then
    tail -n 40 "$dir/replay.log"
    echo "consumer: the replay did not fail the same way ($failed, $hash)" >&2
    exit 1
fi
echo "replayed: the same failure, $hash"
