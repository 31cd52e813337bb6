#!/usr/bin/env python3
"""agentprof top vs go tool pprof -top on a large CPU profile, side by side.

Writes a CPU profile of about --mib MiB (decoded) shaped like a Go service's: a call graph of
thousands of functions, stacks 8 to 48 frames deep walked through it, some locations with
inlined frames, values in samples/count and cpu/nanoseconds. Then runs both tools -n times on
it (alternating, after a warm-up), checks that their outputs are identical, and prints the
median wall times and the ratio.

    python3 scripts/bench_top_vs_go.py [--mib 8] [-n 7] [--agentprof target/release/agentprof]
"""

import argparse
import gzip
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

import paths  # noqa: E402  (scripts/paths.py: where cargo puts the binaries)


def varint(v):
    out = bytearray()
    v &= (1 << 64) - 1
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def field_varint(num, v):
    return varint(num << 3) + varint(v)


def field_bytes(num, b):
    return varint((num << 3) | 2) + varint(len(b)) + b


def packed(num, values):
    return field_bytes(num, b"".join(varint(v) for v in values))


def build(target_bytes, seed=7):
    rnd = random.Random(seed)
    strings = [""]
    index = {"": 0}

    def s(x):
        if x not in index:
            index[x] = len(strings)
            strings.append(x)
        return index[x]

    nfunc = 6000
    pkgs = [f"github.com/acme/svc/internal/pkg{i}" for i in range(60)]
    funcs = []
    for i in range(nfunc):
        pkg = pkgs[i % len(pkgs)]
        name = f"{pkg}.(*Type{i % 97}).Method{i}" if i % 3 else f"{pkg}.func{i}"
        funcs.append((i + 1, s(name), s(f"/src/{pkg}/file{i % 40}.go"), 10 + i % 300))
    # Each function calls a few others.
    callees = [rnd.sample(range(nfunc), 6) for _ in range(nfunc)]
    locations = {}  # (func index, inlined-into or -1) -> location id
    loc_msgs = []

    def location(fi, inl):
        key = (fi, inl)
        if key in locations:
            return locations[key]
        lid = len(loc_msgs) + 1
        lines = [field_bytes(4, field_varint(1, fi + 1) + field_varint(2, 20 + fi % 50))]
        if inl >= 0:
            lines.append(field_bytes(4, field_varint(1, inl + 1) + field_varint(2, 40 + inl % 50)))
        msg = field_varint(1, lid) + field_varint(2, 1) + field_varint(3, 0x400000 + lid * 16)
        msg += b"".join(lines)
        loc_msgs.append(field_bytes(4, msg))
        locations[key] = lid
        return lid

    samples = []
    size = 0
    roots = list(range(0, nfunc, 150))
    while size < target_bytes * 0.8:
        depth = rnd.randint(8, 48)
        f = rnd.choice(roots)
        stack = []
        for _ in range(depth):
            inl = rnd.choice(callees[f]) if rnd.random() < 0.15 else -1
            stack.append(location(f, inl))
            f = rnd.choice(callees[f])
        stack.reverse()  # leaf first
        n = rnd.randint(1, 5)
        msg = field_bytes(2, packed(1, stack) + packed(2, [n, n * 10_000_000]))
        samples.append(msg)
        size += len(msg)
    out = bytearray()
    out += field_bytes(1, field_varint(1, s("samples")) + field_varint(2, s("count")))
    out += field_bytes(1, field_varint(1, s("cpu")) + field_varint(2, s("nanoseconds")))
    out += b"".join(samples)
    out += field_bytes(3, field_varint(1, 1) + field_varint(2, 0x400000) + field_varint(3, 0x9000000)
                       + field_varint(5, s("/usr/local/bin/acme-svc")) + field_varint(7, 1)
                       + field_varint(8, 1) + field_varint(9, 1) + field_varint(10, 1))
    out += b"".join(loc_msgs)
    for fid, name, file, start in funcs:
        out += field_bytes(5, field_varint(1, fid) + field_varint(2, name) + field_varint(3, name)
                           + field_varint(4, file) + field_varint(5, start))
    for x in strings:
        out += field_bytes(6, x.encode())
    out += field_varint(9, 1_764_000_000_000_000_000)
    out += field_varint(10, 60_000_000_000)
    out += field_bytes(11, field_varint(1, s("cpu")) + field_varint(2, s("nanoseconds")))
    out += field_varint(12, 10_000_000)
    return bytes(out), len(samples)


def timed(cmd):
    t = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    return time.perf_counter() - t, p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=float, default=8)
    ap.add_argument("-n", type=int, default=7)
    ap.add_argument("--agentprof", default=paths.binary())
    a = ap.parse_args()
    raw, nsamples = build(int(a.mib * (1 << 20)))
    d = tempfile.mkdtemp()
    path = os.path.join(d, "cpu.pb.gz")
    with open(path, "wb") as f:
        f.write(gzip.compress(raw, 6))
    print(f"profile: {len(raw) / (1 << 20):.2f} MiB decoded, {os.path.getsize(path) / (1 << 20):.2f} MiB gzipped, "
          f"{nsamples} samples")
    for args in (["-cum"], []):
        go = ["go", "tool", "pprof", "-top"] + args + [path]
        ours = [a.agentprof, "top"] + (["--cum"] if args else []) + [path]
        g_times, o_times = [], []
        timed(go)
        timed(ours)
        for _ in range(a.n):
            tg, pg = timed(go)
            to, po = timed(ours)
            if pg.returncode != 0 or po.returncode != 0:
                print("failed:", pg.stderr.decode()[:300], po.stderr.decode()[:300])
                sys.exit(1)
            if pg.stdout != po.stdout:
                print("OUTPUTS DIFFER")
                sys.exit(1)
            g_times.append(tg)
            o_times.append(to)
        g, o = statistics.median(g_times), statistics.median(o_times)
        label = "-top -cum" if args else "-top"
        print(f"{label:10} go tool pprof {g * 1e3:8.1f} ms   agentprof top {o * 1e3:7.1f} ms   "
              f"ratio {o / g:.3f}   identical output ({len(pg.stdout.splitlines())} lines), median of {a.n}")


if __name__ == "__main__":
    main()
