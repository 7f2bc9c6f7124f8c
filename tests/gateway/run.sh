#!/usr/bin/env bash
# `tdx gateway` and `tdx mcp` read by clients the project did not write, on
# loopback only:
#   - the OpenAPI document validates (openapi-spec-validator 0.9.0);
#   - Arrow and Parquet results read back by pyarrow 26.0.1 equal the JSON;
#   - curl gets bars as JSON (equal to truth) and as Parquet;
#   - the official MCP SDK (mcp 2.3.0) lists and calls the tools of
#     `tdx --local mcp` over stdio; the results equal `tdx-sim truth`;
#   - the page at `/` in Debian's chromium, driven by playwright-core
#     (pinned with its package-lock, with the charting library the page
#     bundles): no console errors, the chart and quote panel show truth's
#     values, the live board updates; a screenshot goes to
#     target/gateway-page.png.
# Installs what it needs (chromium, chromium-driver and a CJK font from Debian, a venv
# under target/, the npm packages), then re-runs itself in a network
# namespace where only loopback is up. Runs from any directory.
set -euo pipefail
cd "$(dirname "$0")/../.."

VENV="target/gateway-venv" # tests/gateway/setup.sh makes it

if [ "${TDX_LOOPBACK_NETNS:-}" != 1 ]; then
    bash ci/debug-build.sh
    bash tests/gateway/setup.sh
    exec unshare --net env TDX_LOOPBACK_NETNS=1 bash -c 'ip link set lo up && exec bash "$0"' "$0"
fi

export TDX_ENGINE_LOOPBACK_ONLY=1
TDX="$(pwd)/target/debug/tdx"
SIM="$(pwd)/target/debug/tdx-sim"
scratch="$(mktemp -d)"
gateway_pid=""
cleanup() {
    [ -n "$gateway_pid" ] && kill "$gateway_pid" 2>/dev/null || true
    rm -rf "$scratch"
}
trap cleanup EXIT

"$TDX" --local gateway --listen 127.0.0.1:0 >"$scratch/out" 2>"$scratch/err" &
gateway_pid=$!
for _ in $(seq 200); do
    grep -q '^listening ' "$scratch/out" && break
    sleep 0.1
done
url="$(sed -n 's/^listening //p' "$scratch/out")"
if [ -z "$url" ]; then
    echo "tdx gateway did not start" >&2
    cat "$scratch/err" >&2
    exit 1
fi
echo "gateway at $url"

"$VENV/bin/python" tests/gateway/check.py --url "$url" --sim "$SIM" --tdx "$TDX"
(cd tests/gateway && node page_check.mjs --url "$url" --sim "$SIM" --out "$(cd ../.. && pwd)/target/gateway-page.png")
