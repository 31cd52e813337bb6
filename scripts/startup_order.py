#!/usr/bin/env python3
"""Writes build/startup-order.txt: the functions of agentprof that its short commands run,
in the order they first run, for the linker to place together at the start of .text.

A command like `agentprof check disk` runs about 600 of the binary's 13,000 functions; laid
out by the compiler they are spread over its 12 MB of code, and each first call into a new
part of it faults in 64 KiB around it (the kernel's fault-around), so the process holds
megabytes of code it never runs (4.8 MiB for `check disk`). Placed together, `check disk`
faults in 8 windows of code (`perf record -e page-faults -d`), about 0.5 MiB. build.rs hands this
file to the linker (`--symbol-ordering-file`) for release builds; names the binary no
longer has are ignored, so a stale file costs nothing but the gain: run this again after
a change of compiler or of the startup path.

    cargo build --release && python3 scripts/startup_order.py [--agentprof target/release/agentprof]

Needs valgrind (callgrind lists every function a run enters, by its mangled name).
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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


def entered(binary, args, tmp):
    out = os.path.join(tmp, "cg.out")
    subprocess.run(["valgrind", "--tool=callgrind", "--demangle=no", "--callgrind-out-file=" + out,
                    binary] + args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    names = []
    with open(out, errors="replace") as f:
        for line in f:
            m = re.match(r"^c?fn=\(\d+\) (.+)$", line.rstrip("\n"))
            if m:
                names.append(m.group(1))
    return names


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agentprof", default=os.path.join(ROOT, "target/release/agentprof"))
    ap.add_argument("--out", default=os.path.join(ROOT, "build/startup-order.txt"))
    a = ap.parse_args()
    nm = subprocess.run(["nm", "--defined-only", a.agentprof], capture_output=True, text=True,
                        check=True).stdout
    functions = {p[2] for p in (l.split() for l in nm.splitlines()) if len(p) == 3 and p[1] in "tTwW"}
    order, seen = [], set()
    with tempfile.TemporaryDirectory() as tmp:
        for args in COMMANDS:
            for name in entered(a.agentprof, args, tmp):
                if name in functions and name not in seen:
                    seen.add(name)
                    order.append(name)
    with open(a.out, "w") as f:
        f.write("\n".join(order) + "\n")
    print(f"{len(order)} functions of {len(functions)} written to {os.path.relpath(a.out, ROOT)}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
