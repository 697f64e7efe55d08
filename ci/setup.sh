#!/usr/bin/env bash
# Sets up everything on a fresh machine, and is cheap to run again:
#   - a virtualenv in .venv with the package (Cython extensions built) and its test tools;
#   - a JDK and Maven (from apt-get when missing);
#   - the Java compatibility harness, built by Maven from Maven Central artifacts;
#   - the independent clients of compat-tests/test_client_*.py, each from its registry (ci/clients/);
#   - a Docker engine, debootstrap and docker-compose (from apt-get when missing) for the Docker tests.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[setup] %s\n' "$*" >&2; }

PYTHON=${PYTHON:-python3}
"$PYTHON" -c 'import sys; assert sys.version_info >= (3, 10), sys.version' \
  || { log "Python 3.10 or newer is required"; exit 1; }

if ! command -v java >/dev/null 2>&1 || ! command -v mvn >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    log "installing a JDK and Maven with apt-get"
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openjdk-17-jdk-headless maven >/dev/null
  else
    log "java, javac and mvn are needed for the compatibility tests; install a JDK 17 and Maven"
    exit 1
  fi
fi

if [ ! -x .venv/bin/python ]; then
  log "creating .venv"
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
log "installing rocketmq-py (building the Cython extensions) with its test, spark, spark-connect and metrics extras"
.venv/bin/python -m pip install -q -e ".[test,fast,spark,spark-connect,metrics]"
.venv/bin/python -c 'import rocketmq_py._codec' \
  || { log "the compiled codec did not build"; exit 1; }

log "building the Java compatibility harness (Maven Central artifacts)"
mvn -B -q -f compat-tests/java/pom.xml -DskipTests package
bash ci/clients/go.sh
bash ci/clients/node.sh
bash ci/clients/cpp.sh
source ci/docker.sh
docker_install || { log "the Docker tests need docker.io, debootstrap and docker-compose"; exit 1; }
log "ready"
