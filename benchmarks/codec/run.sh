#!/usr/bin/env bash
# Codec benchmark: the compiled codec, its pure-Python twin and Java's codec in one run (JSON out).
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x .venv/bin/python ] || bash ci/setup.sh >&2
exec .venv/bin/python benchmarks/codec/run.py "$@"
