"""Issue 15, point 3: the compose cluster of docker/compose (a name server, two broker groups of a master
and a slave) comes up healthy, and the producer and consumer commands of docs/docker.md (examples/produce.py,
examples/consume.py) run against it; then each slave holds its master's CommitLog.

The cluster runs from the image docker/build.sh makes, on free ports (NAMESRV_PORT, BROKER_A_PORT,
BROKER_B_PORT) under a project name of its own, and is taken down with its volumes at the end.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from harness import HarnessUnavailable, docker_images, wire
from harness.docker_backend import require_docker
from harness.processes import free_broker_port, free_port

pytestmark = [pytest.mark.compat, pytest.mark.docker]

REPO = Path(__file__).resolve().parent.parent
COMPOSE_FILE = REPO / "docker" / "compose" / "docker-compose.yml"
SERVICES = ("namesrv", "broker-a", "broker-b", "broker-a-s", "broker-b-s")
HEALTHY_WITHIN_S = 180


def _compose_command() -> list[str]:
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    if subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    raise HarnessUnavailable("neither docker-compose nor `docker compose` is installed (ci/docker.sh installs it)")


@pytest.fixture
def cluster():
    try:
        require_docker()
        compose = _compose_command()
    except HarnessUnavailable as error:
        pytest.skip(str(error))
    image = docker_images.rocketmq_py_image()
    namesrv_port = free_port()
    env = dict(os.environ, ROCKETMQ_PY_IMAGE=image, NAMESRV_PORT=str(namesrv_port),
               BROKER_A_PORT=str(free_broker_port()), BROKER_B_PORT=str(free_broker_port()),
               BROKER_A_S_PORT=str(free_broker_port()), BROKER_B_S_PORT=str(free_broker_port()))
    command = [*compose, "-f", str(COMPOSE_FILE), "-p", f"rmqpy{uuid.uuid4().hex[:8]}"]

    def run(*args: str, timeout: float = 300) -> str:
        done = subprocess.run([*command, *args], env=env, capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
        return done.stdout

    run("up", "-d")
    try:
        yield run, env
    finally:
        subprocess.run([*command, "logs", "--no-color", "--tail", "40"], env=env, timeout=120)
        subprocess.run([*command, "down", "-v", "--timeout", "30"], env=env, capture_output=True, timeout=300)


def _health(run, service: str) -> str:
    container = run("ps", "-q", service).strip()
    if not container:
        return "missing"
    done = subprocess.run(["docker", "inspect", "-f", "{{.State.Health.Status}}", container],
                          capture_output=True, text=True, timeout=60)
    return done.stdout.strip() or done.stderr.strip()


def test_compose_cluster_comes_up_healthy_and_serves_the_readme_commands(cluster):
    run, env = cluster
    namesrv = f"127.0.0.1:{env['NAMESRV_PORT']}"
    deadline = time.monotonic() + HEALTHY_WITHIN_S
    while True:
        health = {service: _health(run, service) for service in SERVICES}
        if set(health.values()) == {"healthy"}:
            break
        assert time.monotonic() < deadline, f"not all healthy within {HEALTHY_WITHIN_S} s: {health}"
        time.sleep(2)

    topic = f"ComposeTopic_{uuid.uuid4().hex[:8]}"
    example = [sys.executable, str(REPO / "examples" / "produce.py"), "--namesrv", namesrv, "--topic", topic,
               "--count", "100"]
    produced = subprocess.run(example, capture_output=True, text=True, timeout=180)
    assert produced.returncode == 0, produced.stdout + produced.stderr
    assert "sent 100/100 SEND_OK" in produced.stdout
    assert "broker-a=" in produced.stdout and "broker-b=" in produced.stdout, produced.stdout

    example = [sys.executable, str(REPO / "examples" / "consume.py"), "--namesrv", namesrv, "--topic", topic,
               "--count", "100"]
    consumed = subprocess.run(example, capture_output=True, text=True, timeout=180)
    assert consumed.returncode == 0, consumed.stdout + consumed.stderr
    assert "received 100/100" in consumed.stdout

    for group in ("A", "B"):
        master, slave = (f"127.0.0.1:{env[f'BROKER_{group}{suffix}_PORT']}" for suffix in ("", "_S"))
        deadline = time.monotonic() + 60
        while _max_offset(slave) != _max_offset(master):
            assert time.monotonic() < deadline, f"broker-{group.lower()}'s slave did not catch up within 60 s"
            time.sleep(1)
        assert _max_offset(master) > 0


def _max_offset(addr: str) -> int:
    _, body = wire.request(addr, wire.GET_BROKER_RUNTIME_INFO, timeout=10)
    return int(json.loads(body)["table"]["commitLogMaxOffset"])
