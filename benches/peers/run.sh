#!/usr/bin/env bash
# The engine against the Python clients people use today, side by side in
# one run: light (security count) and medium (800 daily bars) through pytdx
# 1.72 (one connection per thread, 8 threads), eltdx 3.3.0 (its 2x4 pool, 8
# caller threads, and 1) and the engine (2x4 pool, 8 callers), all against
# the same `tdx-sim serve` servers on 127.0.0.1, inside a network namespace
# where only loopback is up. Prints engine/peer ratios.
#
#   SECONDS_PER=N   seconds per measurement (default 3)
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=tests/interop/lib.sh
source tests/interop/lib.sh

SECONDS_PER="${SECONDS_PER:-3}"

if [ "${TDX_LOOPBACK_NETNS:-}" != 1 ]; then
    cargo build --quiet --release -p tdx-sim
    cargo bench --quiet --bench loopback --no-run 2>/dev/null
fi
# The clients and the servers run in a network namespace with only loopback.
loopback_only "$0" "$@"
make_scratch

start_sim target/release/tdx-sim 2 7

# The engine's medium workload uses the first 8 SZ codes of seed 7; so do the peers.
codes="$(target/release/tdx-sim truth --seed 7 codes sz --start 0 --limit 8 \
    | python3 -c 'import json,sys; print(",".join(i["code"][2:] for i in json.load(sys.stdin)["items"]))')"
mkdir -p "$scratch/home" "$scratch/eltdx"
HOME="$scratch/home" XDG_DATA_HOME="$scratch/home" ELTDX_DATA_DIR="$scratch/eltdx" \
    "$VENV/bin/python" benches/peers/peers.py --hosts "$hosts" --codes "$codes" --seconds "$SECONDS_PER" >"$scratch/peers.jsonl"
cargo bench --quiet --offline --bench loopback -- --peers "$hosts" --seconds "$SECONDS_PER" >"$scratch/engine.jsonl"

mkdir -p target/bench
cat "$scratch/peers.jsonl" "$scratch/engine.jsonl" >target/bench/peers.jsonl
python3 - "$scratch/peers.jsonl" "$scratch/engine.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for f in sys.argv[1:] for l in open(f) if l.strip()]
def rps(client, workload, threads):
    return next((r["rps"] for r in rows if r["client"] == client and r["workload"] == workload and r["threads"] == threads), None)
print("| workload | engine 2x4, 8 callers | pytdx, 8 threads | eltdx 2x4, 8 threads | eltdx, 1 thread | engine/pytdx | engine/eltdx |")
print("|---|---:|---:|---:|---:|---:|---:|")
for w in ["light", "medium"]:
    e, p, l8, l1 = rps("engine", w, 8), rps("pytdx", w, 8), rps("eltdx", w, 8), rps("eltdx", w, 1)
    print(f"| {w} | {e:.0f} | {p:.0f} | {l8:.0f} | {l1:.0f} | {e / p:.1f}x | {e / l8:.1f}x |")
PY
echo "wrote target/bench/peers.jsonl"
