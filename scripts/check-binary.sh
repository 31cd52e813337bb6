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
# build.rs packs the relative relocations where the glibc has DT_RELR (2.36): it must not be
# lost silently (a linker change, a flag) while its 13 % of the cold start is claimed.
glibc=$(getconf GNU_LIBC_VERSION | awk '{print $2}')
if [ "$(printf '%s\n2.36\n' "$glibc" | sort -V | head -1)" = 2.36 ]; then
  readelf -dW "$bin" | grep -q '(RELR)' \
    || { echo "check-binary: $bin has no packed relative relocations (glibc $glibc has them; see build.rs)" >&2; exit 1; }
fi
echo "check-binary: $bin is a PIE linked against the system's libc"
