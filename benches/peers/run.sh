#!/usr/bin/env bash
# The engine against the Python clients people use today, side by side in
# one run: light (security count) and medium (800 daily bars) at 1 caller
# thread and 8, through pytdx 1.72 and tdxrs 0.6.7 (one connection per
# thread), eltdx 3.3.0 (its 2x4 pool) and this project's Python package
# tdx_engine (2x4), all against the same `tdx-sim serve` servers on
# 127.0.0.1, inside a network namespace where only loopback is up; then the
# Rust engine itself (2x4, 8 callers). Prints requests/s, the one-caller
# round trip and the ratios against eltdx.
#
#   SECONDS_PER=N   seconds per measurement (default 3)
#   PYTHON_ONLY=1   the Python clients only, against a debug tdx-sim (no
#                   release or bench builds): a check that the harness runs,
#                   never numbers to report
#
# `run.sh market [--codes-limit N] [--clients A,B]`: the whole-market job instead. Every
# daily bar of every SZ and SH security (or of the first N of each market)
# through each client's own bulk path (peers.py --workload market: pytdx
# with 8 threads, tdxrs's Downloader, eltdx's batch call, tdx_engine's
# bars.all over a code list, `tdx sync`; 2 servers x 4 connections where a
# client has a pool), one after another against the same two `tdx-sim
# serve` servers, each adding LATENCY_MS (default 20) plus up to JITTER_MS
# (default 10, uniform) before every reply. Prints seconds per client
# beside the bound the servers set: bar pages (each security's full pages
# and the short one that ends it) x mean latency / connections, and per
# client the securities whose bar count differs from most clients'; fails
# if tdx_engine's or tdx sync's does. `--clients` runs only those of pytdx,
# tdxrs, eltdx, tdx_engine, tdx_sync (tdxrs alone takes about 50 minutes).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=tests/interop/lib.sh
source tests/interop/lib.sh

ARGS=("$@")
MODE=rates
CODES_LIMIT=""
CLIENTS=""
if [ "${1:-}" = market ]; then
    MODE=market
    shift
fi
while [ $# -gt 0 ]; do
    case "$1" in
        --codes-limit) CODES_LIMIT="$2"; shift 2 ;;
        --clients) CLIENTS="$2"; shift 2 ;;
        *) echo "usage: run.sh [market [--codes-limit N] [--clients A,B]]" >&2; exit 2 ;;
    esac
done
SECONDS_PER="${SECONDS_PER:-3}"
PYTHON_ONLY="${PYTHON_ONLY:-0}"
LATENCY_MS="${LATENCY_MS:-20}"
JITTER_MS="${JITTER_MS:-10}"
SIM=target/release/tdx-sim
[ "$PYTHON_ONLY" = 1 ] && SIM=target/debug/tdx-sim

if [ "${TDX_LOOPBACK_NETNS:-}" != 1 ]; then
    if [ "$MODE" = market ]; then
        cargo build --quiet --release -p tdx-sim
        cargo build --quiet --release --bin tdx
    elif [ "$PYTHON_ONLY" = 1 ]; then
        cargo build --quiet -p tdx-sim
    else
        cargo build --quiet --release -p tdx-sim
        cargo bench --quiet --bench loopback --no-run 2>/dev/null
    fi
    # The package as users get it (`pip install ./python` builds release),
    # sharing the workspace's target dir.
    CARGO_TARGET_DIR="$(pwd)/target" "$VENV/bin/pip" install --quiet --disable-pip-version-check \
        --force-reinstall --no-deps ./python
fi
# The clients and the servers run in a network namespace with only loopback.
loopback_only "$0" "${ARGS[@]}"
make_scratch

if [ "$MODE" = market ]; then
    "$SIM" serve --servers 2 --base-port 0 --seed 7 --latency-ms "$LATENCY_MS" --jitter-ms "$JITTER_MS" \
        >"$scratch/ports" 2>"$scratch/server.log" &
    server_pid=$!
    for _ in $(seq 100); do
        [ "$(grep -c '^listening 127.0.0.1:' "$scratch/ports" || true)" -ge 2 ] && break
        sleep 0.1
    done
    hosts="$(sed -n 's/^listening //p' "$scratch/ports" | paste -sd, -)"
    [ "$(grep -c '^listening 127.0.0.1:' "$scratch/ports" || true)" -ge 2 ] || { cat "$scratch/server.log" >&2; exit 1; }
    extra=()
    if [ -n "$CODES_LIMIT" ]; then
        codes="$(for m in sz sh; do "$SIM" truth --seed 7 codes "$m" --start 0 --limit "$CODES_LIMIT"; done |
            python3 -c 'import json,sys; print(",".join(i["code"] for l in sys.stdin for i in json.loads(l)["items"]))')"
        extra=(--market-codes "$codes")
    fi
    [ -n "$CLIENTS" ] && extra+=(--clients "$CLIENTS")
    mkdir -p "$scratch/home" "$scratch/eltdx" target/bench
    out=target/bench/peers-market.jsonl
    HOME="$scratch/home" XDG_DATA_HOME="$scratch/home" ELTDX_DATA_DIR="$scratch/eltdx" \
        "$VENV/bin/python" benches/peers/peers.py --workload market --hosts "$hosts" "${extra[@]}" \
        --tdx target/release/tdx --scratch "$scratch" >"$out"
    python3 - "$out" "$LATENCY_MS" "$JITTER_MS" <<'PY'
