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
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=tests/interop/lib.sh
source tests/interop/lib.sh

SECONDS_PER="${SECONDS_PER:-3}"
PYTHON_ONLY="${PYTHON_ONLY:-0}"
SIM=target/release/tdx-sim
[ "$PYTHON_ONLY" = 1 ] && SIM=target/debug/tdx-sim

if [ "${TDX_LOOPBACK_NETNS:-}" != 1 ]; then
    if [ "$PYTHON_ONLY" = 1 ]; then
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
loopback_only "$0" "$@"
make_scratch

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
