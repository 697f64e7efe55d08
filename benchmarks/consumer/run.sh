#!/usr/bin/env bash
# Consumer benchmark: the Python push (concurrent and orderly), asyncio push and lite pull consumers and Java's
# push consumers reading the same preloaded topic from one Java broker (JSON out; progress on stderr).
# PYTHON=path/to/python picks the interpreter (default .venv/bin/python), e.g. a virtualenv without the
# `fast` extra to measure without uvloop.
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-.venv/bin/python}
if [ ! -x "$PYTHON" ]; then
  [ "$PYTHON" = .venv/bin/python ] || { echo "no interpreter at $PYTHON" >&2; exit 1; }
  bash ci/setup.sh >&2
fi
exec "$PYTHON" benchmarks/consumer/bench_consumer.py "$@"