import collections, json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
mean_s = (float(sys.argv[2]) + float(sys.argv[3]) / 2) / 1000
# Each security's bar count as most clients got it (their counts are independent).
codes = sorted({c for r in rows for c in r["per_code"]})
ref = {c: collections.Counter(r["per_code"].get(c, 0) for r in rows).most_common(1)[0][0] for c in codes}
# Every full page of 800, then the short (or empty) one that says the series ended.
pages = sum(n // 800 + 1 for n in ref.values() if n)
print(f"{sum(1 for n in ref.values() if n)} securities, {sum(ref.values())} daily bars, {pages} bar pages; "
      f"servers: {sys.argv[2]} ms + up to {sys.argv[3]} ms per reply (mean {mean_s * 1000:g} ms)")
print()
print("| client | connections | seconds | bound, s (pages x mean latency / connections) | seconds / bound "
      "| securities whose bar count differs from most clients' |")
print("|---|---:|---:|---:|---:|---:|")
off = {}
for r in rows:
    bound = pages * mean_s / r["connections"]
    off[r["client"]] = [c for c in codes if r["per_code"].get(c, 0) != ref[c]]
    print(f"| {r['client']} | {r['connections']} | {r['seconds']:.1f} | {bound:.1f} | {r['seconds'] / bound:.2f}x "
          f"| {len(off[r['client']])} |")
for name, diff in off.items():
    if diff:
        got = next(r for r in rows if r["client"] == name)["per_code"]
        print(f"{name}: " + ", ".join(f"{c} {got.get(c, 0)} bars (most: {ref[c]})" for c in diff[:5]), file=sys.stderr)
# This project's clients must agree with the others.
sys.exit(1 if off.get("tdx_engine") or off.get("tdx_sync") else 0)
PY
    echo "wrote $out"
    exit 0
fi

start_sim "$SIM" 2 7

# The engine's medium workload uses the first 8 SZ codes of seed 7; so do the peers.
codes="$("$SIM" truth --seed 7 codes sz --start 0 --limit 8 \
    | python3 -c 'import json,sys; print(",".join(i["code"][2:] for i in json.load(sys.stdin)["items"]))')"
mkdir -p "$scratch/home" "$scratch/eltdx"
HOME="$scratch/home" XDG_DATA_HOME="$scratch/home" ELTDX_DATA_DIR="$scratch/eltdx" \
    "$VENV/bin/python" benches/peers/peers.py --hosts "$hosts" --codes "$codes" --seconds "$SECONDS_PER" >"$scratch/peers.jsonl"
: >"$scratch/engine.jsonl"
if [ "$PYTHON_ONLY" != 1 ]; then
    cargo bench --quiet --offline --bench loopback -- --peers "$hosts" --seconds "$SECONDS_PER" >"$scratch/engine.jsonl"
fi

mkdir -p target/bench
out=target/bench/peers.jsonl
[ "$PYTHON_ONLY" = 1 ] && out=target/bench/peers-check.jsonl
cat "$scratch/peers.jsonl" "$scratch/engine.jsonl" >"$out"
python3 - "$scratch/peers.jsonl" "$scratch/engine.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for f in sys.argv[1:] for l in open(f) if l.strip()]
def rps(client, workload, threads):
    return next((r["rps"] for r in rows if r["client"] == client and r["workload"] == workload and r["threads"] == threads), None)
def num(x, fmt):
    return "-" if x is None else format(x, fmt)
def ratio(a, b):
    return "-" if a is None or b is None else f"{a / b:.1f}x"
clients = ["tdx_engine", "eltdx", "tdxrs", "pytdx"]
print("| workload | threads | " + " | ".join(clients) + " | Rust engine | tdx_engine/eltdx |")
print("|---|---:|" + "---:|" * (len(clients) + 2))
for w in ["light", "medium"]:
    for t in [8, 1]:
        cells = [num(rps(c, w, t), ".0f") for c in clients]
        print(f"| {w} | {t} | " + " | ".join(cells) + f" | {num(rps('engine', w, t), '.0f')} | "
              f"{ratio(rps('tdx_engine', w, t), rps('eltdx', w, t))} |")
print()
print("| workload | one-caller round trip, ms: " + " | ".join(clients) + " | tdx_engine/eltdx |")
print("|---|" + "---:|" * (len(clients) + 1))
for w in ["light", "medium"]:
    ms = {c: (None if rps(c, w, 1) in (None, 0) else 1000 / rps(c, w, 1)) for c in clients}
    rt = "-" if ms["tdx_engine"] is None or ms["eltdx"] is None else f"{ms['tdx_engine'] / ms['eltdx']:.2f}x"
    print(f"| {w} | " + " | ".join(num(ms[c], ".3f") for c in clients) + f" | {rt} |")
PY
echo "wrote $out"
