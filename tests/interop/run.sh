#!/usr/bin/env bash
# Interop tests: pytdx 1.72, eltdx 3.3.0 and tdxrs 0.6.7, unchanged, against `tdx-sim serve`
# (and its --ex-port extended market, EX and MAC-EX)
# (and eltdx's F10 client against `tdx-sim serve-f10`),
# and `tdx sync`'s Parquet store read back by pyarrow 26.0.1, and the TDX
# client's files (`tdx export`, `tdx import`, `tdx-sim tdx-dir`) through
# pytdx's, mootdx 0.11.7's, tdxrs's and eltdx's file readers and writers,
# on loopback. Creates a venv under target/ and installs the pinned clients,
# builds tdx-sim, then runs the servers and the clients inside a fresh
# network namespace with only loopback up. Both clients get explicit
# 127.0.0.1 hosts only; eltdx probing is off and its data directory (and
# HOME) point into a temp dir.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=tests/interop/lib.sh
source tests/interop/lib.sh

SEED="${INTEROP_SEED:-7}"
SERVERS=3

[ "${TDX_LOOPBACK_NETNS:-}" = 1 ] || bash ci/debug-build.sh
loopback_only "$0" "$@"
make_scratch
SIM="$(pwd)/target/debug/tdx-sim"

start_sim "$SIM" "$SERVERS" "$SEED"
ports="$(echo "$hosts" | sed "s/127\.0\.0\.1://g")"

mkdir -p "$scratch/home" "$scratch/eltdx"
HOME="$scratch/home" XDG_DATA_HOME="$scratch/home" ELTDX_DATA_DIR="$scratch/eltdx" \
    "$VENV/bin/python" tests/interop/check.py --sim "$SIM" --seed "$SEED" --ports "$ports"
# `tdx sync`'s Parquet store, read by pyarrow, against the same truth.
TDX_ENGINE_LOOPBACK_ONLY=1 "$VENV/bin/python" tests/interop/sync_check.py \
    --sim "$SIM" --tdx "$(pwd)/target/debug/tdx" --seed "$SEED" --hosts "$hosts"
# eltdx's F10 client (F10Client(base_url=...)) against `tdx-sim serve-f10`,
# and our client (`tdx f10`), against the same truth.
"$SIM" serve-f10 --port 0 --seed "$SEED" >"$scratch/f10-port" 2>"$scratch/f10.log" &
f10_pid=$!
trap 'kill "$f10_pid" 2>/dev/null; cleanup_scratch' EXIT
for _ in $(seq 100); do
    grep -q '^listening 127.0.0.1:' "$scratch/f10-port" && break
    sleep 0.1
done
f10_url="http://$(sed -n 's/^listening //p' "$scratch/f10-port")/TQLEX"
TDX_ENGINE_LOOPBACK_ONLY=1 "$VENV/bin/python" tests/interop/f10_check.py \
    --sim "$SIM" --tdx "$(pwd)/target/debug/tdx" --seed "$SEED" --url "$f10_url" --hosts "$hosts"
# The TDX client's own files: the peers' readers on what `tdx export` and
# `tdx-sim tdx-dir` write, `tdx import` of what eltdx writes.
HOME="$scratch/home" TDX_ENGINE_LOOPBACK_ONLY=1 "$VENV/bin/python" tests/interop/files_check.py \
    --sim "$SIM" --tdx "$(pwd)/target/debug/tdx" --seed "$SEED" --hosts "$hosts"
# eltdx's MAC client (every method) and its money flow against the same
# servers and truth.
HOME="$scratch/home" XDG_DATA_HOME="$scratch/home" ELTDX_DATA_DIR="$scratch/eltdx" \
    "$VENV/bin/python" tests/interop/mac_check.py --sim "$SIM" --seed "$SEED" --ports "$ports"
# pytdx's extended-market client (TdxExHq_API) against `tdx-sim serve --ex-port 0` and `truth ex-*`.
"$VENV/bin/python" tests/interop/ex_check.py --sim "$SIM" --seed "$SEED"
# eltdx's extended-market clients, ExTdxClient (EX) and MacExClient (MAC-EX), against
# `tdx-sim serve --ex-port 0` in each --ex-mode, and `truth ex-*`.
HOME="$scratch/home" XDG_DATA_HOME="$scratch/home" ELTDX_DATA_DIR="$scratch/eltdx" \
    "$VENV/bin/python" tests/interop/eltdx_ex_check.py --sim "$SIM" --seed "$SEED"
