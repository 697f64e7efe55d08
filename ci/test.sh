#!/usr/bin/env bash
# The test command: sets up (ci/setup.sh), then runs
#   0. mypy --strict on the package and the typed examples ([tool.mypy] in pyproject.toml), the same through
#      an editable install in a fresh virtualenv from another folder (ci/editable.sh), and the documentation
#      site (docs/: Sphinx with myst-parser, the API reference by autodoc) built with every warning an error,
#   1. the hermetic suite against the pure-Python twins,
#   2. for each supported Python (ci/pythons.sh: 3.10 to 3.13), the manylinux wheel built, checked and
#      installed without a compiler, and the hermetic suite against that installed wheel's compiled modules,
#      which must load (ci/wheel.sh): the suite against the compiled modules, on every supported Python, this
#      run's own included (a separate run of it from the source tree would repeat that one); this stage
#      starts in the background with stage 0 and runs beside stages 0, 1 and the start of stage 3 (the
#      compatibility suite no longer waits for it: it was the stage that suite waited for), and its log, one
#      summary line per Python at the end, is printed after stage 3,
#   3. the compatibility suite against the official Java RocketMQ processes, our broker as users get it
#      (serverWorkerProcesses not set: one front process per core, two on CI's two cores), then those of its
#      tests that issues 10 and 30 name (Java clients, kill -9 during SYNC_FLUSH sends, the store moves, ACL,
#      the Go, C++ and Node clients), with bad frames and TLS, again with our broker as one process
#      (serverWorkerProcesses=0),
#   4. the Docker compatibility suite: our image and the official servers in containers, on a private
#      Docker engine started for the run and stopped after it (ci/docker.sh).
# Any failure fails the run, including a pytest run that collected no test; with CI=true a Docker engine
# that cannot start is a failure too.
set -euo pipefail
# The main compatibility stage runs our broker as users get it: nothing in the environment chooses its fronts.
unset ROCKETMQ_PY_BROKER_WORKERS
cd "$(dirname "$0")/.."
started=$SECONDS
# Each stage's header says how long the run has taken so far: the whole run must stay under 45 minutes.
stage() { printf '\n=== %s (at %d s) ===\n' "$1" "$((SECONDS - started))"; }
bash ci/setup.sh

stage "started in the background: the manylinux wheel of each supported Python and its hermetic suite"
wheel_log=$(mktemp)
# In a process group of its own (setsid), so that a run that fails early stops the wheel's test suites too:
# killing only the script left its pytest processes running after the run had ended.
setsid bash ci/wheel.sh >"$wheel_log" 2>&1 &
wheel_pid=$!
trap 'kill -- -"$wheel_pid" 2>/dev/null || true' EXIT

run_pytest() {
  local label=$1; shift
  stage "$label"
  local status=0
  .venv/bin/python -m pytest "$@" || status=$?
  if [ "$status" -eq 5 ]; then
    echo "pytest collected no tests for: $label" >&2
    exit 1
  fi
  [ "$status" -eq 0 ] || exit "$status"
}

stage "mypy --strict: the package, examples/typed_client.py and examples/aiokafka_style.py"
.venv/bin/python -m mypy --no-incremental --cache-dir=/dev/null
stage "mypy --strict through an editable install, from another folder"
bash ci/editable.sh
stage "the documentation site (Sphinx, warnings are errors)"
docs_out=$(mktemp -d)
.venv/bin/python -m sphinx -W --keep-going -q -E -b html docs "$docs_out"
rm -rf "$docs_out"

ROCKETMQ_PY_NO_EXTENSIONS=1 run_pytest "unit and loopback tests, pure-Python twins" tests -q -p no:cacheprovider
# ROCKETMQ_PY_BROKER_WORKERS unset: our brokers' broker.conf leaves serverWorkerProcesses out (the default).
ROCKETMQ_PY_REQUIRE_EXTENSIONS=1 run_pytest "compatibility tests against Java RocketMQ" compat-tests -q -p no:cacheprovider -rs \
  --durations=25 -m "not docker"
ROCKETMQ_PY_BROKER_WORKERS=0 ROCKETMQ_PY_REQUIRE_EXTENSIONS=1 run_pytest \
  "compatibility tests again, our broker as one process" \
  compat-tests/test_broker_java_clients.py compat-tests/test_broker_crash.py compat-tests/test_broker_store_move.py \
  compat-tests/test_broker_bad_input.py compat-tests/test_tls.py compat-tests/test_broker_acl_matrix.py \
  -q -p no:cacheprovider -rs -m "not docker"
# The Go, C++ and Node clients' tests against our broker (their [java] cases do not use it).
ROCKETMQ_PY_BROKER_WORKERS=0 ROCKETMQ_PY_REQUIRE_EXTENSIONS=1 run_pytest \
  "the Go, C++ and Node clients again, our broker as one process" \
  compat-tests/test_client_go.py compat-tests/test_client_cpp.py compat-tests/test_client_node.py -k ours \
  -q -p no:cacheprovider -rs -m "not docker"

stage "the manylinux wheels, installed without a compiler: the hermetic suite on each supported Python"
wheel_status=0
wait "$wheel_pid" || wheel_status=$?
trap - EXIT
cat "$wheel_log"
rm -f "$wheel_log"
[ "$wheel_status" -eq 0 ] || exit "$wheel_status"

source ci/docker.sh
if docker_start; then
  trap docker_stop EXIT
elif [ "${CI:-}" = "true" ]; then
  echo "the Docker engine did not start, and CI=true: the Docker tests cannot be skipped" >&2
  exit 1
fi
ROCKETMQ_PY_REQUIRE_EXTENSIONS=1 run_pytest "Docker compatibility tests (our image, the official servers' image)" \
  compat-tests -q -p no:cacheprovider -rs -m docker
stage "all passed"
