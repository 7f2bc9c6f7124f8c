#!/usr/bin/env bash
# A long fuzz campaign on one target, on top of the accumulated corpus.
#
#   ci/fuzz-long.sh TARGET MINUTES [LIBFUZZER_ARG...]
#   ci/fuzz-long.sh frame_decoder 60
#   ci/fuzz-long.sh supervisor 10 -runs=10000000     # stops at whichever comes first
#
# Installs cargo-fuzz 0.13.2 if missing (as ci/run.sh does), writes the seed
# corpus (fuzz/examples/corpus.rs) into fuzz/corpus/TARGET/, then runs one
# libFuzzer job for MINUTES minutes. New inputs stay in fuzz/corpus/TARGET/,
# so each campaign starts where the last one ended. Prints executions,
# exec/s, coverage (cov, ft) and corpus size at the end; the whole libFuzzer
# log is in target/fuzz-logs/long-TARGET.log. Exits non-zero on a crash,
# whose input is then under fuzz/artifacts/TARGET/.
#
#   FUZZ_SANITIZER=none   build without AddressSanitizer (cargo fuzz's default
#                         is address): several times the executions per
#                         second; the engine forbids unsafe code, so the
#                         sanitizer finds little a panic would not
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -lt 2 ]; then
    echo "usage: $0 TARGET MINUTES [LIBFUZZER_ARG...]" >&2
    exit 2
fi
target="$1"
minutes="$2"
shift 2
CARGO_FUZZ_VERSION="0.13.2"

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "fuzzing needs the nightly toolchain (cargo +nightly); none is installed" >&2
    exit 1
fi
if ! cargo fuzz --version 2>/dev/null | grep -q "$CARGO_FUZZ_VERSION"; then
    cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked
fi
# The list is read whole first: `grep -q` closing the pipe early makes
# cargo-fuzz panic on a broken pipe, which pipefail turns into a miss.
targets="$(cargo +nightly fuzz list)"
if ! grep -qx "$target" <<<"$targets"; then
    echo "no fuzz target $target; targets: $(tr '\n' ' ' <<<"$targets")" >&2
    exit 2
fi

echo "==> seed corpus"
cargo run --quiet --manifest-path fuzz/Cargo.toml --example corpus

echo "==> build $target"
sanitizer="${FUZZ_SANITIZER:-address}"
cargo +nightly fuzz build -s "$sanitizer" "$target"

mkdir -p target/fuzz-logs
log="target/fuzz-logs/long-$target.log"
echo "==> fuzz $target for $minutes min (log: $log)"
started="$(date -u +%Y-%m-%dT%H:%MZ)"
status=0
cargo +nightly fuzz run -s "$sanitizer" "$target" -- -max_total_time="$((minutes * 60))" -rss_limit_mb=2048 \
    -print_final_stats=1 "$@" >"$log" 2>&1 || status=$?

echo "==> $target, started $started, $(nproc) cores, sanitizer $sanitizer"
# libFuzzer's last status line: "#RUNS DONE cov: N ft: N corp: N/SIZE ... exec/s: N rss: N".
grep -E '^#[0-9]+\s+(DONE|INITED)' "$log" | tail -n 2 || true
grep -E '^(Done|stat::number_of_executed_units|stat::average_exec_per_sec|stat::new_units_added|stat::peak_rss_mb)' "$log" || true
echo "corpus entries: $(find "fuzz/corpus/$target" -type f | wc -l)"
if [ "$status" -ne 0 ]; then
    tail -n 60 "$log" >&2
    echo "fuzz target $target failed (exit $status); the crashing input is under fuzz/artifacts/$target/" >&2
    exit "$status"
fi
echo "crashes: 0"
