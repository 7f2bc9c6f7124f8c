"""What the interop and gateway check scripts share: a tally of named
checks, equality with the two sides shown, and `tdx-sim truth` as JSON."""

import json
import subprocess

CHECKS = {"passed": 0, "failed": 0}
# The first word of every check's name: the methods a script covered.
METHODS = set()


def check(name, ok, detail=""):
    METHODS.add(name.split(" ")[0])
    if ok:
        CHECKS["passed"] += 1
    else:
        CHECKS["failed"] += 1
        print(f"FAIL {name}: {detail}", flush=True)


def eq(name, got, want):
    # Cut long sides: a failing page of rows would drown the log.
    check(name, got == want, f"got {str(got)[:400]}, want {str(want)[:400]}")


def summary(what):
    """Prints the closing line; the script's exit status."""
    print(f"{what}: {CHECKS['passed']} passed, {CHECKS['failed']} failed", flush=True)
    return 1 if CHECKS["failed"] else 0


class Truth:
    """`tdx-sim truth` for one seed: `Truth(sim, seed)("bars", "sz000001")`."""

    def __init__(self, sim, seed):
        self.sim, self.seed = sim, seed

    def __call__(self, *query):
        out = subprocess.run([self.sim, "truth", "--seed", str(self.seed), *map(str, query)],
                             check=True, capture_output=True, text=True).stdout
        return json.loads(out)
