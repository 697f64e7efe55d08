#!/usr/bin/env bash
# The main job: sets up (ci/setup.sh), then runs `rocketmq-py quickstart`: our name server and broker in a
# temporary directory, a producer and a consumer of this package, and a summary. Exit code 0 only when every
# message sent was consumed back unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
exec .venv/bin/rocketmq-py quickstart "$@"
