#!/usr/bin/env bash
# The project's full check, as the README's test command: formatting, lints,
# the Supervisor purity check, a fixed-budget fuzz smoke, the interop tests
# (real pytdx and eltdx against the reference server) and every test.
# Installs what it needs (cargo-fuzz, a Python venv under target/) itself;
# runs from any directory.
#
#   FUZZ_SECONDS=N   seconds per fuzz target (default 20; 0 skips the smoke)
#   SIM_SEEDS=N      simulation seeds in the sweep (default 400; 0 skips it)
#
# Also runs the Python package's tests (python/tests/run.sh: the sdist by
# maturin, the abi3 wheel pip builds from it installed into a venv under
# target/ with no Rust on PATH, stubtest, pytest), the mutant check (every
# deliberate bug caught), loom models of every shared primitive, the
# interop tests in a network namespace with only loopback up, the
# examples, the test kit from a crate outside the workspace
# (ci/consumer.sh), and `tdx gateway` / `tdx mcp` against third-party
# clients and a real browser (tests/gateway/run.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZ_SECONDS="${FUZZ_SECONDS:-20}"
SIM_SEEDS="${SIM_SEEDS:-400}"
# The network rule, enforced: the engine's TCP connector refuses any address
# that is not loopback for everything this script runs.
export TDX_ENGINE_LOOPBACK_ONLY=1
CARGO_FUZZ_VERSION="0.13.2"
# CI checks behaviour, not speed: release builds without the manifest's
# thin LTO, debug builds with line tables only, which saves most of the
# linking (docs/decisions/0011-ci-build-profiles.md); a failing seed still
# names its file and line, and the benchmarks, not run here, keep the
# manifest's profiles.
export CARGO_PROFILE_RELEASE_LTO=false
# Release builds at opt-level 1: the release tree builds in 79% of the time
# at 3, and the sweep and the mutants run 17% slower (decision 0011, "Later
# (2026-12-04, second)"); the seeds replay to the same trace hashes.
export CARGO_PROFILE_RELEASE_OPT_LEVEL=1
export CARGO_PROFILE_DEV_DEBUG=line-tables-only
# A build from nothing gains nothing from incremental compilation's caches,
# and writing them cost the workspace's crates 12% of their debug build
# (decision 0011, "Later (2026-12-04, third)").
export CARGO_INCREMENTAL=0
# The Python wheel's build reuses the release build's registry crates: the
# same features (ci/feature-union) and the same profile, so its own
# codegen-units and debug settings give way to the workspace's here.
export CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
export CARGO_PROFILE_RELEASE_DEBUG=line-tables-only

# Something in the toolchain's build probes can replace /dev/null with a
# regular file when run as root (seen on this CI machine), after which every
# rustc probe reads garbage. Put the device back before each step.
keep_dev_null() {
    if [ ! -c /dev/null ] && [ "$(id -u)" = 0 ]; then
        echo "(restoring /dev/null)"
        rm -f /dev/null && mknod -m 666 /dev/null c 1 3
    fi
}

step_started=()
step_names=()
step_busy=() # the machine's busy CPU time at each step's start (ticks, /proc/stat)
busy_ticks() {
    local _cpu user nice system idle iowait irq softirq steal
    read -r _cpu user nice system idle iowait irq softirq steal _ </proc/stat
    echo $((user + nice + system + irq + softirq + steal))
}
step() {
    keep_dev_null
    # Minutes since the start: where a slow run spends its time.
    printf '\n==> %s  [%d:%02d]\n' "$*" $((SECONDS / 60)) $((SECONDS % 60))
    step_started+=("$SECONDS")
    step_names+=("$*")
    step_busy+=("$(busy_ticks)")
}

