#!/usr/bin/env bash
# The debug build every script here runs from: target/debug/tdx, tdx-sim,
# the examples and every test binary, in the one command `cargo test` itself
# resolves (docs/decisions/0011-ci-build-profiles.md). Cargo unifies features
# per invocation, so `cargo build -p tdx -p tdx-sim` alone gave parquet,
# axum, reqwest, object_store and the workspace's crates other features
# than the test build, and CI built them twice; run after ci/run.sh's own
# debug build, this is a no-op.
set -euo pipefail
cd "$(dirname "$0")/.."
# ci/run.sh has built it, and runs the scripts that call this beside other
# builds: a second cargo would wait for the target dir's lock, which the
# consumer crate's build (ci/consumer.sh) holds for minutes.
[ "${TDX_DEBUG_BUILT:-}" != 1 ] || exit 0
cargo test --workspace --locked --no-run --quiet
