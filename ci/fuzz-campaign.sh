#!/usr/bin/env bash
# A fuzz campaign over every target, sized in hours: the weekly run a CI
# schedule can start. Each target gets an equal share of the time, two
# targets at a time (one per core on the 2-core machines this project runs
# on; set FUZZ_PARALLEL for more), each through ci/fuzz-long.sh, so the
# corpus grows where the last campaign left it and every target's log,
# final coverage and crash (if any) is where fuzz-long.sh puts it.
#
#   ci/fuzz-campaign.sh HOURS [LIBFUZZER_ARG...]
#   ci/fuzz-campaign.sh 6                          # the weekly campaign
#   FUZZ_SANITIZER=none ci/fuzz-campaign.sh 2 -runs=10000000
#
# Prints one summary line per target (executions, exec/s, coverage at start
# and end) and exits non-zero if any target crashed; its input is then
# under fuzz/artifacts/TARGET/.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -lt 1 ]; then
    echo "usage: $0 HOURS [LIBFUZZER_ARG...]" >&2
    exit 2
fi
hours="$1"
shift
parallel="${FUZZ_PARALLEL:-2}"
if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "fuzzing needs the nightly toolchain (cargo +nightly); none is installed" >&2
    exit 1
fi
if ! cargo fuzz --version 2>/dev/null | grep -q "0.13.2"; then
    cargo install cargo-fuzz --version 0.13.2 --locked
fi
targets="$(cargo +nightly fuzz list)"
read -ra all <<<"$(tr '\n' ' ' <<<"$targets")"
rounds=$(((${#all[@]} + parallel - 1) / parallel))
minutes=$((hours * 60 / rounds))
if [ "$minutes" -lt 1 ]; then
    minutes=1
fi
echo "==> campaign: ${#all[@]} targets, $parallel at a time, $minutes min each, $(nproc) cores, started $(date -u +%Y-%m-%dT%H:%MZ)"
mkdir -p target/fuzz-logs
failed=()
for ((i = 0; i < ${#all[@]}; i += parallel)); do
    batch=("${all[@]:i:parallel}")
    pids=()
    for t in "${batch[@]}"; do
        bash ci/fuzz-long.sh "$t" "$minutes" "$@" >"target/fuzz-logs/campaign-$t.log" 2>&1 &
        pids+=($!)
    done
    for k in "${!batch[@]}"; do
        wait "${pids[k]}" || failed+=("${batch[k]}")
    done
    for t in "${batch[@]}"; do
        log="target/fuzz-logs/long-$t.log"
        inited="$(grep -E '^#[0-9]+\s+INITED' "$log" | tail -n 1 | grep -oE 'cov: [0-9]+ ft: [0-9]+' || true)"
        done_line="$(grep -E '^#[0-9]+\s+DONE' "$log" | tail -n 1 || true)"
        runs="$(grep -E '^stat::number_of_executed_units' "$log" | grep -oE '[0-9]+$' || echo '?')"
        rate="$(grep -E '^stat::average_exec_per_sec' "$log" | grep -oE '[0-9]+$' || echo '?')"
        echo "$t: $runs executions, $rate exec/s, start ${inited:-?}, end $(grep -oE 'cov: [0-9]+ ft: [0-9]+' <<<"$done_line" || echo '?')"
    done
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "crashed: ${failed[*]} (inputs under fuzz/artifacts/)" >&2
    exit 1
fi
echo "crashes: 0"
