"""The images of the Docker-based compatibility tests, built here from Debian packages and Maven Central jars.

* :func:`java_server_image`: a stand-in for the official ``apache/rocketmq`` image (Docker Hub is out of
  reach): ``compat-tests/docker/java-server`` on the local Debian base, with the official name server and
  broker jars of the version the JVM backend runs (the Maven build's server classpath) and the official
  image's layout (``$ROCKETMQ_HOME/bin/mqnamesrv``, ``mqbroker``, logs under ``~/logs/rocketmqlogs``).
* :func:`rocketmq_py_image`: our image, built by ``docker/build.sh`` (the one users run).

Each is built once per test session; Docker's layer cache makes a rebuild of unchanged inputs quick.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from .build import COMPAT_DIR, HarnessUnavailable, ensure_built
from .processes import write_logback

REPO = COMPAT_DIR.parent
JAVA_SERVER_CONTEXT = COMPAT_DIR / "docker" / "java-server"
DEBIAN_BASE = "rocketmq-py-base:bookworm"
CONTAINER_LOG_DIR = Path("/home/rocketmq/logs/rocketmqlogs")
BUILD_TIMEOUT_S = 20 * 60


def _run(command: list[str], what: str) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise HarnessUnavailable(f"{what}: {error}") from None
    if done.returncode != 0:
        raise HarnessUnavailable(f"{what} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout


@functools.cache
def rocketmq_py_image() -> str:
    """Our image's tag, built by docker/build.sh (which also makes the Debian base when none can be pulled)."""
    out = _run(["bash", str(REPO / "docker" / "build.sh")], "docker/build.sh")
    return out.strip().splitlines()[-1]


def _base_image() -> str:
    rocketmq_py_image()  # docker/build.sh made the Debian base when the python image could not be pulled
    probe = subprocess.run(["docker", "image", "inspect", DEBIAN_BASE], capture_output=True)
    return DEBIAN_BASE if probe.returncode == 0 else "python:3.11-slim-bookworm"


@functools.cache
def java_server_image(version: str) -> str:
    """The stand-in official image for server ``version``, tagged ``rocketmq-py-compat/rocketmq:<version>``."""
    tag = f"rocketmq-py-compat/rocketmq:{version}"
    build = ensure_built()
    with tempfile.TemporaryDirectory() as context_dir:
        context = Path(context_dir)
        shutil.copytree(JAVA_SERVER_CONTEXT, context, dirs_exist_ok=True)
        lib = context / "lib"
        lib.mkdir()
        for jar in build.server_classpath.split(os.pathsep):
            if jar.endswith(".jar"):
                shutil.copy2(jar, lib)
        # The official scripts read $ROCKETMQ_HOME/conf/logback_*.xml; these send the logs to ~/logs/rocketmqlogs.
        for name in ("namesrv", "broker"):
            write_logback(context / "conf" / f"logback_{name}.xml", CONTAINER_LOG_DIR, name)
        _run(["docker", "build", "-q", "--network", "host", "--build-arg", f"BASE={_base_image()}",
              "--build-arg", f"VERSION={version}", "-t", tag, str(context)], f"docker build {tag}")
    return tag
