#!/usr/bin/env python3
"""The shape of agentprof's source (src/ and the crates/ of the workspace): its longest
functions and largest files.

    python3 scripts/code_shape.py [--limit 80] [--top 25] [--json]

A function is counted from its `fn` line to the closing brace rustfmt puts at the same
indentation; a file's code is its lines outside `#[cfg(test)]` items (its unit tests apart,
wherever they stand: code after a test module counts).
Functions whose line before the `fn` (or doc comment block) says `// long:` with a reason are
listed as such and not counted over the limit.
"""

import argparse
import json
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FN = re.compile(r"^(\s*)(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+([A-Za-z0-9_]+)")


def test_lines(lines):
    """The 0-based indices of the lines that are test code: each `#[cfg(test)]` item at the
    top level (a `mod tests { … }` to its closing brace, a test-only function, `use` or
    `mod x;`), wherever it stands in the file; code after a test module counts again."""
    out = set()
    i = 0
    while i < len(lines):
        if not lines[i].startswith("#[cfg(test)]"):
            i += 1
            continue
        j = i + 1
        # Further attributes and doc comments of the same item.
        while j < len(lines) and (lines[j].startswith("#[") or lines[j].startswith("///")):
            j += 1
        if j < len(lines) and lines[j].rstrip().endswith(";"):
            end = j
        else:
            end = j
            while end < len(lines) and lines[end] != "}":
                end += 1
        out.update(range(i, min(end, len(lines) - 1) + 1))
        i = end + 1
    return out


def is_test_file(path):
    base = os.path.basename(path)
    return base == "tests.rs" or base.endswith("_tests.rs")


def functions(path, root=ROOT):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out = []
    # A file of tests (`tests.rs`, `*_tests.rs`) is a test module as a whole.
    whole = is_test_file(path)
    tests = test_lines(lines)
    for i, line in enumerate(lines):
        m = FN.match(line)
        if not m or line.rstrip().endswith(";"):
            continue
        indent, name = m.group(1), m.group(2)
        end = None
        for j in range(i + 1, len(lines)):
            if lines[j] == indent + "}":
                end = j
                break
        if end is None:
            continue
        reason = None
        k = i - 1
        while k >= 0 and (lines[k].strip().startswith("///") or lines[k].strip().startswith("#[")
                          or lines[k].strip().startswith("// long:")):
            if lines[k].strip().startswith("// long:"):
                reason = lines[k].strip()[len("// long:"):].strip()
            k -= 1
        out.append({"file": os.path.relpath(path, root), "line": i + 1, "name": name,
                    "lines": end - i + 1, "test": whole or i in tests, "reason": reason})
    return out


def code_lines(path):
    if is_test_file(path):
        return 0
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return len(lines) - len(test_lines(lines))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=80)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--root", default=ROOT, help="the tree to read (its src/ and crates/*/src)")
    a = ap.parse_args()
    fns, files = [], []
    # The library and every crate of the workspace.
    crates = os.path.join(a.root, "crates")
    roots = [os.path.join(a.root, "src")]
    if os.path.isdir(crates):
        roots += sorted(os.path.join(crates, c, "src") for c in os.listdir(crates)
                        if os.path.isdir(os.path.join(crates, c, "src")))
    walked = [w for r in roots for w in sorted(os.walk(r))]
    for d, _, names in walked:
        for n in names:
            if n.endswith(".rs"):
                p = os.path.join(d, n)
                fns += functions(p, a.root)
                files.append({"file": os.path.relpath(p, a.root), "code_lines": code_lines(p)})
    fns = [f for f in fns if not f["test"]]
    fns.sort(key=lambda f: -f["lines"])
    files.sort(key=lambda f: -f["code_lines"])
    over = [f for f in fns if f["lines"] > a.limit and not f["reason"]]
    doc = {"limit": a.limit, "functions_over_limit": len(over), "longest": fns[: a.top],
           "excused": [f for f in fns if f["lines"] > a.limit and f["reason"]],
           "files_over_600": [f for f in files if f["code_lines"] > 600], "largest": files[: a.top]}
    if a.json:
        print(json.dumps(doc, indent=2))
        return
    print(f"{len(over)} functions over {a.limit} lines (without a reason beside them)")
    for f in fns[: a.top]:
        why = f"  (long: {f['reason']})" if f["reason"] else ""
        print(f"{f['lines']:5}  {f['file']}:{f['line']}  {f['name']}{why}")
    print()
    n = len(doc['files_over_600'])
    print(f"{n} file{'' if n == 1 else 's'} over 600 lines of code (before their tests)")
    for f in files[: min(a.top, 15)]:
        print(f"{f['code_lines']:5}  {f['file']}")


if __name__ == "__main__":
    main()
