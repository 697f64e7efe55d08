#!/usr/bin/env bash
# An editable install (`pip install -e .`) is visible to type checkers: a fresh virtualenv outside the checkout
# gets the package in editable mode, and mypy --strict, run from another folder against that virtualenv, checks
# a program that uses it (examples/aiokafka_style.py, copied there). It fails when mypy cannot find the package
# (setuptools' import-hook editable mode, which pyproject.toml's package-dir avoids) or when the program is wrong.
# Needs ci/setup.sh to have run (it uses .venv's mypy).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

log() { printf '[editable] %s\n' "$*" >&2; }

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"${PYTHON:-python3}" -m venv "$WORK/venv"
# No compiled modules: the type checker reads the .py files (the twins), and this keeps the install quick.
ROCKETMQ_PY_NO_EXTENSIONS=1 "$WORK/venv/bin/python" -m pip install -q --no-deps -e "$ROOT"
cp examples/aiokafka_style.py "$WORK/program.py"
cd "$WORK"
"$ROOT/.venv/bin/python" -m mypy --strict --no-incremental --cache-dir=/dev/null \
  --python-executable "$WORK/venv/bin/python" program.py
log "mypy --strict sees the editable install from $WORK"
