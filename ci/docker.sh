#!/usr/bin/env bash
# A private Docker engine for the Docker-based tests and the image builds.
#
#   source ci/docker.sh && docker_start   # installs docker.io when missing, starts dockerd, exports DOCKER_HOST
#   docker_stop                           # stops that dockerd and removes its state
#
# The engine keeps all its state (images, containers, its socket) under one temporary folder, so it
# never touches a system engine. Containers use host networking on loopback: this machine's sandbox
# has no other network the tests may use.
# With CI=true, an engine that cannot be installed or started is a failure (the caller exits).

DOCKER_STATE_DIR=${DOCKER_STATE_DIR:-${TMPDIR:-/tmp}/rocketmq-py-docker}

_docker_log() { printf '[docker] %s\n' "$*" >&2; }

docker_install() {
  if command -v dockerd >/dev/null 2>&1 && command -v debootstrap >/dev/null 2>&1 \
      && command -v docker-compose >/dev/null 2>&1; then
    return 0
  fi
  command -v apt-get >/dev/null 2>&1 || {
    _docker_log "dockerd, debootstrap and docker-compose are needed: install docker.io, debootstrap and docker-compose"
    return 1
  }
  local sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  _docker_log "installing docker.io, debootstrap and docker-compose with apt-get"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    docker.io debootstrap docker-compose >/dev/null
}

docker_start() {
  docker_install || return 1
  mkdir -p "$DOCKER_STATE_DIR"
  export DOCKER_HOST="unix://$DOCKER_STATE_DIR/docker.sock"
  if docker info >/dev/null 2>&1; then
    return 0
  fi
  _docker_log "starting dockerd (state in $DOCKER_STATE_DIR)"
  # No bridge and no iptables: this sandbox refuses both, and the containers use host networking.
  dockerd --data-root "$DOCKER_STATE_DIR/data" --exec-root "$DOCKER_STATE_DIR/exec" \
    --pidfile "$DOCKER_STATE_DIR/dockerd.pid" --host "$DOCKER_HOST" \
    --bridge=none --iptables=false --ip6tables=false \
    >"$DOCKER_STATE_DIR/dockerd.log" 2>&1 &
  local waited=0
  until docker info >/dev/null 2>&1; do
    if [ "$waited" -ge 60 ]; then
      _docker_log "dockerd did not answer within 60 s; its log:"
      tail -n 30 "$DOCKER_STATE_DIR/dockerd.log" >&2
      return 1
    fi
    sleep 1; waited=$((waited + 1))
  done
  _docker_log "dockerd is up ($(docker version --format '{{.Server.Version}}'))"
}

docker_stop() {
  [ -f "$DOCKER_STATE_DIR/dockerd.pid" ] || return 0
  local pid; pid=$(cat "$DOCKER_STATE_DIR/dockerd.pid")
  docker ps -q 2>/dev/null | xargs -r docker kill >/dev/null 2>&1 || true
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  kill -9 "$pid" 2>/dev/null || true
  _docker_log "dockerd stopped"
}
