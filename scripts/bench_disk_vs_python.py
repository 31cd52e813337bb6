"""Wall time and peak RSS of a cold `agentprof check disk` against the peer: the same disk
check written on datadog_checks_base + psutil, run once by Python (scripts/peer_disk_check.py).

Each command is started N times (default 15), interleaved so both see the same machine state.
Wall time: a monotonic clock around spawn-to-exit. Peak RSS: GNU time's %M (Debian package
`time`) in a separate start of the same command, because a child forked by this Python
process inherits Python's own high-water mark in ru_maxrss. Prints medians and the
agentprof/peer ratios.

    apt-get install time && cargo build --release
    python3 scripts/bench_disk_vs_python.py --python venv/bin/python [-n 15]
"""

import argparse
import os
import statistics
import subprocess
import tempfile
import time

import paths  # noqa: E402  (scripts/paths.py: where cargo puts the binaries)


def measure(argv):
    t0 = time.perf_counter()
    rc = subprocess.call(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    if rc != 0:
        raise SystemExit("%s exited %d" % (argv, rc))
    with tempfile.NamedTemporaryFile("r") as out:
        subprocess.check_call(
            ["/usr/bin/time", "-f", "%M", "-o", out.name] + argv,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        rss = int(out.read().split()[-1])  # KiB
    return wall, rss


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default=os.path.join(root, "venv", "bin", "python"))
    ap.add_argument("--agentprof", default=paths.binary())
    ap.add_argument("-n", type=int, default=15)
    a = ap.parse_args()
    cmds = {
        "agentprof": [a.agentprof, "check", "disk"],
        "python": [a.python, os.path.join(here, "peer_disk_check.py")],
    }
    for argv in cmds.values():  # warm the page cache for both
        measure(argv)
    results = {k: [] for k in cmds}
    for _ in range(a.n):
        for k, argv in cmds.items():
            results[k].append(measure(argv))
    med = {}
    for k, rs in results.items():
        wall = statistics.median(r[0] for r in rs)
        rss = statistics.median(r[1] for r in rs)
        med[k] = (wall, rss)
        print("%-10s median wall %8.2f ms   median peak RSS %7d KiB   (%d runs)" % (k, wall * 1e3, rss, a.n))
    (aw, ar), (pw, pr) = med["agentprof"], med["python"]
    print("agentprof/python: wall %.3f (target <= 0.10), peak RSS %.3f (target <= 0.25)" % (aw / pw, ar / pr))


if __name__ == "__main__":
    main()
