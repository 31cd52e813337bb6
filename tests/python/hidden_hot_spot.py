# A check whose hot spot cProfile inverts: 60,000 tiny Python calls (`calls`) beside zlib
# compressing 512 KiB four times in C (`c_hot`), which takes the larger share of the time.
# tests/cli/python_sampling.rs and scripts/python-profile-bench.py run it. An instance's
# `calls` and `c_hot` change the counts (CPython 3.10 runs the calls at about two thirds of
# 3.11's speed, so there the margin is widened).
import zlib
from datadog_checks.base import AgentCheck

DATA = bytes(range(256)) * 2048


def tiny(x):
    return x + 1


def calls(n):
    t = 0
    for i in range(n):
        t = tiny(t)
    return t


def c_hot(n):
    for _ in range(n):
        zlib.compress(DATA, 6)


class HiddenCheck(AgentCheck):
    def check(self, instance):
        calls(int(instance.get("calls", 60000)))
        c_hot(int(instance.get("c_hot", 4)))
        self.gauge("hidden.done", 1)
