"""What running a small Python check costs through agentprof, against the peer: the same
check run once by python with datadog_checks_base's test stubs (what a check author does
without the Agent). Also the worker's start cost and the overhead cProfile adds.

    cargo build --release
    python3 scripts/bench_python_check.py --python venv/bin/python [-n 15]

Medians of N starts each, interleaved.
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

import paths  # scripts/paths.py: where cargo puts the binaries

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

PEER = """
import sys
sys.path.insert(0, %r)
from small import SmallCheck
check = SmallCheck("small", {}, [{}])
error = check.run()
if error:
    raise SystemExit(error)
"""


def wall(argv, env=None):
    t0 = time.perf_counter()
    subprocess.check_call(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default=os.path.join(ROOT, "venv", "bin", "python"))
    ap.add_argument("--agentprof", default=paths.binary())
    ap.add_argument("-n", type=int, default=15)
    a = ap.parse_args()
    confd = tempfile.mkdtemp()
    with open(os.path.join(confd, "small.yaml"), "w") as f:
        f.write("instances:\n  - {}\n")
    env = dict(os.environ, AGENTPROF_STATE_DIR=tempfile.mkdtemp())
    base = [a.agentprof, "check", "small", "--python", a.python,
            "--checks", os.path.join(HERE, "bench"), "--confd", confd]
    peer = [a.python, "-c", PEER % os.path.join(HERE, "bench")]

    walls = {"agentprof check": [], "python + stubs": []}
    starts, runs_plain, runs_prof = [], [], []
    for cmd in (base, peer):  # warm the page cache
        wall(cmd, env)
    for _ in range(a.n):
        walls["agentprof check"].append(wall(base, env))
        walls["python + stubs"].append(wall(peer, env))
        doc = json.loads(subprocess.check_output(base + ["--json", "-t", "20"], env=env, stderr=subprocess.DEVNULL))
        starts.append(doc["python"]["start_s"])
        runs_plain.append(statistics.median(r["run_time_s"] for r in doc["runs"][1:]))
        doc = json.loads(subprocess.check_output(base + ["--json", "-t", "20", "--profile"], env=env,
                                                 stderr=subprocess.DEVNULL))
        runs_prof.append(statistics.median(r["run_time_s"] for r in doc["runs"][1:]))
    med = {k: statistics.median(v) for k, v in walls.items()}
    for k, v in med.items():
        print("%-16s median wall %8.2f ms  (%d starts)" % (k, v * 1e3, a.n))
    print("agentprof/peer wall: %.2f" % (med["agentprof check"] / med["python + stubs"]))
    print("worker start (spawn to check loaded): median %.2f ms" % (statistics.median(starts) * 1e3))
    p, q = statistics.median(runs_plain), statistics.median(runs_prof)
    print("one run of the check: %.1f us plain, %.1f us under cProfile (x%.2f, +%.1f us)"
          % (p * 1e6, q * 1e6, q / p, (q - p) * 1e6))


if __name__ == "__main__":
    main()
