"""A small Python check for benchmarks: a few gauges, a rate and a service check."""
from datadog_checks.base import AgentCheck


class SmallCheck(AgentCheck):
    def check(self, instance):
        tags = ["bench:small"]
        for i in range(10):
            self.gauge("small.gauge", i, tags=tags + ["i:%d" % i])
        self.rate("small.rate", 42, tags=tags)
        self.service_check("small.up", AgentCheck.OK, tags=tags)
