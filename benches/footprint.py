#!/usr/bin/env python3
"""The code a request runs: how many distinct instructions and 64-byte
cache lines the request path executes, per function.

A request path that does not fit in the 32 KiB L1 instruction cache
fetches its code again on every request
(benches/results/2026-12-01-cachegrind-l1.md). Callgrind counts instructions, not fetches; this
reads its per-instruction dump and counts the hot code: instructions
executed at least `--share` times per request (default 0.5), and the
distinct cache lines they sit on.

    valgrind --tool=callgrind --dump-instr=yes \\
        --toggle-collect='*task::raw::poll*' --callgrind-out-file=OUT \\
        target/release/deps/loopback-HASH --only light/2x4 --seconds 2
    python3 benches/footprint.py OUT [--top N] [--share S]

with `TDX_BENCH_CLIENTS=engine` (or `raw`) and `TDX_BENCH_FLAVORS=external`.
`--toggle-collect` keeps only what runs inside tokio task polls (the
callers' and connections' tasks), not the bench's setup on its main
thread. Requests are counted as calls of the bench's `Caller::next`.
"""

import argparse
import collections
import re

NAMED = re.compile(r"c?fn=\((\d+)\)(?: (.*))?")


def read(path):
    """Self cost per instruction address, the function of each, and the
    calls made to each function (by name)."""
    cost = collections.Counter()
    function_of = {}
    names = {}
    calls = collections.Counter()
    current, callee, address, call_line = None, None, 0, False
    for line in open(path, errors="replace"):
        if line.startswith(("fn=", "cfn=")):
            m = NAMED.match(line.rstrip("\n"))
            key = line.rstrip("\n").split("=", 1)[1]
            if m:
                key = m.group(1)
                if m.group(2):
                    names[key] = m.group(2)
            if line.startswith("fn="):
                current = key
            else:
                callee = key
            continue
        if line.startswith("calls="):
            calls[callee] += int(line.split()[0][len("calls="):])
            call_line = True
            continue
        if not line or line[0] not in "0123456789+-*":
            continue
        fields = line.split()
        position = fields[0]
        if position.startswith("0x"):
            address = int(position, 16)
        elif position[0] in "+-":
            address += int(position)
        elif position != "*":
            address = int(position)
        if call_line:
            # The inclusive cost of the call just named, not this instruction's.
            call_line = False
            continue
        if len(fields) >= 3:
            cost[address] += int(fields[2])
            function_of[address] = current
    name = lambda key: names.get(key, key)
    return cost, {a: name(f) for a, f in function_of.items()}, {name(f): n for f, n in calls.items()}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("callgrind_out")
    p.add_argument("--top", type=int, default=25, help="functions to list, by hot lines")
    p.add_argument("--share", type=float, default=0.5, help="executions per request that make an instruction hot")
    args = p.parse_args()
    cost, function_of, calls = read(args.callgrind_out)
    requests = sum(n for f, n in calls.items() if f.endswith("Caller::next"))
    if requests == 0:
        raise SystemExit("no calls of Caller::next: not a loopback bench run?")
    hot = {a: n for a, n in cost.items() if n >= requests * args.share}
    lines = {a >> 6 for a in hot}
    print(f"requests {requests}")
    print(f"instructions executed per request {sum(cost.values()) / requests:.0f}")
    print(f"hot instructions {len(hot)}, on {len(lines)} cache lines ({len(lines) * 64 / 1024:.1f} KiB)")
    per = collections.defaultdict(set)
    for a in hot:
        per[function_of[a]].add(a)
    print(f"\n{'lines':>5} {'instr':>5}  function")
    for f, addrs in sorted(per.items(), key=lambda kv: -len({a >> 6 for a in kv[1]}))[: args.top]:
        print(f"{len({a >> 6 for a in addrs}):5d} {len(addrs):5d}  {f[:160]}")


if __name__ == "__main__":
    main()
