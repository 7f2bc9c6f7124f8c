#!/usr/bin/env bash
# The Python package's tests: a venv under target/ with pinned pytest,
# pyarrow, pandas and polars, `pip install ./python` (sharing the
# workspace's target dir, so the engine is not built twice), then pytest
# against `tdx-sim serve` inside a network namespace where only loopback is
# up. Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=tests/interop/lib.sh
source tests/interop/lib.sh

PYVENV="target/py-venv"
PINS=(pytest==9.2.0 pyarrow==26.0.1 pandas==3.1.1 numpy==2.4.6 polars==2.1.0)

if [ "${TDX_LOOPBACK_NETNS:-}" != 1 ]; then
    cargo build --quiet --locked -p tdx-sim
    [ -x "$PYVENV/bin/python" ] || python3 -m venv "$PYVENV"
    if ! "$PYVENV/bin/python" -c 'import importlib.metadata as m, sys
pins = dict(p.split("==") for p in sys.argv[1:])
assert all(m.version(k) == v for k, v in pins.items())' "${PINS[@]}" 2>/dev/null; then
        "$PYVENV/bin/pip" install --quiet --disable-pip-version-check "${PINS[@]}"
    fi
    # Rebuilt every run (cargo makes an unchanged build a no-op).
    CARGO_TARGET_DIR="$(pwd)/target" "$PYVENV/bin/pip" install --quiet --disable-pip-version-check \
        --force-reinstall --no-deps ./python
fi
loopback_only "$0" "$@"

cd python
# The pytest script, not `python -m pytest`: -m puts python/ on sys.path,
# where the source package (without its built extension) would shadow the
# installed one.
TDX_SIM="$(cd .. && pwd)/target/debug/tdx-sim" TDX_ENGINE_LOOPBACK_ONLY=1 \
    "../$PYVENV/bin/pytest" -q -p no:cacheprovider tests "$@"
