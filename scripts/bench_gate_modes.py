#!/usr/bin/env python3
"""The gate's three modes on a busy machine: false alarms on an unchanged check, what each
catches, how the 50 % slowdown is reported, and how long a gate run takes.

    python3 scripts/bench_gate_modes.py --python VENV/bin/python [-n 50] [-m 20] [--load 2]

Starts `--load` CPU-bound processes beside the gate (they stop with the script). The Python
check does `work` iterations of a pure-Python loop; a slowdown of x multiplies them by x.
Modes: `instructions` (--measure instructions against a baseline file), `ab` (--against a
directory holding the unchanged version) and `baseline` (CPU time against a baseline file
made at the start, under the same load). Needs a built agentprof (release or debug:
scripts/paths.py) and a Python with datadog-checks-base; instructions need valgrind.
"""

import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import paths  # scripts/paths.py: where cargo puts the binaries

BIN = paths.binary(profile=os.environ.get("AGENTPROF_PROFILE", "release"))

CHECK = """
from datadog_checks.base import AgentCheck

class WorkCheck(AgentCheck):
    def check(self, instance):
        total = 0
        for i in range(int(instance["work"] * SLOW)):
            total = (total * 31 + i) & 0xFFFFFF
        self.gauge("work.total", total)

SLOW = %s
"""


MIXED = """
import hashlib
from datadog_checks.base import AgentCheck

def _step(x):
    return (x * 31 + 7) & 0xFFFF

class WorkCheck(AgentCheck):
    def check(self, instance):
        data = b"x" * 256
        x = 0
        for i in range(int(instance["work"] * SLOW)):
            x = _step(x)
            if i %% 8 == 0:
                data = hashlib.sha256(data).digest() * 8
        self.gauge("work.total", x)

SLOW = %s
"""


# An exec plugin doing a built-in's kind of work in compiled code (awk): its argument's
# iterations times the slowdown written into it.
EXEC = """#!/bin/sh
awk -v n="$1" -v slow=%s 'BEGIN { s = 0; for (i = 0; i < n * slow; i++) s = (s * 31 + i) %% 65536; printf "work.total:%%d|g\\n", s }'
"""


def busy():
    x = 0
    while True:
        x = (x * 31 + 7) & 0xFFFF


def write(d, slow, template=None):
    path = os.path.join(d, "checks", "work.sh")
    if os.path.exists(path):
        with open(path, "w") as f:
            f.write(EXEC % slow)
        return
    with open(os.path.join(d, "checks", "work.py"), "w") as f:
        f.write((template or CHECK) % slow)



def gate(d, py, args):
    t0 = time.perf_counter()
    r = subprocess.run([BIN, "gate", "work", "--python", py, "--format", "json", *args],
                       cwd=d, capture_output=True, text=True)
    took = time.perf_counter() - t0
    if r.returncode not in (0, 1):
        sys.exit("gate failed (%d): %s" % (r.returncode, r.stderr))
    doc = json.loads(r.stdout)
    return doc["outcome"], doc["findings"][0]["change"], doc.get("detectable_slowdown_pct"), took


MODES = {
    "instructions": ["--baseline", "base-i.json", "--measure", "instructions"],
    "ab": ["--against", "old"],
    "baseline": ["--baseline", "base-c.json"],
}


def series(d, py, mode, slow, n):
    write(d, slow)
    out = [gate(d, py, MODES[mode]) for _ in range(n)]
    outcomes = [o for o, _, _, _ in out]
    changes = [c for _, c, _, _ in out]
    detect = [x for _, _, x, _ in out if x is not None]
    took = [t for _, _, _, t in out]
    print("%-12s %.2fx: %2d regression, %2d cannot tell, %2d pass of %d; changes %s; "
          "detectable median +%.1f%%; gate run median %.1f s" % (
              mode, slow, outcomes.count("regression"), outcomes.count("cannot_tell"),
              outcomes.count("pass"), n, " ".join(changes),
              statistics.median(detect) if detect else float("nan"), statistics.median(took)),
          flush=True)


def check_cpu_ms(d, py):
    """`agentprof check work -t 5 --json`: the median CPU of its runs, milliseconds."""
    r = subprocess.run([BIN, "check", "work", "-t", "5", "--json", "--python", py], cwd=d,
                       capture_output=True, text=True, check=True)
    runs = json.loads(r.stdout)["runs"]
    return statistics.median((x["cpu"]["user_s"] + x["cpu"]["system_s"]) * 1e3 for x in runs)


