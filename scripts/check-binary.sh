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
# What the README installs stays light: under 30 MiB, with the symbol table (function names)
# and the compressed line tables (files and lines) that `--profile` names built-ins from.
size=$(stat -c %s "$bin")
max=$((30 * 1024 * 1024))
[ "$size" -le "$max" ] || { echo "check-binary: $bin is $size bytes, over 30 MiB ($max)" >&2; exit 1; }
sections=$(readelf -SW "$bin")
grep -q ' \.symtab ' <<<"$sections" || { echo "check-binary: $bin has no symbol table" >&2; exit 1; }
grep -Eq ' \.debug_line +PROGBITS .* C ' <<<"$sections" \
  || { echo "check-binary: $bin has no compressed .debug_line" >&2; exit 1; }
profile=$("$bin" check disk --profile 2>/dev/null)
grep -q '(crates/checks/src/builtin/disk.rs' <<<"$profile" \
  || { echo "check-binary: check disk --profile names no file of agentprof's:" >&2; echo "$profile" >&2; exit 1; }
echo "check-binary: $bin is a PIE linked against the system's libc, $((size / 1024 / 1024)) MiB, profiles named with files and lines"
