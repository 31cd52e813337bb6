#!/usr/bin/env python3
"""agentprof ui on large inputs, for the figures its issue asks for.

Builds a directory of N profiles (default 10,000) in k8s's layout
(<namespace>/<pod>/<container>/<type>-<time>.pb.gz, with a captures.jsonl line for each
capture), adds one large real Go heap profile (tests/go/pprofsvc -bigheap B, pulled as
scripts/bench_delta.py pulls it), serves it all with `agentprof ui`, and measures, as
medians of -n runs:

- the listing: GET /api/profiles after the listing's time to live (a full rescan: every
  directory read, every file stat'ed, captures.jsonl re-read when it changed), its size;
- the large profile, its file touched first so nothing of it is cached: time to first byte
  and to the whole answer of /api/top (the file read, decoded, the top table made), then of
  /api/flamegraph.svg (the decoded profile cached, the flamegraph drawn), of the
  flamegraph alone when nothing is cached, and of both asked at once as the page asks;
- the listing's changes after one new capture (`?since=`), and the listing gzip-compressed;
- the page's weight (/, /app.js, /app.css, /favicon.svg);
- with --browser, the time from opening the large profile's page in Chromium to its
  flamegraph drawn (scripts/bench_ui.mjs).

    python3 scripts/bench_ui.py [--profiles 10000] [--bigheap 18] [-n 5]
                                [--agentprof target/release/agentprof] [--browser]
"""

import argparse
import concurrent.futures
import gzip
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from bench_delta import pull_heaps  # noqa: E402
import paths  # noqa: E402  (scripts/paths.py: where cargo puts the binaries)


def timed_get(host, port, path):
    """(status, seconds to the first byte, seconds to the last, body)."""
    c = http.client.HTTPConnection(host, port, timeout=120)
    t0 = time.perf_counter()
    c.request("GET", path)
    r = c.getresponse()
    first = time.perf_counter() - t0
    body = r.read()
    total = time.perf_counter() - t0
    c.close()
    return r.status, first, total, body


