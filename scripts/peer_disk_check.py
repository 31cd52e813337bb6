"""The peer for `agentprof check disk`: the same disk check written on datadog_checks_base with
psutil, run once by Python, as a check author would without the Agent.

    python -m venv venv && venv/bin/pip install 'datadog-checks-base[deps]' psutil
    venv/bin/python scripts/peer_disk_check.py
"""

import os

import psutil
from datadog_checks.base import AgentCheck


class DiskCheck(AgentCheck):
    def check(self, instance):
        for part in psutil.disk_partitions(all=False):
            usage = psutil.disk_usage(part.mountpoint)
            tags = ["device:%s" % part.device, "device_name:%s" % os.path.basename(part.device)]
            self.gauge("system.disk.total", usage.total / 1024.0, tags=tags)
            self.gauge("system.disk.used", usage.used / 1024.0, tags=tags)
            self.gauge("system.disk.free", usage.free / 1024.0, tags=tags)
            self.gauge("system.disk.in_use", usage.percent / 100.0, tags=tags)
            st = os.statvfs(part.mountpoint)
            if st.f_files:
                used = st.f_files - st.f_ffree
                self.gauge("system.fs.inodes.total", st.f_files, tags=tags)
                self.gauge("system.fs.inodes.free", st.f_ffree, tags=tags)
                self.gauge("system.fs.inodes.used", used, tags=tags)
                self.gauge("system.fs.inodes.in_use", used / float(st.f_files), tags=tags)


if __name__ == "__main__":
    check = DiskCheck("disk", {}, [{}])
    error = check.run()
    if error:
        raise SystemExit(error)
    from datadog_checks.base.stubs import aggregator

    print(len(aggregator.metric_names), "metrics")
