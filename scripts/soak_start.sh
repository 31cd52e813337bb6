#!/usr/bin/env bash
# agentprof start's RSS over a long run: the 7 built-in system checks at a 1 s interval for
# SECONDS, VmRSS read every second; prints the RSS after 1 minute, after every further minute,
# and at the end. With --profile, developer mode (the agent samples itself and logs its top
# calls every collector_profile_interval loops, default 20).
#
#   scripts/soak_start.sh [SECONDS] [--profile] [AGENTPROF]
set -euo pipefail
secs=${1:-600}
mode=${2:-}
agentprof=${3:-target/release/agentprof}
dir=$(mktemp -d)
trap 'kill $A 2>/dev/null || true; rm -rf "$dir"' EXIT
mkdir -p "$dir/conf.d"
for c in cpu memory disk io load network uptime; do
  printf 'instances:\n  - min_collection_interval: 1\n' > "$dir/conf.d/$c.yaml"
done
printf 'confd_path: %s/conf.d\nmetrics_file: %s/metrics.jsonl\nlog_file: %s/collector.log\nprofile_dir: %s/profiles\n' \
  "$dir" "$dir" "$dir" "$dir" > "$dir/agentprof.yaml"
args=(start --config "$dir/agentprof.yaml" --duration "$((secs + 2))s")
[[ "$mode" == "--profile" ]] && args+=(--profile)
"$agentprof" "${args[@]}" > /dev/null 2> "$dir/agent.err" &
A=$!
for t in $(seq 1 "$secs"); do
  sleep 1
  rss=$(awk '/VmRSS/{print $2}' "/proc/$A/status")
  if (( t % 60 == 0 || t == secs )); then
    echo "after ${t}s: RSS ${rss} kB"
  fi
done
wait $A
