#!/usr/bin/env bash
# agentprof k8s on two 110-pod nodes of the loopback API server, side by side: one busy (two
# rules, heap and goroutine every 1 and 2 minutes, the 32 MiB delta cache full), one idle (no
# scheduled type, no threshold). Prints API requests by verb at start and over the run, the
# requests to recover a cut watch, peak RSS and CPU seconds (see examples/k8s_bench.rs).
#
#   scripts/bench_k8s.sh [MINUTES]
#
# Needs go (the served profiles are a real Go service's) and openssl.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --locked --release --quiet
# The harness (loopback API server, profile server) needs no optimising: a debug build.
cargo run --locked --quiet --example k8s_bench -- --minutes "${1:-10}" --agentprof "target/release/agentprof"
