#!/bin/sh
# file_age: how old a file is, for "the nightly backup ran" and "the feed is fresh" alerts.
# An agentprof exec plugin: DogStatsD datagrams on stdout.
#   conf.d/file_age.yaml:  instances: [{command: [/var/backups/last.tar, 93600]}]
# Arguments: FILE [MAX_AGE_SECONDS]. Metrics tagged path:FILE:
#   file_age.seconds (gauge), file_age.bytes (gauge); service check file_age.fresh:
#   OK when younger than MAX_AGE_SECONDS (default 86400), CRITICAL when older or missing.
set -u
file=${1:?usage: file_age.sh FILE [MAX_AGE_SECONDS]}
max=${2:-86400}
tag="path:$(printf '%s' "$file" | tr ',|' '__')"
if [ ! -e "$file" ]; then
  echo "_sc|file_age.fresh|2|#$tag|m:$file does not exist"
  exit 0
fi
now=$(date +%s)
mtime=$(stat -c %Y -- "$file")
size=$(stat -c %s -- "$file")
age=$((now - mtime))
echo "file_age.seconds:$age|g|#$tag"
echo "file_age.bytes:$size|g|#$tag"
if [ "$age" -le "$max" ]; then
  echo "_sc|file_age.fresh|0|#$tag"
else
  echo "_sc|file_age.fresh|2|#$tag|m:$file is ${age}s old (limit ${max}s)"
fi
