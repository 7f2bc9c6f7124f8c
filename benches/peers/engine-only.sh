#!/usr/bin/env bash
# tdx_engine (the Python package) alone, RUNS times, against the same
# servers as run.sh: a quick look at one client's run-to-run spread. Run
# benches/peers/run.sh first (it installs the package into the venv).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=tests/interop/lib.sh
source tests/interop/lib.sh
RUNS="${RUNS:-3}"
loopback_only "$0" "$@"
make_scratch
start_sim target/release/tdx-sim 2 7
codes="$(target/release/tdx-sim truth --seed 7 codes sz --start 0 --limit 8 \
    | python3 -c 'import json,sys; print(",".join(i["code"][2:] for i in json.load(sys.stdin)["items"]))')"
for _ in $(seq "$RUNS"); do
    "$VENV/bin/python" benches/peers/peers.py --hosts "$hosts" --codes "$codes" --seconds 3 --clients tdx_engine \
        | python3 -c 'import json,sys
for l in sys.stdin:
    r = json.loads(l); print(r["workload"], r["threads"], round(r["rps"]))'
done