def mixed(d, py, n):
    """A check mixing Python calls with C hashing made 1.5x slower: what `check` says, and
    what the gate reports in each timing mode."""
    write(d, 1.0, MIXED)
    shutil.copy(os.path.join(d, "checks", "work.py"), os.path.join(d, "old", "work.py"))
    before = check_cpu_ms(d, py)
    subprocess.run([BIN, "gate", "work", "--python", py, "--baseline", "base-m.json",
                    "--update-baseline"], cwd=d, check=True, capture_output=True)
    write(d, 1.5, MIXED)
    after = check_cpu_ms(d, py)
    print("mixed check 1.5x: agentprof check -t 5 CPU %.2f -> %.2f ms (%+.1f%%)" % (
        before, after, (after / before - 1) * 100), flush=True)
    for label, args in (("baseline", ["--baseline", "base-m.json"]), ("ab", ["--against", "old"])):
        changes = [gate(d, py, args)[1] for _ in range(n)]
        print("mixed check 1.5x, %s: gate CPU changes %s" % (label, " ".join(changes)), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True)
    ap.add_argument("-n", type=int, default=50, help="unchanged gate runs per mode")
    ap.add_argument("-m", type=int, default=20, help="slowed gate runs per mode and slowdown")
    ap.add_argument("--load", type=int, default=2, help="CPU-bound processes beside the gate")
    ap.add_argument("--work", type=int, default=10000)
    ap.add_argument("--modes", default="instructions,ab,baseline")
    ap.add_argument("--slow", default="",
                    help="slowdowns to gate, comma-separated (default: 1.1 or 1.5, then 1.5)")
    ap.add_argument("--skip-mixed", action="store_true", help="leave out the mixed check")
    ap.add_argument("--exec", action="store_true",
                    help="gate an exec plugin (awk) instead of the Python check")
    a = ap.parse_args()
    load = [multiprocessing.Process(target=busy, daemon=True) for _ in range(a.load)]
    for p in load:
        p.start()
    d = tempfile.mkdtemp(prefix="bench-gate-")
    try:
        os.makedirs(os.path.join(d, "checks"))
        os.makedirs(os.path.join(d, "conf.d"))
        os.makedirs(os.path.join(d, "old"))
        if a.exec:
            for where in ("checks", "old"):
                path = os.path.join(d, where, "work.sh")
                with open(path, "w") as f:
                    f.write(EXEC % 1.0)
                os.chmod(path, 0o755)
            instance = "command: ['%d']" % a.work
        else:
            instance = "work: %d" % a.work
        with open(os.path.join(d, "conf.d", "work.yaml"), "w") as f:
            f.write("instances:\n  - %s\n" % instance)
        write(d, 1.0)
        if not a.exec:
            shutil.copy(os.path.join(d, "checks", "work.py"), os.path.join(d, "old", "work.py"))
        for base in ("base-i.json", "base-c.json"):
            extra = ["--measure", "instructions"] if base == "base-i.json" else []
            subprocess.run([BIN, "gate", "work", "--python", a.python, "--baseline", base,
                            "--update-baseline", *extra], cwd=d, check=True,
                           capture_output=True)
        print("%d CPU-bound processes beside the gate, %d cores" % (a.load, os.cpu_count()))
        print("the check: %.2f ms of CPU a run (agentprof check -t 5)" % check_cpu_ms(d, a.python)
              if not a.exec else "", flush=True)
        for mode in a.modes.split(","):
            if a.n:
                series(d, a.python, mode, 1.0, a.n)
            if a.slow:
                for slow in a.slow.split(","):
                    series(d, a.python, mode, float(slow), a.m)
                continue
            series(d, a.python, mode, 1.1 if mode != "baseline" else 1.5, a.m)
            series(d, a.python, mode, 1.5, max(3, a.m // 4))
        if not a.exec and not a.skip_mixed:
            mixed(d, a.python, max(3, a.m // 4))
    finally:
        shutil.rmtree(d, ignore_errors=True)
        for p in load:
            p.terminate()


if __name__ == "__main__":
    main()
