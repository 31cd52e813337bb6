#!/usr/bin/env python3
"""Checks the import rules ARCHITECTURE.md states, so the map stays true: which folders may
not import which, and no import circle between the modules of one folder (src/'s folders and
top-level files included). Run by .ci/run;
prints each broken rule with the file and line, exits 1 when there is one.

    python3 scripts/architecture.py [--src DIR] [--crates DIR]

It reads Rust as the compiler does, not line by line: comments and string literals are cut,
`use` trees are expanded (`use crate::{a::B, c::{D, E}};` over any number of lines), `self`,
`super` and `super::super` are resolved from the module a line is in (inline `mod` blocks,
tests included), and paths written in code (`crate::a::f()`, `super::b::C`) count as
imports. A path whose first name is a module of the current one (`measure::run`) is
resolved too; anything else is another crate's.

The crates of the workspace (crates/*/src) are read the same way for import circles between
their files, and the check runner's crate (crates/checks) for its own folder rules; which
crate may use which the compiler holds (pprof and procstat depend on nothing of agentprof,
the runner on nothing of the commands; cargo refuses a cycle between crates).
"""

import os
import re
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (folder or file of src/, modules of crate:: it must not use, why) — as ARCHITECTURE.md says.
COMMANDS = ["cmd", "cli"]
RULES = [
    (None, COMMANDS, "nothing imports the command layer but the command layer"),
    ("ui", ["checks", "agent", "k8s", "receive", "pull"], "ui reads files through pprof and render"),
    ("pull", ["k8s", "receive"], "pull never imports k8s or receive"),
    ("receive", ["k8s"], "receive and k8s never import each other"),
    ("k8s", ["receive"], "receive and k8s never import each other"),
    ("error.rs", ["checks", "agent", "pull", "k8s", "receive"], "error.rs holds errors only"),
    ("gate", ["cli"], "the gate's options are plain structs"),
]

# The check runner's crate (crates/checks): what the compiler does not hold inside it. Its
# root's modules that run checks, under which configuration, submissions and run records sit.
RUNNER = ["builtin", "child", "exec", "exec_trace", "filter", "listing", "python", "registry",
          "runner"]
CRATE_RULES = {
    "checks": [
        ("metrics", RUNNER + ["profile"], "metrics is below the runner"),
        ("profile", RUNNER, "run records are below the runner"),
        ("config", RUNNER + ["profile", "pprof", "procstat", "metrics"],
         "config reads files; it imports no domain folder"),
        ("error.rs", RUNNER + ["config", "metrics", "profile"], "error.rs holds errors only"),
    ],
}

TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|::|\$|.", re.S)


