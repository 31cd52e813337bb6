#!/usr/bin/env python3
"""What `agentprof check --profile` costs a Python check and how its profile compares with
py-spy's, on the workload that showed cProfile inverting the hot spot: 60,000 tiny Python
calls (`calls`) beside zlib compressing 512 KiB four times in C (`c_hot`).

For each interpreter found: the median run time (wall) of `-t 20` runs without a profile,
sampled (--profile) and traced (--profile=cprofile), each the median of ROUNDS alternating
rounds; and the share of `calls` in calls+c_hot by cumulative wall time. Then py-spy's share
on the same functions run as a script, and each function's own time (perf_counter around
it, no profiler).

    scripts/python-profile-bench.py [--bin target/release/agentprof] [--rounds 5]
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

CHECK = open(os.path.join(ROOT, "tests/python/hidden_hot_spot.py")).read()

SCRIPT = '''
import importlib.util, sys, time, types
try:
    import datadog_checks.base
except ImportError:  # a plain interpreter: the check's base class is not what is timed
    pkg = types.ModuleType("datadog_checks"); pkg.__path__ = []
    base = types.ModuleType("datadog_checks.base"); base.AgentCheck = object
    sys.modules.update({"datadog_checks": pkg, "datadog_checks.base": base})
spec = importlib.util.spec_from_file_location("hidden", sys.argv[1])
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
mode = sys.argv[2]
if mode == "own":
    a = []; b = []
    for _ in range(50):
        t0 = time.perf_counter(); m.calls(60000); t1 = time.perf_counter(); m.c_hot(4)
        a.append(t1 - t0); b.append(time.perf_counter() - t1)
    a = sorted(a)[25]; b = sorted(b)[25]
    print(a / (a + b) * 100)
else:
    for _ in range(100):
        m.calls(60000); m.c_hot(4)
'''


def interpreters():
    venv = subprocess.run([os.path.join(HERE, "test-venv.sh")], capture_output=True, text=True)
    found = []
    if venv.returncode == 0:
        found.append(("test venv", venv.stdout.strip()))
    if os.path.exists("/usr/bin/python3.11"):
        found.append(("Debian 3.11", "/usr/bin/python3.11"))
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    for minor in ("3.9", "3.10", "3.12", "3.13"):
        for p in sorted(glob.glob(os.path.join(root, "versions", minor + ".*", "bin", "python" + minor))):
            found.append(("pyenv " + minor, p))
            break
    return found


def run(binary, work, python, profile):
    args = [binary, "check", "hidden", "--python", python, "-t", "20", "--json"]
    if profile:
        args.append(profile)
    out = subprocess.run(args, cwd=work, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit("%s: %s" % (" ".join(args), out.stderr))
    doc = json.loads(out.stdout)
    walls = [r["run_time_s"] for r in doc["runs"] if r.get("status") == "ok"]
    return statistics.median(walls), doc


def share(doc):
    p = doc.get("profile") or {}
    if p.get("kind") == "python_sampled":
        top = {r["function"]: r["cum_wall_ns"] for r in p["top"]}
    elif p.get("kind") == "pstats":
        top = {r["function"]: r["cumtime"] for r in p["top"]}
    else:
        return None
    c, h = top.get("calls", 0), top.get("c_hot", 0)
    return c / (c + h) * 100 if c + h else None


def spy_share(spy, python, script, check, args):
    with tempfile.NamedTemporaryFile(suffix=".txt") as raw:
        subprocess.run([spy, "record", "-f", "raw", "-o", raw.name] + args + ["--", python, script, check, "loop"],
                       capture_output=True, check=True)
        c = h = 0
        for line in open(raw.name):
            stack, _, n = line.rstrip().rpartition(" ")
            c += int(n) if "calls (" in stack else 0
            h += int(n) if "c_hot (" in stack else 0
        return c / (c + h) * 100


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/agentprof"))
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="agentprof-pybench-")
    os.makedirs(os.path.join(work, "checks"))
    os.makedirs(os.path.join(work, "conf.d"))
    check = os.path.join(work, "checks", "hidden.py")
    open(check, "w").write(CHECK)
    open(os.path.join(work, "conf.d", "hidden.yaml"), "w").write("instances: [{}]\n")
    script = os.path.join(work, "script.py")
    open(script, "w").write(SCRIPT)
    print("agentprof: %s" % a.bin)
    print("%-12s %-8s %9s %9s %7s %9s %7s %7s %7s %7s %s" % (
        "python", "version", "plain ms", "sample ms", "ratio", "cprof ms", "ratio",
        "own %", "sample%", "cprof%", "sampler"))
    venv_python = None
    for label, python in interpreters():
        if label == "test venv":
            venv_python = python
        version = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"],
                                 capture_output=True, text=True).stdout.strip()
        plain, sampled, traced, shares, cshares = [], [], [], [], []
        method = ""
        for _ in range(a.rounds):
            w, _ = run(a.bin, work, python, None)
            plain.append(w)
            w, doc = run(a.bin, work, python, "--profile")
            sampled.append(w)
            shares.append(share(doc))
            method = doc["profile"]["method"]
            w, doc = run(a.bin, work, python, "--profile=cprofile")
            traced.append(w)
            cshares.append(share(doc))
        own = float(subprocess.run([python, script, check, "own"], capture_output=True, text=True,
                                   env=dict(os.environ, PYTHONPATH=work)).stdout or "nan")
        p, s, t = (statistics.median(x) * 1e3 for x in (plain, sampled, traced))
        print("%-12s %-8s %9.2f %9.2f %7.3f %9.2f %7.3f %7.1f %7.1f %7.1f %s" % (
            label, version, p, s, s / p, t, t / p, own, statistics.median(shares),
            statistics.median(cshares), "outside" if "outside" in method else "in-worker"))
    if venv_python:
        spy = os.path.join(os.path.dirname(venv_python), "py-spy")
        if os.path.exists(spy):
            for args in (["-r", "1000"], ["-r", "1000", "--nonblocking"], ["-r", "100"]):
                vals = [spy_share(spy, venv_python, script, check, args) for _ in range(3)]
                print("py-spy %s (test venv): calls share %.1f%% (median of 3: %s)" % (
                    " ".join(args), statistics.median(vals), ", ".join("%.1f" % v for v in vals)))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
