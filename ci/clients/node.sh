#!/usr/bin/env bash
# Installs the Node.js RocketMQ client ali-ons from npm, at the version compat-tests/node/package-lock.json pins,
# for compat-tests/test_client_node.py. Called by ci/setup.sh; cheap to run again (npm ci reinstalls from the lock).
# Node.js and npm come from apt-get when missing; with CI=true a machine without them fails here.
set -euo pipefail
cd "$(dirname "$0")/../.."

log() { printf '[setup:node] %s\n' "$*" >&2; }

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    log "installing Node.js and npm with apt-get"
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs npm >/dev/null
  fi
fi
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  log "node and npm are needed for the Node.js client tests (compat-tests/test_client_node.py)"
  [ "${CI:-}" = "true" ] && exit 1
  log "not CI: going on without them; those tests will be skipped"
  exit 0
fi

log "installing ali-ons (node $(node --version)) from compat-tests/node/package-lock.json"
npm ci --prefix compat-tests/node --no-audit --no-fund --loglevel=error
