#!/usr/bin/env python3
"""The delta of a large Go heap profile: `agentprof delta`, timed.

Builds tests/go/pprofsvc, starts it with -bigheap N (2^N distinct allocation stacks at start,
MemProfileRate 1), pulls /debug/pprof/heap twice a few seconds apart (the service allocates
along new stacks meanwhile, so the second lists new stacks first and numbers its locations
anew, as a live service's do), then runs `agentprof delta FIRST SECOND -o OUT --json` -n
times after a warm-up and prints the medians of what it reports: `delta_s` (the subtraction
on the decoded bytes) and `inflate_s` (gunzipping both). With --baseline BIN, that binary
is run alternately with the same files, for a before/after comparison in one run.

    python3 scripts/bench_delta.py [--bigheap 18] [-n 15] [--agentprof target/release/agentprof]
                                   [--baseline OTHER_AGENTPROF] [--keep DIR]
"""

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

import paths  # noqa: E402  (scripts/paths.py: where cargo puts the binaries)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pull_heaps(bigheap, wait, out_dir):
    svc = os.path.join(out_dir, "pprofsvc")
    subprocess.run(["go", "build", "-o", svc, "."], cwd=os.path.join(ROOT, "tests/go/pprofsvc"),
                   check=True)
    p = subprocess.Popen([svc, "-bigheap", str(bigheap)], stdout=subprocess.PIPE, text=True)
    try:
        addr = p.stdout.readline().split()[0]
        paths = []
        for i in (1, 2):
            if i == 2:
                time.sleep(wait)
            with urllib.request.urlopen(f"http://{addr}/debug/pprof/heap", timeout=60) as r:
                body = r.read()
            path = os.path.join(out_dir, f"heap{i}.pb.gz")
            with open(path, "wb") as f:
                f.write(body)
            paths.append(path)
        return paths
    finally:
        p.kill()
        p.wait()


def run(binary, a, b, out):
    p = subprocess.run([binary, "delta", a, b, "-o", out, "--json"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, check=False)
    if p.returncode != 0:
        print(f"{binary} failed: {p.stderr.decode()[:500]}")
        sys.exit(1)
    return json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bigheap", type=int, default=18)
    ap.add_argument("--wait", type=float, default=3.0, help="seconds between the two pulls")
    ap.add_argument("-n", type=int, default=15)
    ap.add_argument("--agentprof", default=paths.binary())
    ap.add_argument("--baseline", help="another agentprof binary, run alternately")
    ap.add_argument("--keep", help="put the two heap profiles here (and reuse them if there)")
    a = ap.parse_args()
    d = a.keep or tempfile.mkdtemp()
    os.makedirs(d, exist_ok=True)
    first, second = os.path.join(d, "heap1.pb.gz"), os.path.join(d, "heap2.pb.gz")
    if not (os.path.exists(first) and os.path.exists(second)):
        first, second = pull_heaps(a.bigheap, a.wait, d)
    raw = [len(gzip.open(p).read()) for p in (first, second)]
    print(f"heap profiles: {raw[0] / 1e6:.1f} MB and {raw[1] / 1e6:.1f} MB decoded "
          f"({os.path.getsize(first) / 1e6:.1f} / {os.path.getsize(second) / 1e6:.1f} MB gzipped)")
    binaries = [a.agentprof] + ([a.baseline] if a.baseline else [])
    out = os.path.join(d, "delta.pb.gz")
    for b in binaries:
        run(b, first, second, out)  # warm-up: page cache, binary
    results = {b: [] for b in binaries}
    for _ in range(a.n):
        for b in binaries:
            results[b].append(run(b, first, second, out))
    for b in binaries:
        ds = [r["delta_s"] * 1e3 for r in results[b]]
        inf = [r["inflate_s"] * 1e3 for r in results[b]]
        print(f"{b}: delta median {statistics.median(ds):.1f} ms (min {min(ds):.1f}, max {max(ds):.1f}), "
              f"inflating both {statistics.median(inf):.1f} ms; {results[b][0]['delta_samples']} stacks in the "
              f"delta; median of {a.n}")


if __name__ == "__main__":
    main()
