#!/usr/bin/env bash
# How often the leak signal cries wolf: every built-in check and every check shipped in
# checks/ (none of which leaks) run RUNS times with `agentprof check NAME -t RUNS --json`;
# prints each instance's RSS slope and whether it was flagged (`steady_growth`), then the
# count of flagged instances. Python checks run on the test venv's datadog_checks_base.
#
#   scripts/leak-false-positives.sh [RUNS] [AGENTPROF]
#
# Defaults: 300 runs, target/release/agentprof.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-300}
agentprof=$(realpath "${2:-target/release/agentprof}")
python=$(scripts/test-venv.sh)
dir=$(mktemp -d)
S=''
trap 'kill $S 2>/dev/null || true; rm -rf "$dir"' EXIT
port=$((20000 + RANDOM % 20000))
mkdir -p "$dir/www" "$dir/conf.d" "$dir/checks"
echo ok > "$dir/www/index.html"
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$dir/www" > /dev/null 2>&1 &
S=$!
cp checks/*.py checks/*.sh "$dir/checks/"
printf 'instances:\n  - url: http://127.0.0.1:%s/\n' "$port" > "$dir/conf.d/http_check.yaml"
printf 'instances:\n  - directory: /etc\n' > "$dir/conf.d/directory.yaml"
printf 'instances:\n  - command: [/etc/hostname, 93600]\n' > "$dir/conf.d/file_age.yaml"
printf 'instances:\n  - name: python\n    search_string: [python3]\n' > "$dir/conf.d/process.yaml"
sleep 0.5

flagged=0 total=0
printf '%-12s %-8s %6s %14s %s\n' check kind runs "slope B/run" flagged
for name in cpu disk io load memory network process uptime directory file_age http_check; do
  args=(check "$name" -t "$runs" --json)
  [[ -f "$dir/checks/$name.py" ]] && args+=(--python "$python")
  out=$(cd "$dir" && "$agentprof" "${args[@]}" 2> "$dir/err") || {
    echo "$name: agentprof failed: $(cat "$dir/err")" >&2
    exit 1
  }
  while read -r kind n slope steady; do
    total=$((total + 1))
    [[ "$steady" == true ]] && flagged=$((flagged + 1))
    printf '%-12s %-8s %6s %14s %s\n' "$name" "$kind" "$n" "$slope" "$steady"
  done < <(python3 -c '
import json, sys
d = json.load(sys.stdin)
for l in d.get("leak") or []:
    print(d["kind"], l["runs"], "%.0f" % l["rss_slope_bytes_per_run"], str(l["steady_growth"]).lower())
' <<< "$out")
done
echo "flagged as leaking: $flagged of $total instances ($runs runs each)"
