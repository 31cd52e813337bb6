#!/usr/bin/env bash
# agentprof receive under load on loopback: C senders post a recorded dd-trace-go upload
# back to back for S seconds, with the queue's sync on, R times with the attachments as
# recorded (uncompressed) and R times zstd-compressed as dd-trace-go v2 sends them. Each
# run prints uploads/s acknowledged and stored, p50/p99 time to the 202, the time from a
# 202 to the stored files, peak RSS and CPU seconds of the receiver (see
# examples/receive_bench.rs); the last lines are the medians of each kind.
#
#   scripts/bench_receive.sh [SECONDS] [CONCURRENCY] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
rel=target/release
cargo build --locked --release --quiet
cargo build --locked --release --quiet --example receive_bench
out=$(mktemp -d)
# The receivers' files, kept until the end (on the disk, not a tmpfs: the queue's sync is
# part of what is measured).
work=$(mktemp -d -p "${BENCH_DIR:-$PWD/target}")
trap 'rm -rf "$out" "$work"' EXIT
for i in $(seq "${3:-3}"); do
  for kind in uncompressed zstd; do
    flag=()
    [ "$kind" = zstd ] && flag=(--zstd)
    "$rel/examples/receive_bench" --seconds "${1:-20}" --concurrency "${2:-16}" \
      --agentprof "$rel/agentprof" --dir "$work" "${flag[@]}" | sed 1d | tee "$out/$kind.$i.json"
  done
done
# The probes alone: the time from a 202 to the stored files with nothing else arriving.
"$rel/examples/receive_bench" --seconds 10 --concurrency 0 \
  --agentprof "$rel/agentprof" --dir "$work" | sed 1d | tee "$out/unloaded.json" >/dev/null
python3 - "$out" <<'PY'
import json, pathlib, statistics, sys
runs = {}
for p in sorted(pathlib.Path(sys.argv[1]).glob("*.*.json")):
    runs.setdefault(p.name.split(".")[0], []).append(json.loads(p.read_text()))
for kind, rs in sorted(runs.items()):
    med = lambda f: statistics.median(f(r) for r in rs)
    print(f"{kind} ({len(rs)} runs, {rs[0]['upload_bytes']} B): "
          f"{med(lambda r: r['acknowledged_per_s']):.0f} uploads/s acknowledged, "
          f"{med(lambda r: r['stored_during_load_per_s']):.0f}/s stored; "
          f"202 p50 {med(lambda r: r['to_202_ms']['p50']):.1f} ms, p99 {med(lambda r: r['to_202_ms']['p99']):.1f} ms; "
          f"202→stored p50 {med(lambda r: r['probe_202_to_stored_ms']['p50']):.0f} ms; "
          f"peak RSS {med(lambda r: r['receiver_peak_rss_mib']):.1f} MiB; "
          f"{1000 * med(lambda r: r['receiver_cpu_s'] / max(1, r['acknowledged'])):.2f} ms CPU per upload")
u = json.loads((pathlib.Path(sys.argv[1]) / "unloaded.json").read_text())["probe_202_to_stored_ms"]
print(f"unloaded: 202→stored p50 {u['p50']:.1f} ms, max {u['max']:.1f} ms ({u['probes']} probes)")
PY
