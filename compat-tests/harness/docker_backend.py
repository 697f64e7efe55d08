"""Containers instead of local processes: the official servers and ours, each in its image.

Selected for the whole suite with ``ROCKETMQ_COMPAT_BACKEND=docker`` (see harness.backend), and used
directly by the Docker tests (test_docker_cluster.py). Same interface as harness.processes:
``JavaNameServer`` / ``JavaBroker`` (and ``PyNameServer`` / ``PyBroker`` for our image) with ``addr``,
``port``, ``workdir``, ``start()``, ``stop()``, ``kill()``, ``restart()``, ``log_tail()``, context manager.

The containers use host networking on loopback, so the ports chosen here are the ports the servers bind
(this machine's sandbox lets tests reach no other network). The work directory is mounted at /compat:
it holds the config files, RocketMQ's logs and (for a broker) the store, so a store moves between
containers by mounting the same directory. The official servers run from a stand-in of the official
image built here (harness.docker_images; ``ROCKETMQ_COMPAT_IMAGE`` names another image instead).

``start()`` fails with HarnessUnavailable when ``docker info`` fails.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
import uuid

from . import docker_images, wire
from .build import POM, HarnessUnavailable
from .processes import (DEFAULT_STARTUP_TIMEOUT_S, DEFAULT_STOP_TIMEOUT_S, ManagedProcess, StartupError,
                        _register, broker_config, free_broker_port, free_port, write_properties)

MOUNT = "/compat"
CONTAINER_LOG_DIR = "/home/rocketmq/logs/rocketmqlogs"
JAVA_OPT_EXT = "-Xms256m -Xmx512m -Xmn128m -XX:MaxDirectMemorySize=256m"


def server_version() -> str:
    m = re.search(r"<rocketmq\.server\.version>([^<]+)</rocketmq\.server\.version>", POM.read_text())
    if not m:
        raise HarnessUnavailable(f"rocketmq.server.version not found in {POM}")
    return m.group(1).strip()


def image() -> str:
    """The official servers' image: ROCKETMQ_COMPAT_IMAGE, or the stand-in built here."""
    return os.environ.get("ROCKETMQ_COMPAT_IMAGE") or docker_images.java_server_image(server_version())


def require_docker() -> None:
    try:
        proc = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise HarnessUnavailable(f"ROCKETMQ_COMPAT_BACKEND=docker but `docker info` failed: {e}") from None
    if proc.returncode != 0:
        raise HarnessUnavailable("ROCKETMQ_COMPAT_BACKEND=docker but `docker info` failed "
                                 f"(exit {proc.returncode}): {proc.stderr.strip()[-500:]}")


