"""Our name server and broker as processes (``python -m rocketmq_py namesrv|broker``) for the compat tests:
PythonNameServer and PythonBroker, restartable on their store, with the Java harness broker's store sizes."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from . import wire
from .cpu import descendants
from .processes import die_with_parent, free_broker_port, free_port, write_properties

ROOT = Path(__file__).resolve().parent.parent.parent

#: The harness broker's store sizes (harness/processes.py), so stores move between the two.
STORE_SIZES = {
    "mappedFileSizeCommitLog": 64 * 1024 * 1024,
    "mappedFileSizeConsumeQueue": 30000 * 20,
    "maxHashSlotNum": 50000,
    "maxIndexNum": 200000,
}


#: ``ROCKETMQ_PY_BROKER_WORKERS=N`` runs every PythonBroker with N front processes (serverWorkerProcesses):
#: CI runs the Java client, crash and store-move tests that way too.
BROKER_WORKERS = int(os.environ.get("ROCKETMQ_PY_BROKER_WORKERS", "0"))


def _running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie waiting for its parent."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


class _PythonProcess:
    name = "process"

    def __init__(self, workdir: Path, python: str | None = None, root: Path | None = None) -> None:
        self.workdir = workdir
        #: The interpreter and the checkout it runs (another build of ours, for a side-by-side benchmark).
        self.python = python or sys.executable
        self.root = root or ROOT
        self.proc: subprocess.Popen | None = None
        self._log = None

    @property
    def log_path(self) -> Path:
        return self.workdir / f"{self.name}.log"

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def _spawn(self, argv: list[str]) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(die_with_parent([self.python, "-m", "rocketmq_py", *argv]),
                                     stdout=self._log, stderr=subprocess.STDOUT,
                                     env=dict(os.environ, PYTHONPATH=str(self.root)), cwd=self.workdir)

    def _wait_until(self, ready, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"our {self.name} exited with {self.proc.returncode}:\n{self.log_text()[-4000:]}")
            try:
                if ready():
                    return
            except (OSError, RuntimeError, ValueError):
                pass
            time.sleep(0.05)
        raise RuntimeError(f"our {self.name} was not ready within {timeout_s} s:\n{self.log_text()[-4000:]}")

    def is_running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout_s: float = 30.0) -> int | None:
        """SIGTERM and wait: the clean shutdown."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._log is not None:
            self._log.close()
        return self.proc.returncode

    def kill(self) -> None:
        """kill -9; then wait for its child processes (a broker's fronts), which exit when it is gone."""
        if self.proc is not None and self.proc.poll() is None:
            children = descendants(self.proc.pid)
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)
            deadline = time.monotonic() + 30
            while any(_running(pid) for pid in children) and time.monotonic() < deadline:
                time.sleep(0.02)
        if self._log is not None:
            self._log.close()


class PythonNameServer(_PythonProcess):
    name = "namesrv"

    def __init__(self, workdir: Path) -> None:
        super().__init__(workdir)
        self.port = free_port()

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> "PythonNameServer":
        conf = self.workdir / "namesrv.properties"
        self.workdir.mkdir(parents=True, exist_ok=True)
        write_properties(conf, {"listenPort": self.port, "kvConfigPath": self.workdir / "kvConfig.json",
                                "configStorePath": self.workdir / "namesrv-store.properties"})
        self._spawn(["namesrv", "-c", str(conf)])
        self._wait_until(lambda: wire.cluster_info(self.addr, timeout=1.0) is not None)
        return self


class PythonBroker(_PythonProcess):
    """``python -m rocketmq_py broker -c broker.conf`` registered with ``namesrv``; restartable on its store."""

    name = "broker"

    def __init__(self, namesrv_addr: str, workdir: Path, broker_name: str | None = None,
                 cluster: str = "DefaultCluster", python: str | None = None, root: Path | None = None,
                 **extra_config) -> None:
        super().__init__(workdir, python, root)
        self.namesrv_addr = namesrv_addr
        self.broker_name = broker_name or f"pybroker-{uuid.uuid4().hex[:6]}"
        self.cluster = cluster
        self.port = free_broker_port()
        self.store_dir = workdir / "store"
        self.extra_config = extra_config

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def config(self) -> dict:
        return {
            "brokerClusterName": self.cluster, "brokerName": self.broker_name, "brokerId": 0,
            "namesrvAddr": self.namesrv_addr, "listenPort": self.port, "brokerIP1": "127.0.0.1",
            "brokerIP2": "127.0.0.1", "storePathRootDir": self.store_dir,
            "storePathCommitLog": self.store_dir / "commitlog", "autoCreateTopicEnable": True,
            "autoCreateSubscriptionGroup": True, "enablePropertyFilter": True, **STORE_SIZES,
            "serverWorkerProcesses": BROKER_WORKERS, **self.extra_config,
        }

    def _registered(self) -> bool:
        body = wire.cluster_info(self.namesrv_addr, timeout=1.0)
        return (f'"{self.broker_name}"'.encode() in body and self.addr.encode() in body
                and wire.broker_runtime_info_ready(self.addr, timeout=1.0))

    def start(self) -> "PythonBroker":
        self.workdir.mkdir(parents=True, exist_ok=True)
        conf = self.workdir / "broker.conf"
        write_properties(conf, self.config())
        self._spawn(["broker", "-c", str(conf)])
        self._wait_until(self._registered)
        return self

    def restart(self, kill: bool = False) -> "PythonBroker":
        self.kill() if kill else self.stop()
        return self.start()
