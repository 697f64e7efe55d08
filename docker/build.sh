#!/usr/bin/env bash
# Builds the rocketmq-py image here, from Debian packages and this checkout's wheels:
#
#   bash docker/build.sh [--base IMAGE] [--tag TAG]
#
#   1. a Docker engine: the one `docker info` reaches, or a private one started by ci/docker.sh
#      (then export the DOCKER_HOST this script prints to use the image);
#   2. the base: IMAGE when given; else python:3.11-slim-bookworm when it can be pulled; else
#      rocketmq-py-base:bookworm, a minimal Debian bookworm made by debootstrap from this machine's
#      apt sources (about 3 minutes, once);
#   3. the wheels: dist/wheelhouse/ when ci/wheel.sh made it, else built now, plus the dependencies'
#      wheels downloaded by pip on the host (no pip inside the build);
#   4. `docker build` of docker/Dockerfile as rocketmq-py:VERSION and rocketmq-py:latest.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
log() { printf '[docker-build] %s\n' "$*" >&2; }

BASE=""
TAG=""
while [ $# -gt 0 ]; do
  case "$1" in
    --base) BASE=$2; shift 2 ;;
    --tag) TAG=$2; shift 2 ;;
    *) log "unknown argument $1"; exit 2 ;;
  esac
done

if ! docker info >/dev/null 2>&1; then
  # shellcheck source=../ci/docker.sh
  source ci/docker.sh
  docker_start
  log "using the private engine: export DOCKER_HOST=$DOCKER_HOST"
fi

PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] && PYTHON=.venv/bin/python
VERSION=$("$PYTHON" -c 'import runpy; print(runpy.run_path("rocketmq_py/_version.py")["__version__"])')
TAG=${TAG:-rocketmq-py:$VERSION}

debian_mirror() {
  # The first Debian archive this machine's apt is configured with (deb822 or one-line format).
  local uri
  uri=$(grep -hE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | awk '{print $2}' | head -n1)
  [ -n "$uri" ] || uri=$(grep -hE '^deb ' /etc/apt/sources.list 2>/dev/null | grep -v security | awk '{print $2}' | head -n1)
  [ -n "$uri" ] || { log "no Debian archive in this machine's apt sources"; return 1; }
  echo "$uri"
}

build_debian_base() {
  local image=rocketmq-py-base:bookworm
  if docker image inspect "$image" >/dev/null 2>&1; then echo "$image"; return; fi
  command -v debootstrap >/dev/null 2>&1 || { source ci/docker.sh; docker_install; }
  local rootfs; rootfs=$(mktemp -d)
  log "making a minimal Debian bookworm with debootstrap (a few minutes, once)"
  debootstrap --variant=minbase bookworm "$rootfs" "$(debian_mirror)" >"$rootfs.log" 2>&1 \
    || { tail -n 20 "$rootfs.log" >&2; rm -rf "$rootfs" "$rootfs.log"; return 1; }
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | docker import - "$image" >/dev/null
  rm -rf "$rootfs" "$rootfs.log"
  echo "$image"
}

if [ -z "$BASE" ]; then
  if docker pull -q python:3.11-slim-bookworm >/dev/null 2>&1; then
    BASE=python:3.11-slim-bookworm
  else
    log "python:3.11-slim-bookworm cannot be pulled here; using a local Debian base"
    BASE=$(build_debian_base)
  fi
fi

CONTEXT=$(mktemp -d)
trap 'rm -rf "$CONTEXT"' EXIT
cp docker/Dockerfile docker/entrypoint.sh docker/healthcheck.py "$CONTEXT/"
mkdir "$CONTEXT/wheels"
# The image's Python is 3.11 (the base above, and the dependencies' wheels below): ci/wheel.sh leaves a wheel for
# every supported Python in dist/wheelhouse, and only the 3.11 one belongs in the image.
if ls dist/wheelhouse/rocketmq_py-"$VERSION"-cp311-cp311-*.whl >/dev/null 2>&1; then
  cp dist/wheelhouse/rocketmq_py-"$VERSION"-cp311-cp311-*.whl "$CONTEXT/wheels/"
else
  log "building the rocketmq-py wheel"
  "$PYTHON" -m pip wheel -q --no-deps -w "$CONTEXT/wheels" .
fi
log "downloading the dependencies' wheels"
"$PYTHON" -m pip download -q --only-binary=:all: --python-version 3.11 --platform manylinux2014_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 --platform linux_x86_64 \
  --implementation cp \
  -d "$CONTEXT/wheels" "$(ls "$CONTEXT"/wheels/rocketmq_py-*.whl)[fast,metrics]"

log "docker build $TAG (base $BASE)"
docker build -q --network host --build-arg BASE="$BASE" -t "$TAG" -t rocketmq-py:latest "$CONTEXT" >/dev/null
log "built $TAG"
echo "$TAG"
