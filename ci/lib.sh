# Functions the test scripts share; sourcing this file defines them and
# does nothing else. Run from the repository root.

# pinned_venv VENV PIN...: VENV exists and has exactly these `name==version`
# pins installed (pip runs only when one differs).
pinned_venv() {
    local venv="$1"
    shift
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    "$venv/bin/python" -c 'import importlib.metadata as m, sys
pins = dict(p.split("==") for p in sys.argv[1:])
assert all(m.version(k) == v for k, v in pins.items())' "$@" 2>/dev/null ||
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
}

# apt_install PACKAGE...: installs Debian packages, refreshing the package
# lists only when the install fails without them (a fresh machine).
apt_install() {
    apt-get install -y -qq "$@" >/dev/null || { apt-get update -qq && apt-get install -y -qq "$@" >/dev/null; }
}

# needs_ip: the `ip` command (iproute2), for the loopback-only namespace.
needs_ip() {
    command -v ip >/dev/null 2>&1 || apt_install iproute2
}
