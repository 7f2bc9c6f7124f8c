#!/usr/bin/env bash
# The engine's soak: `tdx-sim soak` runs it against `tdx-sim serve` (a child
# process) with every fault kind on (stalls, closes mid-frame, garbage, bad
# magic, wrong ids and types, oversize lengths, corrupt zlib, cut bodies, a
# push flood on every server, one throttling server, one serving empty
# data), at a steady rate from many callers. Every reply is checked against
# the truth and every failure counted by its type; RSS, open descriptors
# and threads are sampled every second and must stay within the engine's
# configured budgets. Exits non-zero on a wrong reply, an engine bug or a
# resource past its bound.
#
#   ci/soak.sh [SECONDS] [tdx-sim soak options...]
#   ci/soak.sh 30                   # the short version ci/run.sh runs
#   ci/soak.sh 1800                 # the long soak (30 minutes)
#   ci/soak.sh 1800 --rate 400 --callers 128
#
#   TDX_SIM=target/release/tdx-sim ci/soak.sh 30   # a binary already built
#                         (ci/run.sh's release build, the deliberate bugs
#                         compiled in, none switched on); nothing is built
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-60}"
shift || true
if [ -z "${TDX_SIM:-}" ]; then
    cargo build --release --locked --quiet -p tdx-sim
    TDX_SIM=target/release/tdx-sim
fi
echo "soak: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown), started $(date -u +%Y-%m-%dT%H:%M:%SZ)"
"$TDX_SIM" soak --seconds "$seconds" "$@"
