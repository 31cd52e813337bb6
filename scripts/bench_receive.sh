#!/usr/bin/env bash
# agentprof receive under load on loopback: C senders post a recorded dd-trace-go upload
# back to back for S seconds, with the queue's sync on. Prints uploads/s acknowledged and
# stored, p50/p99 time to the 202, the time from a 202 to the stored files, peak RSS and
# CPU seconds of the receiver (see examples/receive_bench.rs).
#
#   scripts/bench_receive.sh [SECONDS] [CONCURRENCY]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --locked --release --quiet
cargo build --locked --release --quiet --example receive_bench
target/release/examples/receive_bench --seconds "${1:-20}" --concurrency "${2:-16}" \
  --agentprof target/release/agentprof
