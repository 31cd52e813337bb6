#!/usr/bin/env bash
# The figures of "exactly once and fair" (receive across kill -9, connection slots under
# holders, 413 for what can never fit, captures never overwritten, the ui's memory ceiling,
# OTLP targets that throttle, fail, go silent or stay down) at their acceptance size: the
# tests that hold them, run with AGENTPROF_ACCEPTANCE=1 (kill -9 ten times, 300 holders past
# the default cap beside 100 honest uploads, 50 large profiles under the ui's default
# 1024 MiB, a collector down for 10 minutes beside k8s). Prints each test's `measured:`
# lines and whether it passed; exits non-zero when one failed. About 15 minutes.
#
#   scripts/bench_exactly_once.sh [TEST_NAME_FILTER...]
set -euo pipefail
cd "$(dirname "$0")/.."
tests=(
  receive_whole::kill_9_again_and_again_stores_each_upload_once_and_forwards_it_once_per_key
  receive_hostile::senders_that_could_never_finish_are_closed_for_honest_ones
  receive_hostile::chunk_framing_errors_after_the_last_part_are_refused_and_nothing_is_stored
  otlp::hostile_otlp_requests_are_refused_with_what_is_wrong
  pull::three_pulls_into_one_out_at_once_keep_three_files
  ui_bounds::fifty_large_profiles_keep_the_process_under_its_budget
  otlp::receive_forwards_to_an_otlp_target_that_throttles_then_fails_each_upload_once
  otlp::a_silent_otlp_target_is_bounded_by_the_request_timeout
  k8s::faults::an_otlp_collector_that_throttles_then_fails_gets_every_capture_once
  k8s::faults::a_collector_down_for_a_while_gets_every_capture_once_it_is_back
)
if [ $# -gt 0 ]; then tests=("$@"); fi
cargo test --locked --test cli --no-run --quiet
failed=0
for t in "${tests[@]}"; do
  log=$(mktemp)
  if AGENTPROF_ACCEPTANCE=1 cargo test --locked --quiet --test cli -- --exact "$t" \
      --nocapture --test-threads 1 >"$log" 2>&1; then
    verdict=passed
  else
    verdict=FAILED
    failed=1
  fi
  echo "== $t: $verdict"
  grep -E '^(measured|skipped):' "$log" | sed 's/^/   /' || true
  if [ "$verdict" = FAILED ]; then grep -E 'panicked|assert' "$log" | head -5 | sed 's/^/   /'; fi
  rm -f "$log"
done
exit "$failed"
