#!/usr/bin/env python3
"""How reliable `agentprof gate` is on this machine: the false-positive rate of an unchanged
check, the slowdowns it catches, and how long a gate run takes.

    python3 scripts/bench_gate.py --python VENV/bin/python [-n 20] [--tries 5] [--times 10]

The Python check does `work` iterations of a pure-Python loop (2 ms at 20000); a slowdown of
x is `work` multiplied by x. Also gates the built-in `cpu` check unchanged. Needs a release
build (cargo build --release) and a Python with datadog-checks-base.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import paths  # scripts/paths.py: where cargo puts the binaries

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = paths.binary()

CHECK = """
from datadog_checks.base import AgentCheck

class WorkCheck(AgentCheck):
    def check(self, instance):
        total = 0
        for i in range(int(instance["work"])):
            total += i * i
        self.gauge("work.total", total)
"""


def gate(d, args):
    t0 = time.perf_counter()
    r = subprocess.run([BIN, "gate", *args, "--format", "json"], cwd=d, capture_output=True, text=True)
    took = time.perf_counter() - t0
    if r.returncode not in (0, 1):
        sys.exit("gate failed (%d): %s" % (r.returncode, r.stderr))
    doc = json.loads(r.stdout)
    wall = next(f for f in doc["findings"] if f["figure"].startswith("wall time"))
    return r.returncode == 1, wall, took


def unchanged(d, args, n, label):
    flagged, took, changes = 0, [], []
    for _ in range(n):
        bad, wall, t = gate(d, args)
        flagged += bad
        took.append(t)
        changes.append(wall["change"])
    print("%s, unchanged: %d of %d gate runs flagged; wall-time changes %s" % (label, flagged, n, " ".join(changes)))
    print("%s, gate run time: median %.2f s (%.2f-%.2f s)" % (label, statistics.median(took), min(took), max(took)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True)
    ap.add_argument("-n", type=int, default=20, help="unchanged gate runs")
    ap.add_argument("--tries", type=int, default=5, help="gate runs per slowdown")
    ap.add_argument("--slowdowns", default="1.1,1.2,1.3,1.5,2,4")
    ap.add_argument("--times", default="10", help="the gate's --times")
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="agentprof-gate-bench-")
    os.makedirs(os.path.join(d, "checks"))
    os.makedirs(os.path.join(d, "conf.d"))
    with open(os.path.join(d, "checks", "work.py"), "w") as f:
        f.write(CHECK)

    def conf(work):
        with open(os.path.join(d, "conf.d", "work.yaml"), "w") as f:
            f.write("instances:\n  - work: %d\n" % work)

    py = ["work", "--baseline", "base.json", "--python", a.python, "--times", a.times]
    conf(20000)
    subprocess.run([BIN, "gate", *py, "--update-baseline"], cwd=d, check=True, capture_output=True)
    unchanged(d, py, a.n, "python check")
    for x in [float(s) for s in a.slowdowns.split(",")]:
        conf(int(20000 * x))
        caught, changes = 0, []
        for _ in range(a.tries):
            bad, wall, _ = gate(d, py)
            caught += bad
            changes.append(wall["change"])
        print("python check, work x%g: caught %d of %d (wall-time changes %s)" % (x, caught, a.tries, " ".join(changes)))
    cpu = ["cpu", "--baseline", "cpu.json", "--confd", os.path.join(d, "empty"), "--times", a.times]
    os.makedirs(os.path.join(d, "empty"))
    subprocess.run([BIN, "gate", *cpu, "--update-baseline"], cwd=d, check=True, capture_output=True)
    unchanged(d, cpu, a.n, "built-in cpu check")


if __name__ == "__main__":
    main()
