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

    cargo build --release && python3 scripts/startup_order.py [--agentprof target/<host tuple>/release/agentprof]

Needs valgrind (callgrind lists every function a run enters, by its mangled name).

Linked statically, glibc is part of the binary and two kinds of its start-up code are not
seen as they run on the machine: the resolvers of its IRELATIVE relocations (each one runs at
every start, before `main`; they are read from the relocations, first in the file), and the
CPU-specific variant of a string function each resolver picks (valgrind's virtual CPU picks
`__strlen_avx2` where this machine runs `__strlen_evex`): every variant of a function the
runs entered is listed beside it. Nor does valgrind show glibc's start as it runs natively:
it names `__libc_start_main` "(below main)", hides the vDSO (so glibc's setting up of the
vDSO's link map is never entered) and reports a CPU of its own vendor (so another vendor's
cache-size code is never entered); those functions are listed by name (NOT_UNDER_VALGRIND).
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

import paths  # noqa: E402  (scripts/paths.py: where cargo puts the binaries)

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


# glibc's CPU-specific variants of one function: `__memmove_avx_unaligned_erms`,
# `__strlen_evex`, `__strcasecmp_l_sse42`.
VARIANT = re.compile(r"^__[a-z0-9]+(_[a-z0-9]+)*_(sse2|ssse3|sse4_1|sse4_2|sse42|avx|avx2|avx512|"
                     r"evex|evex512|erms|rtm|unaligned|aligned|no_vzeroupper|x86_64)(_[a-z0-9]+)*$")


# glibc's start-up code that runs natively and not under valgrind (see the module's text).
NOT_UNDER_VALGRIND = [
    "_start", "__libc_start_main_impl", "__libc_start_main", "__libc_start_call_main",
    "setup_vdso", "_dl_new_object", "_dl_add_to_namespace_list", "_dl_setup_hash",
    "_dl_lookup_symbol_x", "do_lookup_x", "check_match", "dl_vdso_vsym",
    "handle_amd", "handle_intel", "handle_zhaoxin", "intel_check_word.constprop.0",
    "get_common_cache_info.constprop.0",
]


# String functions that the runs call natively but never under valgrind (found with `perf
# record -e page-faults -d`: `check disk` faulted `__strcmp_avx2` in, at the far end of
# .text, where the kernel mapped a whole large folio of 184 KiB around it): every CPU
# variant of each is listed, since which one runs depends on the machine.
NATIVE_FAMILIES = ["strcmp"]


def family(name):
    return name.lstrip("_").split("_")[0]


def resolvers(binary, by_address):
    """The IRELATIVE relocations' resolvers, in relocation order."""
    out = subprocess.run(["readelf", "-rW", binary], capture_output=True, text=True,
                         check=True).stdout
    names = []
    for line in out.splitlines():
        p = line.split()
        if len(p) >= 4 and p[2] == "R_X86_64_IRELATIVE":
            names.extend(by_address.get(int(p[3], 16), []))
    return names


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agentprof", default=paths.binary())
    ap.add_argument("--out", default=os.path.join(ROOT, "build/startup-order.txt"))
    a = ap.parse_args()
    nm = subprocess.run(["nm", "--defined-only", a.agentprof], capture_output=True, text=True,
                        check=True).stdout
    symbols = [(int(p[0], 16), p[2]) for p in (l.split() for l in nm.splitlines())
               if len(p) == 3 and p[1] in "tTwW"]
    functions = {name for _, name in symbols}
    by_address, variants = {}, {}
    for address, name in symbols:
        by_address.setdefault(address, []).append(name)
        if VARIANT.match(name):
            variants.setdefault(family(name), []).append(name)
    order, seen = [], set()

    def add(name):
        if name in functions and name not in seen:
            seen.add(name)
            order.append(name)

    for name in resolvers(a.agentprof, by_address) + NOT_UNDER_VALGRIND:
        add(name)
    for fam in NATIVE_FAMILIES:
        for name in variants.get(fam, []):
            add(name)
    with tempfile.TemporaryDirectory() as tmp:
        for args in COMMANDS:
            for name in entered(a.agentprof, args, tmp):
                add(name)
                if VARIANT.match(name):
                    for other in variants.get(family(name), []):
                        add(other)
    with open(a.out, "w") as f:
        f.write("\n".join(order) + "\n")
    print(f"{len(order)} functions of {len(functions)} written to {os.path.relpath(a.out, ROOT)}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
