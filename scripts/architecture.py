#!/usr/bin/env python3
"""Checks the import rules ARCHITECTURE.md states, so the map stays true: which folders may
not import which, and no import circle between the files of one folder. Run by .ci/run;
prints each broken rule with the file and line, exits 1 when there is one.

    python3 scripts/architecture.py
"""

import os
import re
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")

# (folder or file of src/, modules of crate:: it must not use, why) — as ARCHITECTURE.md says.
COMMANDS = ["cmd", "cli"]
RULES = [
    (None, COMMANDS, "nothing imports the command layer but the command layer"),
    ("metrics", ["checks", "agent", "render", "emit"], "metrics is below checks"),
    ("ui", ["checks", "agent", "k8s", "receive", "pull"], "ui reads files through pprof and render"),
    ("pprof", ["checks", "agent", "pull", "k8s", "receive", "ui", "gate", "emit", "render"],
     "pprof never imports a command's folder"),
    ("profile", ["agent", "pull", "k8s", "receive", "ui", "gate", "emit", "render"],
     "profile imports nothing of the commands"),
    ("procstat", ["checks", "agent", "pull", "k8s", "receive", "ui", "gate", "emit", "render",
                  "profile", "pprof"], "procstat imports nothing of the commands"),
    ("pull", ["k8s", "receive"], "pull never imports k8s or receive"),
    ("receive", ["k8s"], "receive and k8s never import each other"),
    ("k8s", ["receive"], "receive and k8s never import each other"),
    ("error.rs", ["checks", "agent", "pull", "k8s", "receive"], "error.rs holds errors only"),
    ("gate", ["cli"], "the gate's options are plain structs"),
]
# Folders whose files must not import each other in a circle.
NO_CIRCLES = ["k8s", "pprof", "receive", "pull", "agent", "checks", "ui"]

USE = re.compile(r"\bcrate::([a-z_]+(?:::[a-z_]+)*)")
SUPER = re.compile(r"\bsuper::([a-z_]+)")


def rust_files():
    for d, _, files in os.walk(SRC):
        for f in files:
            if f.endswith(".rs"):
                yield os.path.join(d, f)


def code_lines(path):
    """Lines before the file's tests, comments cut."""
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if line.startswith("#[cfg(test)]"):
                return
            yield n, line.split("//")[0]


def module_of(path):
    """The module path of a file: src/k8s/run.rs is [k8s, run], src/pprof/legacy/mod.rs
    [pprof, legacy]."""
    parts = os.path.relpath(path, SRC)[:-3].split(os.sep)
    if parts[-1] == "mod":
        parts = parts[:-1]
    return parts


def main():
    broken = []
    edges = defaultdict(set)  # parent module -> {(child, sibling it imports)}
    for path in rust_files():
        mod = module_of(path)
        top = mod[0] if os.sep in os.path.relpath(path, SRC) else mod[0] + ".rs"
        parent = tuple(mod[:-1])
        for n, line in code_lines(path):
            for m in USE.finditer(line):
                target = m.group(1).split("::")
                for folder, forbidden, why in RULES:
                    applies = folder is None and top.removesuffix(".rs") not in COMMANDS \
                        or folder is not None and top == folder
                    if applies and target[0] in forbidden:
                        broken.append(f"src/{os.path.relpath(path, SRC)}:{n}: uses "
                                      f"crate::{target[0]} ({why})")
                # crate::PARENT::SIBLING from a child of PARENT
                if len(mod) >= 2 and tuple(target[:len(parent)]) == parent \
                        and len(target) > len(parent) and target[len(parent)] != mod[-1]:
                    edges[parent].add((mod[-1], target[len(parent)]))
            if len(mod) >= 2:
                for m in SUPER.finditer(line):
                    if m.group(1) != mod[-1]:
                        edges[parent].add((mod[-1], m.group(1)))
    for parent, pairs in sorted(edges.items()):
        if not parent or parent[0] not in NO_CIRCLES:
            continue
        children = {a for a, _ in pairs}
        graph = defaultdict(set)
        for a, b in pairs:
            if b in children or os.path.exists(os.path.join(SRC, *parent, b + ".rs")) \
                    or os.path.isdir(os.path.join(SRC, *parent, b)):
                graph[a].add(b)
        for cycle in circles(graph):
            hops = " -> ".join(cycle + [cycle[0]])
            broken.append(f"src/{'/'.join(parent)}/: an import circle {hops}")
    for b in broken:
        print(b)
    if broken:
        print(f"{len(broken)} rule(s) of ARCHITECTURE.md broken", file=sys.stderr)
        return 1
    print("ARCHITECTURE.md's import rules hold")
    return 0


def circles(graph):
    """Every elementary circle once (as its smallest rotation)."""
    found = set()
    out = []

    def walk(start, node, path, seen):
        for nxt in graph.get(node, ()):
            if nxt == start:
                c = path[:]
                i = c.index(min(c))
                key = tuple(c[i:] + c[:i])
                if key not in found:
                    found.add(key)
                    out.append(list(key))
            elif nxt not in seen and nxt > start:
                seen.add(nxt)
                walk(start, nxt, path + [nxt], seen)
                seen.discard(nxt)

    for s in sorted(graph):
        walk(s, s, [s], {s})
    return out


if __name__ == "__main__":
    sys.exit(main())
