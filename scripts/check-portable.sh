#!/usr/bin/env bash
# Type-checks the non-Linux code paths (sysinfo snapshots, checks and sampler that say they
# are Linux-only) on this Linux machine: a copy of the tree in which `target_os = "linux"`
# is never true and sysinfo is a plain dependency. No macOS toolchain is needed; it catches
# API mistakes in the portable code, not platform behaviour.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git ls-files -z --cached --others --exclude-standard | xargs -0 -I{} cp --parents {} "$work"
cp Cargo.lock "$work/" 2>/dev/null || true
cd "$work"
grep -rl --include='*.rs' 'target_os = "linux"' src crates | xargs sed -i 's/target_os = "linux"/target_os = "agentprof_not_linux"/g'
python3 - <<'PY'
import re
for manifest in ("Cargo.toml", "crates/checks/Cargo.toml", "crates/procstat/Cargo.toml"):
    s = open(manifest).read()
    s = s.replace("""[target.'cfg(target_os = "linux")'.dependencies]""",
                  """[target.'cfg(target_os = "agentprof_not_linux")'.dependencies]""")
    m = re.search(r"""\[target\.'cfg\(not\(target_os = "linux"\)\)'\.dependencies\]\n(sysinfo = [^\n]+)\n""", s)
    if m:
        s = s.replace(m.group(0), "")
        s = s.replace("[dependencies]\n", "[dependencies]\n" + m.group(1) + "\n", 1)
    open(manifest, "w").write(s)
PY
RUSTFLAGS="--check-cfg=cfg(target_os,values(\"agentprof_not_linux\"))" \
  CARGO_TARGET_DIR="${CARGO_TARGET_DIR_PORTABLE:-/tmp/agentprof-portable-target}" \
  cargo check --quiet --lib
echo "portable code paths type-check"
