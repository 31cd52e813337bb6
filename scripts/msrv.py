#!/usr/bin/env python3
"""Fails when Cargo.toml's rust-version is below the rust-version of any dependency in
Cargo.lock (every platform's): the minimum stated must be one that builds."""
import json
import subprocess
import sys


def version(text):
    parts = [int(x) for x in text.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


meta = json.loads(subprocess.run(
    ["cargo", "metadata", "--locked", "--format-version", "1"],
    check=True, capture_output=True, text=True).stdout)
root = next(p for p in meta["packages"] if p["id"] in meta["workspace_members"])
stated = root.get("rust_version")
if not stated:
    sys.exit("Cargo.toml: no rust-version")
above = sorted(
    (version(p["rust_version"]), p["name"], p["version"])
    for p in meta["packages"]
    if p["id"] not in meta["workspace_members"] and p.get("rust_version")
    and version(p["rust_version"]) > version(stated))
if above:
    for v, name, ver in above:
        print(f"{name} {ver} needs rust {'.'.join(map(str, v))}", file=sys.stderr)
    sys.exit(f"Cargo.toml: rust-version = \"{stated}\" is below what the dependencies above need")
need = max((version(p["rust_version"]), p["name"]) for p in meta["packages"]
           if p["id"] not in meta["workspace_members"] and p.get("rust_version"))
print(f"rust-version {stated} covers every dependency (the highest: {need[1]}, "
      f"{'.'.join(map(str, need[0]))})")
