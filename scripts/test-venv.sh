#!/usr/bin/env bash
# The Python virtualenv agentprof's tests run Python checks in: datadog-checks-base with its
# dependencies, markdown-it-py (the gate's markdown report is read by a real parser) and
# hatchling (an integration is installed with `pip install -e`, as integrations-core builds),
# ddtrace (its profiler is a real client of `agentprof receive`) and pyroscope-io 1.4.0
# (Pyroscope's Python SDK, another), and py-spy 0.4.3 (the reference for sampled Python profiles).
# Creates target/test-venv when it is missing or incomplete, then prints its interpreter.
# The tests call this themselves; .ci/run calls it first so the install shows in the log.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/test-venv
want='import datadog_checks.base, markdown_it, hatchling, ddtrace, pyroscope'
mkdir -p target
exec 9>target/test-venv.lock
flock 9
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "$want" 2>/dev/null || [ ! -x "$venv/bin/py-spy" ]; then
  rm -rf "$venv"
  if ! python3 -m venv "$venv" >&2; then
    echo "test-venv: python3 -m venv failed; on Debian: apt-get install python3-venv" >&2
    exit 1
  fi
  "$venv/bin/pip" install -q --disable-pip-version-check \
    'datadog-checks-base[deps]' markdown-it-py hatchling ddtrace 'pyroscope-io==1.4.0' 'py-spy==0.4.3' >&2
  "$venv/bin/python" -c "$want"
fi
echo "$PWD/$venv/bin/python"