def corpus(root, n):
    fixture = os.path.join(ROOT, "tests/fixtures/dd-trace-go-upload")
    blobs = {}
    for t, f in [("cpu", "cpu.pprof"), ("heap", "delta-heap.pprof"),
                 ("goroutine", "goroutines.pprof"), ("block", "delta-block.pprof")]:
        with open(os.path.join(fixture, f), "rb") as fh:
            blobs[t] = gzip.compress(fh.read(), 1)
    types = list(blobs)
    lines = []
    made = 0
    pod = 0
    while made < n:
        d = os.path.join(root, "shop", f"cart-{pod:04d}", "app")
        os.makedirs(d, exist_ok=True)
        for cap in range(50):
            if made >= n:
                break
            stamp = f"2026-12-01T{cap // 60 % 24:02d}:{cap % 60:02d}:00.000Z"
            files = []
            for t in types:
                if made >= n:
                    break
                name = f"{t}-{stamp}.pb.gz"
                with open(os.path.join(d, name), "wb") as fh:
                    fh.write(blobs[t])
                files.append({"type": t, "files": [f"out/shop/cart-{pod:04d}/app/{name}"]})
                made += 1
            lines.append(json.dumps({
                "time": stamp, "target": f"shop/cart-{pod:04d}/app", "namespace": "shop",
                "pod": f"cart-{pod:04d}", "container": "app",
                "cause": "scheduled" if cap % 10 else "resource_threshold",
                "trigger": None if cap % 10 else {"level": "normal", "metric": "memory", "value": 95.0,
                                                  "threshold": 90, "unit": "percent"},
                "tags": [f"pod:cart-{pod:04d}"], "profiles": files}))
        pod += 1
    with open(os.path.join(root, "captures.jsonl"), "w") as fh:
        fh.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--profiles", type=int, default=10000)
    ap.add_argument("--bigheap", type=int, default=18)
    ap.add_argument("-n", type=int, default=5)
    ap.add_argument("--agentprof", default=paths.binary())
    ap.add_argument("--browser", action="store_true")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="agentprof-ui-bench-", dir=os.path.join(ROOT, "target"))
    try:
        root = os.path.join(work, "profiles")
        corpus(root, a.profiles)
        heaps = pull_heaps(a.bigheap, 0.5, work)
        big_dir = os.path.join(root, "big")
        os.makedirs(big_dir)
        big = os.path.join(big_dir, "heap-2026-12-02T00:00:00.000Z.pb.gz")
        shutil.copy(heaps[0], big)
        with gzip.open(big) as g:
            raw = len(g.read())
        p = subprocess.Popen([a.agentprof, "ui", root, "--listen", "127.0.0.1:0"],
                             stderr=subprocess.PIPE, text=True, env={**os.environ, "AGENTPROF_CONFIG": ""})
        try:
            line = p.stderr.readline()
            base = line.split("serving ")[1].split()[0].rstrip("/")
            host, port = base.removeprefix("http://").split(":")
            port = int(port)
            big_id = "0/big/heap-2026-12-02T00:00:00.000Z.pb.gz"
            q = big_id.replace("/", "%2F").replace(":", "%3A")
            listing, top_first, top_all, flame_after, flame_cold = [], [], [], [], []
            together = []
            size = 0
            count = 0
            for _ in range(a.n):
                time.sleep(1.1)  # past the listing's time to live: a full rescan
                st, _, total, body = timed_get(host, port, "/api/profiles")
                assert st == 200, body[:300]
                listing.append(total)
                size = len(body)
                count = len(json.loads(body)["entries"])
                os.utime(big)  # nothing of it cached
                st, first, total, body = timed_get(host, port, f"/api/top?id={q}")
                assert st == 200, body[:300]
                top_first.append(first)
                top_all.append(total)
                st, _, total, body = timed_get(host, port, f"/api/flamegraph.svg?id={q}")
                assert st == 200, body[:300]
                flame_after.append(total)
                os.utime(big)
                st, _, total, _ = timed_get(host, port, f"/api/flamegraph.svg?id={q}")
                flame_cold.append(total)
                # As the page asks: the table and the flamegraph at once, nothing cached.
                os.utime(big)
                t0 = time.perf_counter()
                with concurrent.futures.ThreadPoolExecutor(2) as ex:
                    got = list(ex.map(lambda path: timed_get(host, port, path),
                                      [f"/api/top?id={q}", f"/api/flamegraph.svg?id={q}"]))
                together.append(time.perf_counter() - t0)
                assert all(g[0] == 200 for g in got)
            # What a page that has the listing is sent after one new capture, and the whole
            # listing gzip-compressed as a browser asks for it.
            c = http.client.HTTPConnection(host, port, timeout=120)
            c.request("GET", "/api/profiles")
            r = c.getresponse()
            tag = r.getheader("ETag")
            r.read()
            new = os.path.join(root, "big", "heap-2026-12-02T00:01:00.000Z.pb.gz")
            shutil.copy(heaps[0], new)
            time.sleep(1.1)
            c.request("GET", "/api/profiles?since=" + tag.replace('"', "%22"))
            r = c.getresponse()
            changes = r.read()
            assert r.status == 200 and b'"changed"' in changes, changes[:300]
            c.request("GET", "/api/profiles", headers={"Accept-Encoding": "gzip"})
            r = c.getresponse()
            zipped = r.read()
            assert r.getheader("Content-Encoding") == "gzip"
            c.close()
            os.remove(new)
            weight = {}
            for path in ["/", "/app.js", "/app.css", "/favicon.svg"]:
                weight[path] = len(timed_get(host, port, path)[3])
            report = {
                "profiles_listed": count,
                "listing_s": statistics.median(listing),
                "listing_bytes": size,
                "large_profile": {"file_bytes": os.path.getsize(big), "decompressed_bytes": raw},
                "top_first_byte_s": statistics.median(top_first),
                "top_s": statistics.median(top_all),
                "flamegraph_after_top_s": statistics.median(flame_after),
                "flamegraph_cold_s": statistics.median(flame_cold),
                "top_and_flamegraph_together_cold_s": statistics.median(together),
                "listing_changes_bytes": len(changes),
                "listing_gzip_bytes": len(zipped),
                "page_bytes": weight,
                "page_bytes_total": sum(weight.values()),
                "runs": a.n,
            }
            if a.browser:
                out = subprocess.run(["node", os.path.join(ROOT, "scripts/bench_ui.mjs"), base, big_id],
                                     capture_output=True, text=True, check=True)
                report["browser"] = json.loads(out.stdout)
            print(json.dumps(report, indent=2))
        finally:
            p.terminate()
            p.wait()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