def _docker(*args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise StartupError(f"docker {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc


def run_once(image_tag: str, *command: str, docker_args: tuple[str, ...] = ()) -> str:
    """Runs ``command`` in a new container of ``image_tag`` to its end; returns its stdout and stderr."""
    proc = _docker("run", "--rm", *docker_args, image_tag, *command)
    return proc.stdout + proc.stderr


class _Container(ManagedProcess):
    """One server in a container; subclasses name the image and the command run in it."""

    def __init__(self, workdir, port: int | None, extra_config: dict | None, startup_timeout: float):
        super().__init__(workdir, startup_timeout)
        self._fixed_port = port is not None
        self.port = port if port is not None else self._pick_port()
        self.extra_config = dict(extra_config or {})
        self.container = f"rmq-compat-{self.kind}-{uuid.uuid4().hex[:8]}"
        self._running = False
        (self.workdir / "logs").mkdir(exist_ok=True)
        os.chmod(self.workdir, 0o777)  # the image runs as user "rocketmq"
        os.chmod(self.workdir / "logs", 0o777)

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> str:
        return self.container

    def _pick_port(self) -> int:
        return free_port()

    def _image(self) -> str:
        raise NotImplementedError

    def _command(self) -> list[str]:
        """The command given to the image (writes the config files it reads first)."""
        raise NotImplementedError

    def _ready(self) -> bool:
        raise NotImplementedError

    def start(self):
        require_docker()
        _docker("rm", "-f", self.container, check=False)
        image_name = self._image()
        t0 = time.monotonic()
        _docker("run", "-d", "--name", self.container, "--network", "host",
                "-v", f"{self.workdir}:{MOUNT}", "-v", f"{self.workdir / 'logs'}:{CONTAINER_LOG_DIR}",
                "-e", f"JAVA_OPT_EXT={JAVA_OPT_EXT}", image_name, *self._command(),
                timeout=600)
        self._running = True
        _register(self)
        while time.monotonic() - t0 < self.startup_timeout:
            if not self.is_running():
                self._save_console()
                raise StartupError(f"{self.describe()} exited while starting\n{self.log_tail(60)}")
            try:
                if self._ready():
                    self.startup_seconds = time.monotonic() - t0
                    return self
            except (OSError, RuntimeError):
                pass
            time.sleep(0.2)
        self.stop(5)
        raise StartupError(f"{self.describe()} not ready within {self.startup_timeout:.0f} s\n{self.log_tail(60)}")

    def is_running(self) -> bool:
        if not self._running:
            return False
        proc = _docker("inspect", "-f", "{{.State.Running}}", self.container, check=False)
        return proc.stdout.strip() == "true"

    def _save_console(self) -> None:
        proc = _docker("logs", self.container, check=False)
        (self.workdir / "console.log").write_text(proc.stdout + proc.stderr)

    def log_files(self):
        if self._running:
            self._save_console()
        return super().log_files()

    def stop(self, timeout: float = DEFAULT_STOP_TIMEOUT_S) -> None:
        if not self._running:
            return
        _docker("stop", "-t", str(int(timeout)), self.container, check=False, timeout=timeout + 30)
        self._save_console()
        _docker("rm", "-f", self.container, check=False)
        self._running = False

    def kill(self) -> None:
        if not self._running:
            return
        _docker("kill", self.container, check=False)
        self._save_console()
        _docker("rm", "-f", self.container, check=False)
        self._running = False

    def restart(self, kill: bool = False):
        self.kill() if kill else self.stop()
        return self.start()


class JavaNameServer(_Container):
    """The official name server, ``sh mqnamesrv -c namesrv.properties`` as in the official image."""

    kind = "namesrv"

    def __init__(self, build=None, workdir=None, port: int | None = None, *, extra_config: dict | None = None,
                 jvm_opts=(), startup_timeout: float = DEFAULT_STARTUP_TIMEOUT_S):
        super().__init__(workdir, port, extra_config, startup_timeout)

    def describe(self) -> str:
        return f"namesrv container {self.container} {self.addr} (dir {self.workdir})"

    def _image(self) -> str:
        return image()

    def _command(self) -> list[str]:
        write_properties(self.workdir / "namesrv.properties", {"listenPort": self.port, **self.extra_config})
        return ["sh", "mqnamesrv", "-c", f"{MOUNT}/namesrv.properties"]

    def _ready(self) -> bool:
        wire.cluster_info(self.addr, timeout=2.0)
        return True


class JavaBroker(_Container):
    """The official broker, ``sh mqbroker -n ... -c broker.properties`` as in the official image."""

    kind = "broker"
    _counter = 0

    def __init__(self, namesrv, build=None, workdir=None, port: int | None = None, *, broker_name: str | None = None,
                 cluster: str = "DefaultCluster", extra_config: dict | None = None, jvm_opts=(),
                 startup_timeout: float = DEFAULT_STARTUP_TIMEOUT_S):
        JavaBroker._counter += 1
        self.namesrv_addr = namesrv if isinstance(namesrv, str) else namesrv.addr
        self.broker_name = broker_name or f"broker-{os.getpid()}-{JavaBroker._counter}"
        self.cluster = cluster
        super().__init__(workdir, port, extra_config, startup_timeout)
        self.store_dir = self.workdir / "store"

    def describe(self) -> str:
        return f"broker container {self.container} {self.broker_name} {self.addr} (dir {self.workdir})"

    def _pick_port(self) -> int:
        return free_broker_port()

    def config(self) -> dict:
        return broker_config(cluster=self.cluster, broker_name=self.broker_name, namesrv_addr=self.namesrv_addr,
                             port=self.port, store_dir=f"{MOUNT}/store", extra=self.extra_config)

    def _image(self) -> str:
        return image()

    def _write_config(self) -> None:
        self.store_dir.mkdir(exist_ok=True)
        os.chmod(self.store_dir, 0o777)
        write_properties(self.workdir / "broker.properties", self.config())

    def _command(self) -> list[str]:
        self._write_config()
        return ["sh", "mqbroker", "-n", self.namesrv_addr, "-c", f"{MOUNT}/broker.properties"]

    def _ready(self) -> bool:
        body = wire.cluster_info(self.namesrv_addr, timeout=2.0)
        return (f'"{self.broker_name}"'.encode() in body and self.addr.encode() in body
                and wire.broker_runtime_info_ready(self.addr))


class PyNameServer(JavaNameServer):
    """Our name server from the rocketmq-py image (``rocketmq-py namesrv``)."""

    def describe(self) -> str:
        return f"rocketmq-py namesrv container {self.container} {self.addr} (dir {self.workdir})"

    def _image(self) -> str:
        return docker_images.rocketmq_py_image()

    def _command(self) -> list[str]:
        write_properties(self.workdir / "namesrv.properties", {"listenPort": self.port, **self.extra_config})
        return ["namesrv", "-c", f"{MOUNT}/namesrv.properties"]


class PyBroker(JavaBroker):
    """Our broker from the rocketmq-py image (``rocketmq-py broker``), with the same broker.conf keys."""

    def describe(self) -> str:
        return f"rocketmq-py broker container {self.container} {self.broker_name} {self.addr} (dir {self.workdir})"

    def _image(self) -> str:
        return docker_images.rocketmq_py_image()

    def _command(self) -> list[str]:
        self._write_config()
        return ["broker", "-c", f"{MOUNT}/broker.properties"]
