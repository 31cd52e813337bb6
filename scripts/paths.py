"""Where cargo puts agentprof's binaries: target/<profile>/ (or $CARGO_TARGET_DIR/<profile>/)."""

import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def binary(name="agentprof", profile="release"):
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
    return os.path.join(target, profile, name)
