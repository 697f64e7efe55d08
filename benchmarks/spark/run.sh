#!/usr/bin/env bash
# Spark benchmark: spark.read.format("rocketmq") against the raw Python lite pull consumer on the same
# preloaded range of one Java broker (JSON out; progress on stderr). Needs the spark extra.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x .venv/bin/python ] || bash ci/setup.sh >&2
exec .venv/bin/python benchmarks/spark/bench_spark.py "$@"
