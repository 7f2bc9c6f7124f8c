"""Fixtures: `tdx-sim serve` on loopback ports (seed 7) and its `truth`.

The simulator binary is $TDX_SIM, else target/debug/tdx-sim (or
target/release/tdx-sim) of the repository this package sits in. The
engine is held to loopback (TDX_ENGINE_LOOPBACK_ONLY=1).
"""

import json
import os
import pathlib
import subprocess
import time

import pytest

os.environ["TDX_ENGINE_LOOPBACK_ONLY"] = "1"

import tdx_engine  # noqa: E402

SEED = 7
REPO = pathlib.Path(__file__).resolve().parents[2]


def pytest_sessionfinish(session, exitstatus):
    """Under run.sh (TDX_PYTEST_NO_SKIPS=1) every pinned dependency is
    installed, so a skipped test is a broken pin: the run fails."""
    if os.environ.get("TDX_PYTEST_NO_SKIPS") != "1":
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter is not None else []
    for report in skipped:
        reporter.write_line(f"skipped, which run.sh does not allow: {report.nodeid}: {report.longrepr}")
    if skipped:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def sim_binary() -> str:
    if os.environ.get("TDX_SIM"):
        return os.environ["TDX_SIM"]
    for profile in ("debug", "release"):
        path = REPO / "target" / profile / "tdx-sim"
        if path.exists():
            return str(path)
    pytest.exit("tdx-sim not found: build it (cargo build -p tdx-sim) or set TDX_SIM", returncode=2)


class Sim:
    """`tdx-sim serve` with the given flags on ephemeral 127.0.0.1 ports."""

    def __init__(self, tmp: pathlib.Path, servers: int = 2, *flags: str) -> None:
        self.log = open(tmp / f"sim-{os.getpid()}-{time.monotonic_ns()}.log", "w+")
        self.proc = subprocess.Popen(
            [sim_binary(), "serve", "--servers", str(servers), "--base-port", "0", "--seed", str(SEED), *flags],
            stdout=subprocess.PIPE, stderr=self.log, text=True,
        )
        self.hosts = []
        while len(self.hosts) < servers:
            line = self.proc.stdout.readline()
            if not line:
                self.log.seek(0)
                raise RuntimeError(f"tdx-sim serve exited: {self.log.read()}")
            if line.startswith("listening "):
                self.hosts.append(line.split()[1])

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self.log.close()


@pytest.fixture(scope="session")
def sim(tmp_path_factory):
    s = Sim(tmp_path_factory.mktemp("sim"))
    yield s
    s.close()


@pytest.fixture(scope="session")
def make_sim(tmp_path_factory):
    """Starts extra servers with fault flags; all are stopped at the end."""
    started = []

    def make(*flags: str, servers: int = 1) -> Sim:
        s = Sim(tmp_path_factory.mktemp("faulty"), servers, *flags)
        started.append(s)
        return s

    yield make
    for s in started:
        s.close()


@pytest.fixture(scope="session")
def client(sim):
    c = tdx_engine.Client(sim.hosts, timeout=20)
    yield c
    c.close()


@pytest.fixture(scope="session")
def truth():
    def run(*args: str):
        out = subprocess.run([sim_binary(), "truth", "--seed", str(SEED), *args],
                             check=True, capture_output=True, text=True)
        return json.loads(out.stdout)

    return run


@pytest.fixture(scope="session")
def past_day(truth):
    """A past trading day the history commands serve (YYYYMMDD)."""
    return int(truth("dates")["dates"][-2].replace("-", ""))
