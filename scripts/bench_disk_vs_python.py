"""Wall time, peak RSS and page faults of a cold `agentprof check disk` against the peer: the
same disk check written on datadog_checks_base + psutil, run once by Python
(scripts/peer_disk_check.py). Several agentprof builds can be measured in the same run
(`--agentprof NAME=PATH`, repeatable), so a change of the build is compared on one machine
state.

Each command is started N times (default 15), interleaved so all see the same machine state.
Wall time: a monotonic clock around spawn-to-exit. Peak RSS and minor page faults: GNU
time's %M and %R (Debian package `time`) in a separate start of the same command, because a
child forked by this Python process inherits Python's own high-water mark in ru_maxrss.
With --drop-caches (root), the page cache is dropped once before the warm-up, so the
binaries are read from disk as a user's installed binary is, not held as the pages the
linker just wrote. Prints medians and the ratios to the peer.

    apt-get install time && cargo build --release
    python3 scripts/bench_disk_vs_python.py --python VENV/bin/python [-n 15] [--drop-caches]
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
            ["/usr/bin/time", "-f", "%M %R", "-o", out.name] + argv,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        rss, faults = (int(x) for x in out.read().split()[-2:])  # KiB, minor faults
    return wall, rss, faults


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default=os.path.join(root, "venv", "bin", "python"))
    ap.add_argument("--agentprof", action="append", default=[],
                    help="NAME=PATH of a build to measure (default: agentprof=target/release/agentprof)")
    ap.add_argument("-n", type=int, default=15)
    ap.add_argument("--drop-caches", action="store_true")
    a = ap.parse_args()
    builds = [b.split("=", 1) if "=" in b else ("agentprof", b) for b in a.agentprof]
    if not builds:
        builds = [("agentprof", paths.binary())]
    cmds = {name: [path, "check", "disk"] for name, path in builds}
    cmds["python"] = [a.python, os.path.join(here, "peer_disk_check.py")]
    if a.drop_caches:
        subprocess.check_call(["sync"])
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    for argv in cmds.values():  # read once from disk into the page cache, as a user's run does
        measure(argv)
    results = {k: [] for k in cmds}
    for _ in range(a.n):
        for k, argv in cmds.items():
            results[k].append(measure(argv))
    med = {}
    for k, rs in results.items():
        med[k] = tuple(statistics.median(r[i] for r in rs) for i in range(3))
        wall, rss, faults = med[k]
        print("%-12s median wall %8.2f ms   peak RSS %7d KiB   minor faults %6d   (%d runs)"
              % (k, wall * 1e3, rss, faults, a.n))
    pw, pr, _ = med["python"]
    for name, _ in builds:
        aw, ar, _ = med[name]
        print("%s/python: wall %.4f (target <= 0.03), peak RSS %.3f; peak RSS %.2f MiB (target <= 3.5)"
              % (name, aw / pw, ar / pr, ar / 1024))


if __name__ == "__main__":
    main()
