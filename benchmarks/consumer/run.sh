#!/usr/bin/env bash
# Consumer benchmark: the Python push, asyncio push and lite pull consumers and Java's push consumer
# reading the same preloaded topic from one Java broker (JSON out; progress on stderr).
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x .venv/bin/python ] || bash ci/setup.sh >&2
exec .venv/bin/python benchmarks/consumer/bench_consumer.py "$@"
