"""Our name server and broker as processes (``python -m rocketmq_py namesrv|broker``) for the compat tests and
the benchmarks: OurServer starts, waits for and stops one; PythonNameServer and PythonBroker (master or slave,
restartable on its store, with the Java harness broker's keys) are built on it."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from rocketmq_py.broker.config import worker_processes_from_cores

from . import wire
from .cpu import descendants
from .processes import broker_config, die_with_parent, free_broker_port, free_port, write_properties

ROOT = Path(__file__).resolve().parent.parent.parent

#: ``ROCKETMQ_PY_BROKER_WORKERS=N`` writes serverWorkerProcesses=N into every PythonBroker's broker.conf (CI runs
#: a subset with 0, one process); unset, the key is left out and the broker picks its default from the cores,
#: as a user's broker does.
BROKER_WORKERS_KEY = os.environ.get("ROCKETMQ_PY_BROKER_WORKERS")
#: The front processes each PythonBroker runs, for the tests that count them or embed a broker that should run
#: as a PythonBroker does.
BROKER_WORKERS = (int(BROKER_WORKERS_KEY) if BROKER_WORKERS_KEY is not None
                  else worker_processes_from_cores())


def broker_workers_key() -> dict[str, str]:
    """serverWorkerProcesses for a broker.conf of ours, as ``ROCKETMQ_PY_BROKER_WORKERS`` asks: nothing when unset."""
    return {} if BROKER_WORKERS_KEY is None else {"serverWorkerProcesses": BROKER_WORKERS_KEY}


def _running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie waiting for its parent."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _is_front(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return b"rocketmq_py.remoting.front" in cmdline.read()
    except FileNotFoundError:
        return False


def _continue(pids: list[int]) -> None:
    """SIGCONT to each of ``pids`` that still exists: a stopped process holds SIGTERM until it is continued,
    and a stopped front process would never see its broker go."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass


class OurServer:
    """One of our servers as a process, ``python -m rocketmq_py <kind> -c <kind>.conf``: the one wrapper the
    compat tests and benchmarks start our name server and broker with.

    :meth:`stop` (SIGTERM, the clean shutdown) and :meth:`kill` (kill -9) work on a paused process tree (a test
    SIGSTOPs a broker to play a hung one), and both return only once the process and its child processes (a
    broker's fronts) are gone, so that the next test finds the ports and the store free."""

    def __init__(self, kind: str, workdir: Path, python: str | None = None, root: Path | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.kind = kind
        self.workdir = Path(workdir)
        #: The interpreter and the checkout it runs (another build of ours, for a side-by-side benchmark).
        self.python = python or sys.executable
        self.root = root or ROOT
        #: Added to the process's environment (Java's tls.* settings, for example).
        self.env = env or {}
        self.proc: subprocess.Popen | None = None
        self._log = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def log_path(self) -> Path:
        return self.workdir / f"{self.kind}.log"

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 40) -> str:
        tail = "\n".join(self.log_text().splitlines()[-lines:])
        return f"--- our {self.kind} in {self.workdir} ---\n{tail}"

    def launch(self, config: dict, ready, timeout_s: float = 90.0) -> None:
        """Write ``config`` as the process's configuration file, start it and wait until ``ready()`` is true."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        conf = self.workdir / f"{self.kind}.conf"
        write_properties(conf, config)
        self._log = open(self.log_path, "ab")
        # A session of its own, as the harness's Java servers have: with the kernel's autogroup scheduling (on by
        # default) each session shares the CPU equally with the others, so servers left in the test's session
        # would share one share between them, and with the test's clients, while each JVM has one of its own.
        self.proc = subprocess.Popen(die_with_parent([self.python, "-m", "rocketmq_py", self.kind, "-c", str(conf)]),
                                     stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env={**os.environ, "PYTHONPATH": str(self.root), **self.env}, cwd=self.workdir,
                                     start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"our {self.kind} exited with {self.proc.returncode}:\n{self.log_tail(60)}")
            try:
                if ready():
                    return
            except (OSError, RuntimeError, ValueError):
                pass
            time.sleep(0.05)
        raise RuntimeError(f"our {self.kind} was not ready within {timeout_s} s:\n{self.log_tail(60)}")

    def is_running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout_s: float = 30.0) -> int | None:
        """SIGTERM and wait (kill -9 after ``timeout_s``): the clean shutdown; its exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            children = descendants(self.proc.pid)
            _continue([self.proc.pid, *children])
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self._reap(children)
        self._close_log()
        return self.proc.returncode

    def kill(self) -> None:
        """kill -9, as a crash."""
        if self.proc is not None and self.proc.poll() is None:
            children = descendants(self.proc.pid)
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)
            _continue(children)
            self._reap(children)
        self._close_log()

    @staticmethod
    def _reap(children: list[int], timeout_s: float = 30.0) -> None:
        """Wait for the child processes, which exit when their parent is gone."""
        deadline = time.monotonic() + timeout_s
        while any(_running(pid) for pid in children) and time.monotonic() < deadline:
            time.sleep(0.02)

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


class PythonNameServer(OurServer):
    def __init__(self, workdir: Path) -> None:
        super().__init__("namesrv", workdir)
        self.port = free_port()

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> "PythonNameServer":
        self.launch({"listenPort": self.port, "kvConfigPath": self.workdir / "kvConfig.json",
                     "configStorePath": self.workdir / "namesrv-store.properties"},
                    lambda: wire.cluster_info(self.addr, timeout=1.0) is not None)
        return self


class PythonBroker(OurServer):
    """Our broker with the harness broker's keys (harness/processes.py), registered with ``namesrv``; restartable
    on its store. A slave: ``PythonBroker(ns.addr, workdir, "ha-a", **SLAVE)`` (harness/ha.py)."""

    def __init__(self, namesrv_addr: str, workdir: Path, broker_name: str | None = None,
                 cluster: str = "DefaultCluster", python: str | None = None, root: Path | None = None,
                 **extra_config) -> None:
        super().__init__("broker", workdir, python, root)
        self.namesrv_addr = namesrv_addr
        self.broker_name = broker_name or f"pybroker-{uuid.uuid4().hex[:6]}"
        self.cluster = cluster
        self.port = free_broker_port()
        self.store_dir = self.workdir / "store"
        self.extra_config = extra_config

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def config(self) -> dict:
        return broker_config(cluster=self.cluster, broker_name=self.broker_name, namesrv_addr=self.namesrv_addr,
                             port=self.port, store_dir=self.store_dir,
                             extra={**broker_workers_key(), **self.extra_config})

    def _registered(self) -> bool:
        body = wire.cluster_info(self.namesrv_addr, timeout=1.0)
        return (f'"{self.broker_name}"'.encode() in body and self.addr.encode() in body
                and wire.broker_runtime_info_ready(self.addr, timeout=1.0))

    def start(self, timeout_s: float = 90.0) -> "PythonBroker":
        self.launch(self.config(), self._registered, timeout_s)
        self.check_fronts()
        return self

    def check_fronts(self) -> None:
        """Fail unless the broker runs the front processes its serverWorkerProcesses (or, left out, the cores)
        give: what the suite runs is what it says it runs."""
        key = self.config().get("serverWorkerProcesses")
        expected = worker_processes_from_cores() if key is None else int(key)
        assert self.pid is not None
        fronts = [pid for pid in descendants(self.pid) if _is_front(pid)]
        if len(fronts) != expected:
            raise RuntimeError(f"our broker runs {len(fronts)} front processes, not {expected}:\n{self.log_tail()}")

    def restart(self, kill: bool = False) -> "PythonBroker":
        self.kill() if kill else self.stop()
        return self.start()
