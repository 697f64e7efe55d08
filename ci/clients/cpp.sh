#!/usr/bin/env bash
# Installs the RocketMQ C++ client (PyPI `rocketmq`, which bundles librocketmq, pinned with its hash in
# compat-tests/cpp/requirements.txt) into its own virtualenv, compat-tests/cpp/.venv, for
# compat-tests/test_client_cpp.py. Called by ci/setup.sh; cheap to run again.
set -euo pipefail
cd "$(dirname "$0")/../.."

log() { printf '[setup:cpp] %s\n' "$*" >&2; }

PYTHON=${PYTHON:-python3}
venv=compat-tests/cpp/.venv
if [ ! -x "$venv/bin/python" ]; then
  log "creating $venv"
  "$PYTHON" -m venv "$venv"
fi
log "installing the C++ client (librocketmq) from compat-tests/cpp/requirements.txt"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --require-hashes -r compat-tests/cpp/requirements.txt
"$venv/bin/python" -c 'from rocketmq.client import Producer, PushConsumer, PullConsumer' \
  || { log "librocketmq does not load in $venv"; exit 1; }