# Work off the critical path runs in the background, niced so that it takes
# only what the steps in front leave idle: the downloads of ci/setup.sh from
# the start, and the Python package's build from the release build on.
# A background job that fails stops the run where its result is needed,
# with its log; one still running when the run ends is stopped.
background_pids=()
# Each job leads a process group of its own (setsid), so the cargo and rustc
# under it stop with it. A new session is also a new scheduling autogroup,
# whose weight nice alone does not lower (a niced build in one slowed the
# simulation sweep from 68 s to 153 s): the group's own nice goes up too.
trap 'for pid in "${background_pids[@]}"; do kill -- "-$pid" 2>/dev/null || true; done' EXIT
# A job at the steps' own priority, for work that shares a step with
# another and should get its fair half.
beside() { # LOG COMMAND...: sets background_pid
    setsid "${@:2}" >"$1" 2>&1 &
    background_pid=$!
    background_pids+=("$background_pid")
}
# The same, niced: work off the critical path.
in_background() { # LOG COMMAND...: sets background_pid
    beside "$1" bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null || true; exec nice -n 19 "$@"' bash "${@:2}"
}
finish_background() { # PID LOG WHAT
    if ! wait "$1"; then
        tail -n 60 "$2" >&2
        echo "$3 failed (its log: $2)" >&2
        exit 1
    fi
    echo "($3: done, log in $2)"
}
# A job run beside a step: its logs in full, after the step's own output.
finish_beside() { # PID WHAT LOG...
    local ok=1 log
    wait "$1" || ok=0
    for log in "${@:3}"; do
        if [ -s "$log" ]; then
            printf '\n--- %s, run beside the step (%s)\n' "$2" "$log"
            cat "$log"
        fi
    done
    if [ "$ok" = 0 ]; then
        echo "$2 failed (logs: ${*:3})" >&2
        exit 1
    fi
}

step "toolchain"
cargo --version
rustc --version
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
    rustup component add rustfmt clippy
fi

mkdir -p target
in_background target/ci-setup.log bash ci/setup.sh
setup_pid=$background_pid

step "fmt"
cargo fmt --all -- --check
cargo fmt --manifest-path fuzz/Cargo.toml -- --check
cargo fmt --manifest-path python/Cargo.toml -- --check

step "clippy"
# With the deliberate bugs compiled in, so they are linted too: the build
# without them differs only by three stubs that refuse to run a mutant.
cargo clippy --workspace --all-targets --locked --features tdx/mutants,tdx-sim/mutants -- -D warnings
# The Python binding is its own workspace (an extension module links
# against the interpreter only when Python loads it); the shared target dir
# reuses the engine's build.
CARGO_TARGET_DIR="$(pwd)/target" cargo clippy --manifest-path python/Cargo.toml --all-targets --locked -- -D warnings

step "supervisor purity"
# The Supervisor is a pure state machine: no runtime, clock, sockets,
# threads, files or unseeded randomness under engine/src/supervisor/, nor
# in the seeded generator it draws from (engine/src/rng.rs).
if [ -d engine/src/supervisor ]; then
    if grep -rnE 'tokio|Instant::now|SystemTime::now|std::net|std::thread|thread_rng|rand::random|std::fs' \
        engine/src/supervisor engine/src/rng.rs | grep -vE '^\S+:[0-9]+:\s*//'; then
        echo "impure code under engine/src/supervisor" >&2
        exit 1
    fi
    echo "pure"
else
    echo "no supervisor yet"
fi

step "import cycles (no two files of a crate import each other in a loop)"
python3 ci/import_cycles.py engine/src sim/src store/src src
echo "none"

step "docs (rustdoc, warnings are errors)"
RUSTDOCFLAGS="-Dwarnings" cargo doc --workspace --no-deps --locked --quiet

step "docs (every link and protocol citation resolves inside the repository)"
python3 ci/doc-links.py

step "loom (budgets and every primitive shared between threads, all interleavings)"
# A separate target dir: --cfg loom rebuilds every crate. The dev profile:
# the models run in well under a second either way, and its build is the
# shorter (decision 0011, "Later (2026-12-04, second)").
RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 CARGO_TARGET_DIR=target/loom \
    cargo test -p tdx-engine --lib --locked loom