def strip(text):
    """The text with comments, strings and character literals blanked (newlines kept, so
    line numbers hold)."""
    out = []
    i, n = 0, len(text)

    def blank(s):
        return "".join(c if c == "\n" else " " for c in s)

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(blank(text[i:j]))
            i = j
        elif (m := re.compile(r'b?r(#*)"').match(text, i)) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = '"' + m.group(1)
            j = text.find(end, m.end())
            j = n if j < 0 else j + len(end)
            out.append(blank(text[i:j]))
            i = j
        elif c == '"' or (c == "b" and text.startswith('b"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_"))):
            j = i + (2 if c == "b" else 1)
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(blank(text[i:j + 1]))
            i = j + 1
        elif c == "'":
            # A character literal ('a', '\n', '\u{1F600}', '"') or a lifetime ('a).
            m = re.compile(r"'(\\(u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^\\'])'", re.S).match(text, i)
            if m:
                out.append(blank(m.group(0)))
                i = m.end()
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def tokens(text):
    """(token, line) pairs of stripped Rust."""
    line = 1
    for m in TOKEN.finditer(text):
        t = m.group(0)
        if t.isspace():
            line += t.count("\n")
            continue
        yield t, line


def use_tree(toks, i, prefix, out, line, names=None):
    """Parses one use tree at toks[i]; appends (path, line) for each leaf (and to `names`,
    when given, (the name it is known by, path)); returns the index after it."""
    path = list(prefix)
    while i < len(toks):
        t = toks[i][0]
        if t == "{":
            i += 1
            while i < len(toks) and toks[i][0] != "}":
                if toks[i][0] == ",":
                    i += 1
                    continue
                i = use_tree(toks, i, path, out, toks[i][1], names)
            return i + 1
        if t == "*":
            out.append((path, line))
            return i + 1
        if t == "::":
            i += 1
            continue
        if re.match(r"[A-Za-z_]", t):
            path = path + [t]
            i += 1
            known = t
            if i < len(toks) and toks[i][0] == "as":
                known = toks[i + 1][0] if i + 1 < len(toks) else t
                i += 2
            if i >= len(toks) or toks[i][0] != "::":
                out.append((path, line))
                if names is not None:
                    names.append((known, path))
                return i
            continue
        return i
    return i


class Module:
    def __init__(self, src, path):
        self.src = src
        self.rel = os.path.relpath(path, src)
        parts = self.rel[:-3].split(os.sep)
        if parts[-1] in ("mod", "lib", "main") and (len(parts) > 1 or parts[-1] != "main"):
            parts = parts[:-1]
        self.path = parts

    def top(self):
        """The folder (`k8s`) or top-level file (`error.rs`) the module is in."""
        if os.sep in self.rel:
            return self.rel.split(os.sep)[0]
        return self.rel


def is_module(src, path):
    """Whether crate::path names a module (a file or folder of src/)."""
    if not path:
        return True
    base = os.path.join(src, *path)
    return os.path.isfile(base + ".rs") or os.path.isdir(base)


def imports(src, file):
    """(absolute module path, line) for every path of this crate the file names."""
    mod = Module(src, file)
    with open(file) as f:
        toks = list(tokens(strip(f.read())))
    found = []
    stack = []  # (inline mod name, brace depth at its opening)
    depth = 0
    i = 0
    while i < len(toks):
        t, line = toks[i]
        here = mod.path + [name for name, _ in stack]
        if t == "mod" and i + 2 < len(toks) and toks[i + 2][0] == "{":
            stack.append((toks[i + 1][0], depth))
            depth += 1
            i += 3
            continue
        if t == "{":
            depth += 1
        elif t == "}":
            depth -= 1
            if stack and stack[-1][1] == depth:
                stack.pop()
        elif t == "use" and (i == 0 or toks[i - 1][0] != "$"):
            leaves = []
            j = use_tree(toks, i + 1, [], leaves, line)
            for path, ln in leaves:
                r = resolve(src, here, path, use=True)
                if r is not None:
                    found.append((r, ln))
            i = j
            continue
        elif path_start(src, toks, i, here):
            # A path written in code: `crate::a::f()`, `super::b::C`, `measure::run`.
            path, j = [t], i + 1
            while j + 1 < len(toks) and toks[j][0] == "::" and re.match(r"[A-Za-z_]", toks[j + 1][0]):
                path.append(toks[j + 1][0])
                j += 2
            r = resolve(src, here, path, use=False)
            if r is not None:
                found.append((r, line))
            i = j
            continue
        i += 1
    return mod, found


def path_start(src, toks, i, here):
    """Whether toks[i] begins a path of this crate written in code: `crate`, `super` or `self`,
    or a module of the current one, followed by `::` (and not itself after `::`, `$` or a
    field's `.`)."""
    t = toks[i][0]
    before = toks[i - 1][0] if i else ""
    if i + 1 >= len(toks) or toks[i + 1][0] != "::" or before in ("::", "$"):
        return False
    if t in ("crate", "super", "self"):
        return True
    return re.match(r"[a-z_][a-z0-9_]*$", t) is not None and before not in (".", "mod") \
        and is_module(src, here + [t])


def resolve(src, here, path, use):
    """The module path of crate:: that `path`, written in module `here`, names (its longest
    prefix that is a module), or None for another crate's."""
    if not path:
        return None
    if path[0] == "crate":
        absolute = path[1:]
    elif path[0] in ("super", "self"):
        at = list(here)
        k = 0
        while k < len(path) and path[k] in ("super", "self"):
            if path[k] == "super":
                if not at:
                    return None
                at.pop()
            k += 1
        absolute = at + path[k:]
    elif is_module(src, here + [path[0]]):
        absolute = here + path
    else:
        return None
    # The longest prefix that is a module: `crate::checks::Registry` is in `checks`.
    k = len(absolute)
    while k > 0 and not is_module(src, absolute[:k]):
        k -= 1
    # An item the module re-exports (`pub use error::Error;` in lib.rs) is the module's it
    # comes from: `crate::Error` is error.rs's.
    if k < len(absolute):
        origin = reexports(src, tuple(absolute[:k])).get(absolute[k])
        if origin is not None:
            return origin
    return absolute[:k]


REEXPORTS = {}


def reexports(src, module):
    """name -> the module path it comes from, for each `pub use` of the module `module`."""
    key = (src, module)
    if key in REEXPORTS:
        return REEXPORTS[key]
    REEXPORTS[key] = {}
    base = os.path.join(src, *module)
    for f in ([os.path.join(src, "lib.rs")] if not module else [base + ".rs", os.path.join(base, "mod.rs")]):
        if os.path.isfile(f):
            break
    else:
        return REEXPORTS[key]
    with open(f) as fh:
        toks = list(tokens(strip(fh.read())))
    found = {}
    for i, (t, line) in enumerate(toks):
        if t != "use" or i == 0 or toks[i - 1][0] not in ("pub", ")"):
            continue
        names = []
        use_tree(toks, i + 1, [], [], line, names)
        for name, path in names:
            r = resolve(src, list(module), path, use=True)
            if r is not None and r != list(module):
                found[name] = r
    REEXPORTS[key] = found
    return found


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


def check(src, label="src", rules=RULES):
    """The broken rules, one line each: `rules` (the folder rules above: RULES for src/, a
    crate's own in CRATE_RULES), and the import circles between the files of one folder."""
    broken = []
    edges = defaultdict(lambda: defaultdict(set))  # folder -> child -> {sibling}
    for d, _, files in sorted(os.walk(src)):
        for f in sorted(files):
            if not f.endswith(".rs"):
                continue
            mod, found = imports(src, os.path.join(d, f))
            top = mod.top()
            for target, line in found:
                if not target:
                    continue
                for folder, forbidden, why in rules:
                    # The crate root (lib.rs) names what the binary runs.
                    applies = (folder is None and top.removesuffix(".rs") not in COMMANDS
                               and mod.rel != "lib.rs") \
                        or (folder is not None and top == folder)
                    if applies and target[0] in forbidden:
                        broken.append(f"{label}/{mod.rel}:{line}: uses crate::{'::'.join(target)} ({why})")
                # Within each folder the file is in (src/ itself too): the child of that
                # folder it is in importing another child of the same folder.
                for k in range(len(mod.path)):
                    folder = tuple(mod.path[:k])
                    if tuple(target[:k]) == folder and len(target) > k and target[k] != mod.path[k]:
                        edges[folder][mod.path[k]].add(target[k])
    for folder, graph in sorted(edges.items()):
        for cycle in circles(graph):
            hops = " -> ".join(cycle + [cycle[0]])
            where = "".join(f"{f}/" for f in folder)
            broken.append(f"{label}/{where}: an import circle {hops}")
    return broken


def main(argv):
    src, crates = os.path.join(ROOT, "src"), os.path.join(ROOT, "crates")
    args = list(argv)
    while args:
        if len(args) >= 2 and args[0] in ("--src", "--crates"):
            if args[0] == "--src":
                src = args[1]
            else:
                crates = args[1]
            args = args[2:]
        else:
            print("usage: architecture.py [--src DIR] [--crates DIR]", file=sys.stderr)
            return 2
    broken = check(src)
    if os.path.isdir(crates):
        for name in sorted(os.listdir(crates)):
            csrc = os.path.join(crates, name, "src")
            if os.path.isdir(csrc):
                broken += check(csrc, f"crates/{name}/src", rules=CRATE_RULES.get(name, []))
    for b in broken:
        print(b)
    if broken:
        print(f"{len(broken)} rule(s) of ARCHITECTURE.md broken", file=sys.stderr)
        return 1
    print("ARCHITECTURE.md's import rules hold")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
