"""Spark for the compat tests: a ``local[2]`` session, and a standalone cluster of separate processes.

:class:`StandaloneCluster` starts a Spark master and two workers from the pyspark install
(``spark-class org.apache.spark.deploy.master.Master`` / ``...worker.Worker``) on 127.0.0.1
with small memory, so that executors are JVMs of their own with Python workers forked from them,
as where Spark is used. A test module keeps one cluster (it is heavy on two cores).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from .processes import free_port

ROOT = Path(__file__).resolve().parents[2]

#: Small enough that a master, two workers, their executors and the driver fit a loaded 2-core CI machine.
#: Each worker offers two cores and room for two executors, so that a spark-submit application gets one
#: executor on each worker while the tests' own application holds the other two.
WORKER_CORES = 2
WORKER_MEMORY = "1g"
EXECUTOR_MEMORY = "512m"
DAEMON_MEMORY = "256m"
#: What PySpark sets in os.environ to put the process in Spark Connect mode (pyspark.sql.session).
CONNECT_MODE_ENV = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE")


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def python_env() -> dict[str, str]:
    """What the Spark JVMs and their Python workers need: this interpreter, loopback, our package."""
    env = dict(os.environ)
    env.update({
        "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_HOME": str(spark_home()),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    })
    return env


def local_session(app: str = "rocketmq-py-tests"):
    """A ``local[2]`` SparkSession with the sources registered (the one active in the process)."""
    from pyspark.sql import SparkSession

    from rocketmq_py.spark import register

    os.environ.update({k: v for k, v in python_env().items() if k != "SPARK_HOME"})
    session = (SparkSession.builder.master("local[2]").appName(app)
               .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.log.level", "ERROR").config("spark.sql.shuffle.partitions", "2")
               .getOrCreate())
    register(session)
    return session


class StandaloneCluster:
    """A Spark master and two workers, each its own JVM process, on loopback.

    An application gets one one-core executor on each worker (``spark.cores.max`` = workers,
    ``spark.executor.cores`` = 1; the master spreads executors out).
    """

    def __init__(self, workdir: Path, workers: int = 2) -> None:
        self.workdir = workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.workers = workers
        self.port = free_port()
        self.web_port = free_port()
        self.processes: list[subprocess.Popen] = []
        self.logs: list[Path] = []

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _spawn(self, name: str, *args: str) -> None:
        log = self.workdir / f"{name}.log"
        self.logs.append(log)
        env = python_env()
        env["SPARK_DAEMON_MEMORY"] = DAEMON_MEMORY
        env["SPARK_LOG_DIR"] = str(self.workdir)
        spark_class = spark_home() / "bin" / "spark-class"
        with open(log, "wb") as out:
            self.processes.append(subprocess.Popen(
                [str(spark_class), *args], stdout=out, stderr=subprocess.STDOUT, env=env,
                cwd=self.workdir, start_new_session=True))

    def start(self, timeout_s: float = 240.0) -> "StandaloneCluster":
        if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
            raise RuntimeError("no JDK: the standalone Spark cluster needs java on PATH or JAVA_HOME")
        self._spawn("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                    "--port", str(self.port), "--webui-port", str(self.web_port))
        for index in range(self.workers):
            work = self.workdir / f"worker-{index}"
            work.mkdir(parents=True, exist_ok=True)
            self._spawn(f"worker-{index}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                        "--cores", str(WORKER_CORES), "--memory", WORKER_MEMORY, "--webui-port", str(free_port()),
                        "--work-dir", str(work), self.master_url)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.alive_workers() >= self.workers:
                return self
            for process, log in zip(self.processes, self.logs):
                if process.poll() is not None:
                    raise RuntimeError(f"{log.name} exited with {process.returncode}: {self.log_tail(log)}")
            time.sleep(1)
        raise RuntimeError(f"{self.workers} workers did not register within {timeout_s:.0f} s: "
                           + " | ".join(self.log_tail(log) for log in self.logs))

    def alive_workers(self) -> int:
        import json

        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.web_port}/json/", timeout=5) as answer:
                state = json.load(answer)
        except OSError:
            return 0
        return sum(1 for worker in state.get("workers", []) if worker.get("state") == "ALIVE")

    def worker_pids(self) -> list[int]:
        return [p.pid for p in self.processes[1:]]

    @staticmethod
    def log_tail(log: Path, chars: int = 2000) -> str:
        try:
            return log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def session(self, app: str = "rocketmq-py-standalone", task_log: Path | None = None):
        """A SparkSession of this cluster: two executors, one per worker, small memory.

        ``task_log``: a directory where the executors' tasks record their pids (rocketmq_py.spark.tasklog).
        """
        from rocketmq_py.spark.tasklog import ENV as TASK_LOG_ENV

        from pyspark.sql import SparkSession

        from rocketmq_py.spark import register

        os.environ.update({k: v for k, v in python_env().items() if k != "SPARK_HOME"})
        active = SparkSession.getActiveSession()
        if active is not None:
            active.stop()
        session = (SparkSession.builder.master(self.master_url).appName(app)
                   .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
                   .config("spark.executor.memory", EXECUTOR_MEMORY).config("spark.executor.cores", "1")
                   .config("spark.cores.max", str(self.workers)).config("spark.driver.memory", "512m")
                   .config("spark.executorEnv.PYTHONPATH", python_env()["PYTHONPATH"])
                   .config(f"spark.executorEnv.{TASK_LOG_ENV}", str(task_log or ""))
                   .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                   .config("spark.log.level", "ERROR").config("spark.sql.shuffle.partitions", "2")
                   .getOrCreate())
        register(session)
        deadline = time.monotonic() + 120
        # Executors register a moment after the application starts; the tests need both.
        while session.sparkContext._jsc.sc().getExecutorMemoryStatus().size() < self.workers + 1:
            if time.monotonic() > deadline:
                raise RuntimeError("the executors did not register within 120 s")
            time.sleep(0.5)
        return session

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in reversed(self.processes):
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)


class ConnectServer:
    """A Spark Connect server (``sbin/start-connect-server.sh --wait`` from the pyspark install, ``local[2]``)
    on loopback, and :meth:`session` a remote SparkSession of it (``sc://127.0.0.1:<port>``).

    The server runs the data source's partitions in Python workers it forks with its own environment, so
    it gets our package on PYTHONPATH; the client sends the source classes to it pickled."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.log = workdir / "connect-server.log"
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 180.0) -> "ConnectServer":
        env = python_env()
        # spark-daemon.sh writes its pid and log files, and reads spark-env.sh, under these directories.
        for name, sub in (("SPARK_LOG_DIR", "logs"), ("SPARK_PID_DIR", "pids"), ("SPARK_CONF_DIR", "conf")):
            (self.workdir / sub).mkdir(exist_ok=True)
            env[name] = str(self.workdir / sub)
        env["SPARK_DAEMON_MEMORY"] = "512m"
        script = spark_home() / "sbin" / "start-connect-server.sh"
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(
                ["bash", str(script), "--wait", "--master", "local[2]", "--driver-memory", "768m",
                 "--conf", f"spark.connect.grpc.binding.port={self.port}",
                 "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
                 "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
                 "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=2",
                 "--conf", f"spark.executorEnv.PYTHONPATH={env['PYTHONPATH']}"],
                stdout=out, stderr=subprocess.STDOUT, env=env, cwd=self.workdir, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the Spark Connect server exited with {self.process.returncode}: "
                                   f"{StandaloneCluster.log_tail(self.log)}")
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            time.sleep(0.5)
        raise RuntimeError(f"the Spark Connect server did not listen within {timeout_s:.0f} s: "
                           f"{StandaloneCluster.log_tail(self.log)}")

    @contextlib.contextmanager
    def session(self):
        """A remote SparkSession of this server with the sources registered, stopped on exit.

        Creating a Connect session makes PySpark set ``SPARK_CONNECT_MODE_ENABLED`` in ``os.environ``, and
        ``stop()`` leaves it there: every later ``SparkSession.builder.master(...)`` of the process would then
        take the Connect path and fail (CONNECT_URL_NOT_SET). The variables are put back as they were."""
        from pyspark.sql import SparkSession

        from rocketmq_py.spark import register

        saved = {name: os.environ.get(name) for name in CONNECT_MODE_ENV}
        session = SparkSession.builder.remote(self.url).getOrCreate()
        try:
            register(session)
            yield session
        finally:
            session.stop()
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)


def pyspark_or_skip():
    """pyspark, or a skip of the module when the spark extra is missing; with CI=true a missing pyspark fails."""
    import pytest

    try:
        import pyspark
    except ModuleNotFoundError:
        if os.environ.get("CI") == "true":
            raise RuntimeError("pyspark is missing and CI=true: ci/setup.sh installs the spark extra") from None
        pytest.skip("the spark extra (pip install -e '.[spark]') is not installed", allow_module_level=True)
    return pyspark
