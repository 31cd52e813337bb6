#!/usr/bin/env bash
# agentprof start running the built-in system checks (cpu, memory, disk, io, load, network,
# uptime) at a 1 s interval vs prometheus-node-exporter scraped once a second, side by side
# over the same time. Prints the peak RSS (VmHWM) and CPU seconds (utime+stime) of each,
# read from /proc just before each is stopped.
#
#   scripts/bench_start_vs_node_exporter.sh [SECONDS] [AGENTPROF]
#
# Needs prometheus-node-exporter (Debian package) and curl.
set -euo pipefail
secs=${1:-25}
agentprof=${2:-target/release/agentprof}
exporter=$(command -v prometheus-node-exporter || command -v node_exporter || true)
if [[ -z "$exporter" ]]; then
  echo "prometheus-node-exporter is not installed (apt-get install prometheus-node-exporter)" >&2
  exit 2
fi
dir=$(mktemp -d)
trap 'kill $A $N 2>/dev/null || true; rm -rf "$dir"' EXIT
mkdir -p "$dir/conf.d"
for c in cpu memory disk io load network uptime; do
  printf 'instances:\n  - min_collection_interval: 1\n' > "$dir/conf.d/$c.yaml"
done
printf 'confd_path: %s/conf.d\nmetrics_file: %s/metrics.jsonl\n' "$dir" "$dir" > "$dir/agentprof.yaml"
port=$((20000 + RANDOM % 20000))

"$agentprof" start --config "$dir/agentprof.yaml" --duration "$((secs + 5))s" > /dev/null 2> "$dir/agent.err" &
A=$!
"$exporter" --web.listen-address="127.0.0.1:$port" > /dev/null 2> "$dir/exporter.err" &
N=$!
sleep 1
for _ in $(seq 1 "$secs"); do
  curl -s -o /dev/null "http://127.0.0.1:$port/metrics" || true
  sleep 1
done

figures() { # pid name
  local hwm cpu
  hwm=$(awk '/VmHWM/{print $2}' "/proc/$1/status")
  cpu=$(awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$1/stat")
  printf '%-26s peak RSS %6d KiB   CPU %5s s\n' "$2" "$hwm" "$cpu"
}
figures "$A" "agentprof start"
figures "$N" "prometheus-node-exporter"
echo "($secs s; 7 built-in checks at 1 s; node_exporter scraped $secs times, once a second)"
