#!/usr/bin/env bash
# agentprof start's own footprint beside prometheus-node-exporter's, over the same time, on
# a host holding SOCKETS TCP sockets (another process keeps them open on loopback, as a busy
# server would): agentprof in developer mode (--profile: every run's memory, I/O, fds and
# connections measured before and after, the agent sampled at 99 Hz) with three built-in
# checks (uptime, load, memory) every second and its --metrics-listen endpoint scraped once
# a second; node_exporter (default collectors) scraped once a second. Prints each one's CPU
# seconds (utime+stime) and peak RSS (VmHWM), read from /proc just before it is stopped,
# and agentprof's CPU as a fraction of node_exporter's.
#
#   scripts/bench_start_vs_node_exporter.sh [SECONDS] [AGENTPROF] [SOCKETS]
#
# Defaults: 20 s, target/release/agentprof, 10000 sockets. Needs prometheus-node-exporter
# (Debian package), curl and python3.
set -euo pipefail
secs=${1:-20}
agentprof=${2:-target/release/agentprof}
sockets=${3:-10000}
exporter=$(command -v prometheus-node-exporter || command -v node_exporter || true)
if [[ -z "$exporter" ]]; then
  echo "prometheus-node-exporter is not installed (apt-get install prometheus-node-exporter)" >&2
  exit 2
fi
dir=$(mktemp -d)
A='' N='' H=''
trap 'kill $A $N $H 2>/dev/null || true; [[ -s "$dir/agent.err" ]] && tail -3 "$dir/agent.err" >&2; rm -rf "$dir"' EXIT

# The host's sockets: listening ones, each in /proc/net/tcp as a connection would be.
python3 -c '
import resource, socket, sys, time
n = int(sys.argv[1])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 64), hard))
socks = []
for _ in range(n):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1); socks.append(s)
print("ready", flush=True)
time.sleep(3600)
' "$sockets" > "$dir/holder.out" &
H=$!
for _ in $(seq 1 100); do grep -q ready "$dir/holder.out" 2>/dev/null && break; sleep 0.1; done
grep -q ready "$dir/holder.out" || { echo "could not open $sockets sockets" >&2; exit 1; }

mkdir -p "$dir/conf.d"
for c in uptime load memory; do
  printf 'instances:\n  - min_collection_interval: 1\n' > "$dir/conf.d/$c.yaml"
done
printf 'confd_path: %s/conf.d\nmetrics_file: %s/metrics.jsonl\nprofile_dir: %s/profiles\nlog_file: %s/agent.log\n' \
  "$dir" "$dir" "$dir" "$dir" > "$dir/agentprof.yaml"
port=$((20000 + RANDOM % 20000))
mport=$((port + 1))

"$agentprof" start ${AGENTPROF_START_FLAGS---profile} --config "$dir/agentprof.yaml" --metrics-listen "127.0.0.1:$mport" \
  --duration "$((secs + 5))s" > /dev/null 2> "$dir/agent.err" &
A=$!
"$exporter" --web.listen-address="127.0.0.1:$port" > /dev/null 2> "$dir/exporter.err" &
N=$!
sleep 1
for _ in $(seq 1 "$secs"); do
  curl -s --max-time 5 -o /dev/null "http://127.0.0.1:$port/metrics" || true
  curl -s --max-time 5 -o /dev/null "http://127.0.0.1:$mport/metrics" || true
  sleep 1
done

cpu() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$1/stat"; }
hwm() { awk '/VmHWM/{print $2}' "/proc/$1/status"; }
a_cpu=$(cpu "$A") n_cpu=$(cpu "$N")
printf '%-26s CPU %5s s   peak RSS %6d KiB\n' "agentprof start ${AGENTPROF_START_FLAGS---profile}" "$a_cpu" "$(hwm "$A")"
printf '%-26s CPU %5s s   peak RSS %6d KiB\n' "prometheus-node-exporter" "$n_cpu" "$(hwm "$N")"
awk -v a="$a_cpu" -v n="$n_cpu" 'BEGIN { if (n > 0) printf "agentprof / node_exporter CPU: %.2f\n", a / n }'
echo "($secs s; $sockets TCP sockets held on the host; 3 built-in checks at 1 s in developer mode; both scraped once a second)"
