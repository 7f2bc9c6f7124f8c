"""Ctrl+C while blocked on a stalled server: the call raises
KeyboardInterrupt, the engine cancels the request and closes cleanly."""

import json
import os
import signal
import subprocess
import sys
import time

CHILD = r"""
import json, sys, time
import tdx_engine
client = tdx_engine.Client([sys.argv[1]], timeout=60)
print("calling", flush=True)
try:
    client.bars.get("sz000001", count=800)
    print(json.dumps({"outcome": "returned"}), flush=True)
except KeyboardInterrupt:
    interrupted = time.monotonic()
    # The engine counts the cancel once the core has applied it.
    for _ in range(400):
        sup = client.diagnostics()["supervisor"]
        if sup["counters"]["cancels"] >= 1 and sup["waiting"] == 0 and sup["active"] == 0:
            break
        time.sleep(0.025)
    state = client.close()
    print(json.dumps({"outcome": "KeyboardInterrupt", "cancels": sup["counters"]["cancels"],
                      "waiting": sup["waiting"], "active": sup["active"], "close": state}), flush=True)
"""


def test_ctrl_c_while_blocked(make_sim, tmp_path):
    stalled = make_sim("--stall-per-mille", "1000", "--stall-ms", "600000")
    # Run from a temporary directory: `-c` puts the working directory on
    # sys.path, where python/'s source package would shadow the installed one.
    child = subprocess.Popen([sys.executable, "-c", CHILD, stalled.hosts[0]], stdout=subprocess.PIPE, text=True,
                             cwd=tmp_path, env={**os.environ, "TDX_ENGINE_LOOPBACK_ONLY": "1"})
    try:
        assert child.stdout.readline().strip() == "calling"
        time.sleep(0.5)  # let the call block on the stalled server
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=20)
        took = time.monotonic() - sent
    finally:
        child.kill()
    report = json.loads(out.strip().splitlines()[-1])
    # Well before the engine's 60 s deadline: the interrupt ended the call, not the deadline.
    print(f"SIGINT to exit: {took:.3f} s")
    assert report["outcome"] == "KeyboardInterrupt", report
    assert report["cancels"] >= 1 and report["waiting"] == 0 and report["active"] == 0, report
    assert report["close"] == "Closed", report
    assert child.returncode == 0
