# Sourced by the interop tests and the peer benchmarks (from the repository
# root): a venv under target/ with the pinned third-party clients (sets
# VENV), a scratch dir removed on exit (sets scratch), and `start_sim`.

VENV="target/interop-venv"
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c 'import importlib.metadata as m; assert m.version("pytdx") == "1.72" and m.version("eltdx") == "3.3.0" and m.version("tdxrs") == "0.6.7"' 2>/dev/null; then
    "$VENV/bin/pip" install --quiet --disable-pip-version-check pytdx==1.72 eltdx==3.3.0 tdxrs==0.6.7
fi

scratch="$(mktemp -d)"
server_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
    rm -rf "$scratch"
}
trap cleanup EXIT

# start_sim BINARY SERVERS SEED: runs `tdx-sim serve` on ephemeral 127.0.0.1
# ports until exit and sets hosts (IP:PORT,...) once all of them listen.
start_sim() {
    "$1" serve --servers "$2" --base-port 0 --seed "$3" >"$scratch/ports" 2>"$scratch/server.log" &
    server_pid=$!
    for _ in $(seq 100); do
        [ "$(grep -c '^listening 127.0.0.1:' "$scratch/ports" || true)" -ge "$2" ] && break
        sleep 0.1
    done
    hosts="$(sed -n 's/^listening //p' "$scratch/ports" | paste -sd, -)"
    if [ "$(grep -c '^listening 127.0.0.1:' "$scratch/ports" || true)" -lt "$2" ]; then
        echo "tdx-sim did not start" >&2
        cat "$scratch/server.log" >&2
        exit 1
    fi
}
