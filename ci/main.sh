#!/usr/bin/env bash
# The main job: sets up (ci/setup.sh), starts the official Java name server and broker, and queries
# them from Python. (It becomes `rocketmq-py quickstart` once our own broker lands.)
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
exec .venv/bin/python ci/main_job.py
