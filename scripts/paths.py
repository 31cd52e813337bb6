"""Where cargo puts agentprof's binaries: target/<host tuple>/<profile>/ (.cargo/config.toml
names the host's target so that the static-link flags reach agentprof and not its proc-macros)."""

import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def host_tuple():
    out = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    return next(l.split(":", 1)[1].strip() for l in out.splitlines() if l.startswith("host:"))


def binary(name="agentprof", profile="release"):
    return os.path.join(ROOT, "target", host_tuple(), profile, name)