step "fuzz smoke (${FUZZ_SECONDS}s per target)"
if [ "$FUZZ_SECONDS" -gt 0 ]; then
    if ! cargo +nightly --version >/dev/null 2>&1; then
        echo "the fuzz smoke needs the nightly toolchain (cargo +nightly); none is installed" >&2
        exit 1
    fi
    if ! cargo fuzz --version 2>/dev/null | grep -q "$CARGO_FUZZ_VERSION"; then
        cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked
    fi
    step "fuzz crate clippy"
    cargo clippy --manifest-path fuzz/Cargo.toml --all-targets --locked -- -D warnings
    step "fuzz seed corpus (vectors and server encoders into fuzz/corpus/TARGET/)"
    cargo run --quiet --locked --manifest-path fuzz/Cargo.toml --example corpus
    mkdir -p target/fuzz-logs
    step "fuzz build (every target)"
    # No AddressSanitizer: the engine and the simulator forbid unsafe code,
    # and without it the build is shorter and each second runs several
    # times the inputs (ci/fuzz-long.sh's FUZZ_SANITIZER says the same).
    cargo +nightly fuzz build -s none
    # Two targets at a time, one per core: each keeps its whole budget, the
    # step takes half the time. A failing target's log and input are named
    # once both have finished.
    fuzz_one() {
        cargo +nightly fuzz run -s none "$1" -- -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=2048 \
            >"target/fuzz-logs/$1.log" 2>&1
    }
    read -ra targets <<<"$(cargo +nightly fuzz list | tr '\n' ' ')"
    for ((i = 0; i < ${#targets[@]}; i += 2)); do
        pair=("${targets[@]:i:2}")
        step "fuzz ${pair[*]}"
        keep_dev_null
        pids=()
        for target in "${pair[@]}"; do
            fuzz_one "$target" &
            pids+=($!)
        done
        failed=()
        for k in "${!pair[@]}"; do
            wait "${pids[k]}" || failed+=("${pair[k]}")
        done
        for target in "${pair[@]}"; do
            grep -E '^Done' "target/fuzz-logs/$target.log" || true
        done
        for target in "${failed[@]}"; do
            tail -n 60 "target/fuzz-logs/$target.log" >&2
            echo "fuzz target $target failed; the crashing input is under fuzz/artifacts/$target/" >&2
        done
        [ ${#failed[@]} -eq 0 ] || exit 1
    done
fi

step "release build (tdx and tdx-sim, the deliberate bugs compiled in, none switched on)"
# One invocation for the sweep, the soak and the mutants: cargo unifies
# features per invocation, and `-p tdx-sim` and `--bin tdx` built apart gave
# tokio's macros (and so tokio, hyper, rustls and the rest) two feature sets,
# so the release tree was built twice. With no mutant switched on the runs
# are the shipped engine's (seeds 1000, 1001 and 1017 replay to the same
# trace hashes with and without the feature).
# `feature-union`: the registry crates get the features the Python wheel's
# build turns on too, so that build (below, in the background) reuses them.
cargo build --release --locked -p tdx -p tdx-sim --features tdx/mutants,tdx-sim/mutants,tdx/feature-union
touch target/release-build.stamp
# The Python package's build from here on, behind every step until its own:
# the sdist, the wheel pip builds from it, the test venv's installs.
finish_background "$setup_pid" target/ci-setup.log "the interop and gateway setup (ci/setup.sh)"
in_background target/python-build.log bash python/tests/run.sh --build-only
python_build_pid=$background_pid

step "simulation sweep (${SIM_SEEDS} seeds, release)"
if [ "$SIM_SEEDS" -gt 0 ]; then
    # Seeds 1000.. here; `cargo test` runs 0..24 in debug. Both check the
    # Supervisor's invariants after every input.
    target/release/tdx-sim run --seeds "$SIM_SEEDS" --start 1000 | tail -n 20
fi

step "soak (30 s: the engine against tdx-sim serve with every fault kind on; ci/soak.sh 1800 is the long one)"
TDX_SIM=target/release/tdx-sim bash ci/soak.sh 30

step "mutants (every deliberate bug must be caught)"
# Each mutant against the Supervisor model's seeds, then simulation seeds,
# the client tier and the store's tier (which runs the `tdx` built beside
# it with the mutants); one line per mutant; fails if any survives.
target/release/tdx-sim mutants

step "debug build (tdx, tdx-sim, the examples and every test binary, as \`cargo test\` resolves them)"
# The interop, Python and gateway scripts and the examples run these
# binaries; ci/debug-build.sh is their one build command, so none of them
# builds the debug tree a second time.
bash ci/debug-build.sh
export TDX_DEBUG_BUILT=1

step "examples (against the embedded exchange, no network)"
target/debug/examples/quickstart
target/debug/examples/download_all --limit 200
target/debug/examples/watch --batches 2
target/debug/examples/adjusted_bars
target/debug/examples/test_under_faults --seeds 5

step "test kit in a consumer crate outside the workspace (fault test, failing seed replayed); beside it interop (pytdx 1.72, eltdx 3.3.0, tdxrs 0.6.7 against tdx-sim; tdx sync read by pyarrow 26.0.1; loopback-only network namespace)"
# The interop clients keep one core busy and the consumer's build two:
# together they take about the consumer's time (decision 0011, "Later
# (2026-12-04, third)").
beside target/interop.log bash tests/interop/run.sh
interop_pid=$background_pid
bash ci/consumer.sh
finish_beside "$interop_pid" "the interop tests" target/interop.log

step "tests: cargo test --workspace; beside it the Python package (the wheel pip built from the sdist, installed with no Rust on PATH; stubtest, mypy --strict; pytest) and the gateway and MCP clients (OpenAPI validated, pyarrow, the MCP Python SDK, the page in Debian's chromium), both against tdx-sim in a loopback-only network namespace"
finish_background "$python_build_pid" target/python-build.log "the Python package's build (python/tests/run.sh --build-only)"
cat target/python-build.log
# What the wheel's build compiled that the release build had not: pyo3 and
# the package's own crates, or ci/feature-union has fallen behind a
# dependency's features (which costs time, not correctness).
rebuilt="$(find target/release/deps -newer target/release-build.stamp \( -name 'lib*.rlib' -o -name 'lib*.so' \) |
    sed -E 's#.*/lib([a-z0-9_]+)(-[0-9a-f]+)?\.(rlib|so)$#\1#' | sort -u |
    grep -vxE 'pyo3(_ffi|_macros|_macros_backend|_build_config)?|indoc|unindent|memoffset|target_lexicon|tdx_engine|tdx_store|tdx_feature_union|_native' || true)"
if [ -n "$rebuilt" ]; then
    echo "note: the wheel's build compiled registry crates the release build had built with other features" \
        "(add them to ci/feature-union/Cargo.toml): $(echo $rebuilt)"
fi
# cargo's test binaries keep 1.4 cores busy on average and pytest one:
# run apart, each left a core idle for minutes.
rm -f target/pytest.log target/gateway.log
beside target/python-tests.log bash -c 'TDX_PYTHON_BUILT=1 bash python/tests/run.sh >target/pytest.log 2>&1 &&
    bash tests/gateway/run.sh >target/gateway.log 2>&1'
python_tests_pid=$background_pid
cargo test --workspace --locked 2>&1 | tee target/test.log
finish_beside "$python_tests_pid" "the Python package's and the gateway's tests" target/pytest.log target/gateway.log
# The whole machine's busy CPU seconds beside the wall time: on a machine
# doing nothing else, busy / cores is the floor no reordering goes under.
ticks_per_second="$(getconf CLK_TCK)"
cores="$(nproc)"
busy_end="$(busy_ticks)"
printf '\nci: %d:%02d in all; the CPUs busy for %d s (%d cores: %d s of wall time at the least)\n' \
    $((SECONDS / 60)) $((SECONDS % 60)) $(((busy_end - step_busy[0]) / ticks_per_second)) "$cores" \
    $(((busy_end - step_busy[0]) / ticks_per_second / cores))
# Each step's seconds and the cores it kept busy on average (background
# jobs included), slowest first: the end of the log is what a CI page
# shows, and this says where the run's time went.
for i in "${!step_started[@]}"; do
    next=$((i + 1))
    ended="${step_started[next]:-$SECONDS}"
    busy="${step_busy[next]:-$busy_end}"
    seconds=$((ended - step_started[i]))
    printf '%6d s %5s cores  %s\n' "$seconds" \
        "$(awk -v b=$((busy - step_busy[i])) -v t="$ticks_per_second" -v s="$seconds" 'BEGIN { printf "%.1f", s ? b / t / s : 0 }')" \
        "${step_names[i]:0:80}"
done | sort -rn | sed -n 1,16p
# One closing line for the whole run (cargo prints one per test binary,
# and the last of those is a doc-test binary that may hold none; pytest
# prints one summary line, "N passed, M failed in S").
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     /^[0-9]+ (passed|failed).* in [0-9.]+s/ { for (i = 1; i < NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "tests: %d passed, %d failed\n", p, f }' target/test.log target/pytest.log
