#!/usr/bin/env bash
# Builds compat-tests/go (our driver of the Go client, github.com/apache/rocketmq-client-go/v2 v2.1.2, from the
# Go module proxy, checked against the committed go.sum) into compat-tests/go/bin/gocompat.
# Installs Go from Debian's packages when it is missing. Cheap to run again (Go's build cache).
set -euo pipefail
cd "$(dirname "$0")/../../compat-tests/go"

log() { printf '[setup:go] %s\n' "$*" >&2; }

if ! command -v go >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    log "installing Go with apt-get"
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq golang-go >/dev/null
  else
    log "Go 1.18 or newer is needed for the Go client compatibility tests"
    exit 1
  fi
fi
log "building the Go client driver with $(go version)"
go build -mod=readonly -buildvcs=false -o bin/gocompat .
