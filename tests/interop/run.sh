#!/usr/bin/env bash
# Interop tests: pytdx 1.72 and eltdx 3.3.0, unchanged, against `tdx-sim serve`
# on loopback. Creates a venv under target/ and installs the pinned clients.
# Both clients get explicit 127.0.0.1 hosts only; eltdx probing is off and its
# data directory (and HOME) point into a temp dir.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=tests/interop/venv.sh
source tests/interop/venv.sh

SEED="${INTEROP_SEED:-7}"
SERVERS=3

cargo build --quiet -p tdx-sim
SIM="$(pwd)/target/debug/tdx-sim"

scratch="$(mktemp -d)"
server_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
    rm -rf "$scratch"
}
trap cleanup EXIT

"$SIM" serve --servers "$SERVERS" --base-port 0 --seed "$SEED" >"$scratch/ports" 2>"$scratch/server.log" &
server_pid=$!
for _ in $(seq 100); do
    [ "$(grep -c '^listening 127.0.0.1:' "$scratch/ports" || true)" -ge "$SERVERS" ] && break
    sleep 0.1
done
ports="$(sed -n 's/^listening 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$scratch/ports" | paste -sd, -)"
[ -n "$ports" ] || { echo "tdx-sim did not start" >&2; cat "$scratch/server.log" >&2; exit 1; }

mkdir -p "$scratch/home" "$scratch/eltdx"
HOME="$scratch/home" XDG_DATA_HOME="$scratch/home" ELTDX_DATA_DIR="$scratch/eltdx" \
    "$VENV/bin/python" tests/interop/check.py --sim "$SIM" --seed "$SEED" --ports "$ports"
