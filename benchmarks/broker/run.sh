#!/usr/bin/env bash
# Broker benchmark: Java's benchmark producer and consumer against our broker and the Java broker, ASYNC_FLUSH
# and SYNC_FLUSH, in one run (JSON out). See benchmarks/broker/run.py for the options.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x .venv/bin/python ] || bash ci/setup.sh >&2
exec .venv/bin/python benchmarks/broker/run.py "$@"
