#!/usr/bin/env bash
# The release binary is an ordinary one: a position-independent executable (ET_DYN with an
# interpreter: its code at a random address on every run), linked dynamically against the
# system's libc, with no static-link or fixed-address settings left in the build.
set -euo pipefail
bin=${1:-target/release/agentprof}
header=$(readelf -hW "$bin")
grep -q 'Type:[[:space:]]*DYN' <<<"$header" || { echo "check-binary: $bin is not PIE" >&2; exit 1; }
readelf -lW "$bin" | grep -q 'Requesting program interpreter' \
  || { echo "check-binary: $bin has no program interpreter (static?)" >&2; exit 1; }
readelf -dW "$bin" | grep -q 'NEEDED.*libc\.so\.6' \
  || { echo "check-binary: $bin is not linked against libc.so.6" >&2; exit 1; }
readelf -dW "$bin" | grep -q 'FLAGS_1.*PIE' \
  || { echo "check-binary: $bin lacks DF_1_PIE" >&2; exit 1; }
# No packed relative relocations: they make the binary require glibc 2.36 (a
# GLIBC_ABI_DT_RELR version) and saved nothing measurable on a cold start.
if readelf -dW "$bin" | grep -q '(RELR)'; then
  echo "check-binary: $bin has packed relative relocations (it would need glibc 2.36)" >&2; exit 1
fi
echo "check-binary: $bin is a PIE linked against the system's libc"
