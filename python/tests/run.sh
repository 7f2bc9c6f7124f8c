#!/usr/bin/env bash
# The Python package's tests, against the wheel a user would install, built
# the way pip builds it from the sdist: `maturin sdist`, then pip turns the
# sdist into the abi3 wheel (maturin's PEP 517 backend: its release build,
# the lock file, manylinux audit; Rust on PATH, maturin pinned, no build
# isolation, the workspace's target dir and `--features feature-union` so
# the registry crates the release build made there are reused: see
# ci/feature-union/Cargo.toml). One release build proves both that the
# sdist builds and that its wheel works. The wheel goes into a fresh venv
# from a shell whose PATH has no cargo or rustc, beside pinned pytest,
# pyarrow, pandas, polars, mypy, dask, distributed, moto's S3 server, s3fs
# and duckdb; then the stubs are checked against the extension
# (mypy.stubtest, signatures included),
# the typed example with `mypy --strict`, and pytest runs against `tdx-sim
# serve` inside a network namespace where only loopback is up. Arguments go
# to pytest.
#
#   --build-only       build and install the wheel, run nothing (ci/run.sh
#                      starts it in the background while other steps run)
#   TDX_PYTHON_BUILT=1 the wheel is built and installed already: tests only
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=tests/interop/lib.sh
source tests/interop/lib.sh

BUILD_VENV="target/py-venv"   # maturin, kept between runs
PYVENV="target/py-wheel-venv" # fresh every run: the wheel and the test pins only
WHEELS="target/python-dist"
BUILD_PINS=(maturin==1.16.0)
PINS=(pytest==9.2.0 pyarrow==26.0.1 pandas==3.1.1 numpy==2.4.6 polars==2.1.0 mypy==2.4.1
    "dask[dataframe]==2026.8.0" distributed==2026.8.0 # tests/test_dask.py
    "moto[server]==5.2.5" boto3==1.43.117 s3fs==2026.9.0 # tests/test_s3.py: an S3 server on loopback
    duckdb==2.0.1) # tests/test_sync_ex.py: the store read by DuckDB

# PATH without any directory holding cargo or rustc: what a user without
# Rust has.
no_rust_path() {
    local out="" d
    IFS=: read -ra dirs <<<"$PATH"
    for d in "${dirs[@]}"; do
        if [ -n "$d" ] && [ ! -e "$d/cargo" ] && [ ! -e "$d/rustc" ]; then
            out="${out:+$out:}$d"
        fi
    done
    printf '%s' "$out"
}

build_only=0
if [ "${1:-}" = --build-only ]; then
    build_only=1
    shift
fi
if [ "${TDX_LOOPBACK_NETNS:-}" != 1 ] && [ "${TDX_PYTHON_BUILT:-}" != 1 ]; then
    pinned_venv "$BUILD_VENV" "${BUILD_PINS[@]}"
    rm -rf "$WHEELS"
    (cd python && "../$BUILD_VENV/bin/maturin" sdist --out "../$WHEELS")
    # The sdist as pip builds it on a machine with Rust: its own sources
    # only (the archive is unpacked elsewhere), its lock file (--locked), the
    # manylinux audit `maturin build` does; the backend runs the `maturin` it
    # finds on PATH, so the build venv's goes first.
    env PATH="$(pwd)/$BUILD_VENV/bin:$PATH" CARGO_TARGET_DIR="$(pwd)/target" \
        MATURIN_PEP517_ARGS="--locked --compatibility manylinux_2_34 --features feature-union" \
        "$BUILD_VENV/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-build-isolation --no-deps \
        --wheel-dir "$WHEELS" "$WHEELS"/tdx_engine-*.tar.gz
    ls "$WHEELS"/tdx_engine-*-abi3-manylinux*.whl >/dev/null # abi3, audited

    rm -rf "$PYVENV"
    python3 -m venv "$PYVENV"
    env PATH="$(no_rust_path)" bash -euc '
        if command -v cargo || command -v rustc; then echo "Rust is still on PATH" >&2; exit 1; fi
        "$1/bin/python" -m pip install --quiet --disable-pip-version-check --only-binary=:all: "${@:3}" "$2"/tdx_engine-*-abi3-manylinux*.whl
    ' bash "$PYVENV" "$WHEELS" "${PINS[@]}"
fi
[ "$build_only" = 0 ] || exit 0
if [ "${TDX_LOOPBACK_NETNS:-}" != 1 ]; then
    bash ci/debug-build.sh # tdx-sim serves the tests; tests/test_s3.py runs the CLI
fi
loopback_only "$0" "$@"

# The stubs against the installed extension, and a strict typed user.
(cd target && env PATH="$(no_rust_path)" "../$PYVENV/bin/python" -m mypy.stubtest tdx_engine)
env PATH="$(no_rust_path)" "$PYVENV/bin/python" -m mypy --strict --no-incremental python/examples/typed.py

cd python
# The pytest script, not `python -m pytest`: -m puts python/ on sys.path,
# where the source package (without its built extension) would shadow the
# installed one.
env PATH="$(no_rust_path)" TDX_SIM="$(cd .. && pwd)/target/debug/tdx-sim" TDX_BIN="$(cd .. && pwd)/target/debug/tdx" \
    TDX_ENGINE_LOOPBACK_ONLY=1 TDX_PYTEST_NO_SKIPS=1 \
    "../$PYVENV/bin/pytest" -q -p no:cacheprovider tests "$@"
