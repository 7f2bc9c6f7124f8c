# Sourced by the interop tests and the peer benchmarks: a venv under
# target/ with the pinned third-party clients. Sets VENV.
VENV="target/interop-venv"
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c 'import importlib.metadata as m; assert m.version("pytdx") == "1.72" and m.version("eltdx") == "3.3.0"' 2>/dev/null; then
    "$VENV/bin/pip" install --quiet --disable-pip-version-check pytdx==1.72 eltdx==3.3.0
fi
