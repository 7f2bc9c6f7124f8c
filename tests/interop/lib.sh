# Sourced by the interop tests and the peer benchmarks (from the repository
# root): a venv under target/ with the pinned third-party clients, mootdx
# (for its file readers) and pyarrow (the reader `tdx sync`'s store is
# checked with) (sets
# VENV), then `loopback_only`, which re-runs the calling script inside a
# fresh network namespace with only loopback up (the network rule: third-
# party clients can reach nothing but 127.0.0.1), a scratch dir removed on
# exit (sets scratch), and `start_sim`.

# shellcheck source=ci/lib.sh
source ci/lib.sh
VENV="target/interop-venv"
pinned_venv "$VENV" pytdx==1.72 eltdx==3.3.0 tdxrs==0.6.7 pyarrow==26.0.1 mootdx==0.11.7

# loopback_only SCRIPT ARGS...: unless already inside, re-executes SCRIPT in
# a new network namespace where only `lo` is up. Everything that needs the
# package registries (the venv above, cargo builds) must happen before.
loopback_only() {
    if [ "${TDX_LOOPBACK_NETNS:-}" = 1 ]; then
        return 0
    fi
    needs_ip
    exec unshare --net env TDX_LOOPBACK_NETNS=1 bash -c 'ip link set lo up && exec bash "$@"' bash "$@"
}

# make_scratch: a scratch dir removed on exit, and the server's cleanup.
make_scratch() {
    scratch="$(mktemp -d)"
    server_pid=""
    trap 'cleanup_scratch' EXIT
}

cleanup_scratch() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
    rm -rf "$scratch"
}

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
