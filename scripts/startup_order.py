#!/usr/bin/env python3
"""build/startup-order.txt: the functions of agentprof its short commands run, in the order
they first run, which build.rs hands to the linker (release builds) to place together at
the start of .text.

Why: a `check disk` runs about 500 of the binary's 13,000 functions. Laid out by the
compiler they are spread over 12 MB of code, and each first call into a new part of it
faults in 64 KiB around it (the kernel's fault-around): the process holds megabytes of code
it never runs. Placed together they take a few windows. Measured on the standard build
(PIE, glibc linked dynamically; scripts/bench_disk_vs_python.py --drop-caches, medians of
21 runs): peak RSS 7,852 KiB without the ordering, 4,904 KiB with it (-37.5 %), wall time
2.87 ms and 2.62 ms (-8.7 %). build.rs lists the start-up measures agentprof keeps, each
with its figure.

The names carry the crates' hashes, which change with the compiler and with any dependency
(a `cargo update`): a stale file costs nothing but the gain. `.ci/run` checks the file
against the release binary (`--check`) and says to run this again when it went stale:

    cargo build --release && python3 scripts/startup_order.py

Needs valgrind (callgrind lists every function a run enters, by its mangled name) and nm.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

import paths  # noqa: E402  (scripts/paths.py: where cargo puts the binaries)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ORDER = os.path.join(ROOT, "build/startup-order.txt")
COMMANDS = [
    ["--version"],
    ["check", "disk"],
    ["check", "cpu"],
    ["check", "memory"],
    ["check", "load"],
    ["check", "uptime"],
    ["check", "io"],
    ["check", "network"],
]
# Below this share of the file's names in the binary, the file is stale (at 97 % present, the
# missing names put ten more 64 KiB windows of code into a cold `check disk`).
FRESH = 0.98


def functions(binary):
    out = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True,
                         check=True).stdout
    return {p[2] for p in (l.split() for l in out.splitlines()) if len(p) == 3 and p[1] in "tTwW"}


def entered(binary, args, tmp):
    out = os.path.join(tmp, "cg.out")
    subprocess.run(["valgrind", "--tool=callgrind", "--demangle=no",
                    "--callgrind-out-file=" + out, binary] + args,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    names = []
    with open(out, errors="replace") as f:
        for line in f:
            m = re.match(r"^c?fn=\(\d+\) (.+)$", line.rstrip("\n"))
            if m:
                names.append(m.group(1))
    return names


def check(binary):
    with open(ORDER) as f:
        listed = [l.strip() for l in f if l.strip()]
    have = functions(binary)
    share = sum(1 for n in listed if n in have) / max(len(listed), 1)
    print(f"startup order: {share:.0%} of the {len(listed)} listed functions are in {binary}")
    if share < FRESH:
        print("build/startup-order.txt is stale (a new compiler or dependency renamed the "
              "functions): run `cargo build --release && python3 scripts/startup_order.py` "
              "and commit it", file=sys.stderr)
        return 1
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agentprof", default=paths.binary())
    ap.add_argument("--check", action="store_true", help="only say whether the file is stale")
    a = ap.parse_args()
    if a.check:
        return check(a.agentprof)
    have = functions(a.agentprof)
    order, seen = [], set()
    with tempfile.TemporaryDirectory() as tmp:
        for args in COMMANDS:
            for name in entered(a.agentprof, args, tmp):
                if name in have and name not in seen:
                    seen.add(name)
                    order.append(name)
    with open(ORDER, "w") as f:
        f.write("\n".join(order) + "\n")
    print(f"{len(order)} functions of {len(have)} written to {os.path.relpath(ORDER, ROOT)}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
