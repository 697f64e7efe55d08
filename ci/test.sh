#!/usr/bin/env bash
# The test command: sets up (ci/setup.sh), then runs
#   1. the hermetic suite against the compiled modules (which must load),
#   2. the same suite against the pure-Python twins,
#   3. the compatibility suite against the official Java RocketMQ processes.
# Any failure fails the run, including a pytest run that collected no test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh

run_pytest() {
  local label=$1; shift
  printf '\n=== %s ===\n' "$label"
  local status=0
  .venv/bin/python -m pytest "$@" || status=$?
  if [ "$status" -eq 5 ]; then
    echo "pytest collected no tests for: $label" >&2
    exit 1
  fi
  [ "$status" -eq 0 ] || exit "$status"
}

ROCKETMQ_PY_REQUIRE_EXTENSIONS=1 run_pytest "unit and loopback tests, compiled modules" tests -q -p no:cacheprovider
ROCKETMQ_PY_NO_EXTENSIONS=1 run_pytest "unit and loopback tests, pure-Python twins" tests -q -p no:cacheprovider
ROCKETMQ_PY_REQUIRE_EXTENSIONS=1 run_pytest "compatibility tests against Java RocketMQ" compat-tests -q -p no:cacheprovider -rs
