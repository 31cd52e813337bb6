"""directory: how big a directory is, how many files it holds and how old the oldest is, for
spools, upload folders and backup targets. An agentprof Python check on the Datadog
AgentCheck API (standard library only).

Instance options (conf.d/directory.yaml.example):
  directory (required), name (tag, default: the directory), pattern (glob on file names, "*"),
  recursive (false), ignore_missing (false).

Metrics, tagged dir_name:NAME: system.disk.directory.files, system.disk.directory.bytes,
system.disk.directory.oldest_file_age (s, 0 when empty), system.disk.directory.newest_file_age.
Service check directory.exists.
"""
import fnmatch
import os
import time

from datadog_checks.base import AgentCheck

__version__ = "1.0.0"


class DirectoryCheck(AgentCheck):
    def check(self, instance):
        directory = instance.get("directory")
        if not directory:
            raise ValueError("instance has no `directory`")
        name = instance.get("name") or directory
        tags = list(instance.get("tags") or []) + ["dir_name:%s" % name]
        if not os.path.isdir(directory):
            status = AgentCheck.WARNING if instance.get("ignore_missing") else AgentCheck.CRITICAL
            self.service_check("directory.exists", status, tags=tags, message="%s is not a directory" % directory)
            if not instance.get("ignore_missing"):
                raise ValueError("%s is not a directory" % directory)
            return
        self.service_check("directory.exists", AgentCheck.OK, tags=tags)
        pattern = instance.get("pattern", "*")
        now = time.time()
        files = size = 0
        oldest = newest = None
        for root, dirs, names in os.walk(directory):
            if not instance.get("recursive", False):
                dirs[:] = []
            for n in names:
                if not fnmatch.fnmatch(n, pattern):
                    continue
                try:
                    st = os.stat(os.path.join(root, n))
                except OSError:
                    continue  # removed meanwhile
                files += 1
                size += st.st_size
                oldest = st.st_mtime if oldest is None else min(oldest, st.st_mtime)
                newest = st.st_mtime if newest is None else max(newest, st.st_mtime)
        self.gauge("system.disk.directory.files", files, tags=tags)
        self.gauge("system.disk.directory.bytes", size, tags=tags)
        self.gauge("system.disk.directory.oldest_file_age", now - oldest if oldest else 0, tags=tags)
        self.gauge("system.disk.directory.newest_file_age", now - newest if newest else 0, tags=tags)
