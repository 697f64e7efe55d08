"""The official RocketMQ name server and broker as local JVM processes.

    with JavaNameServer() as ns, JavaBroker(ns) as broker:
        ...  # ns.addr / broker.addr are "127.0.0.1:<port>"

Each process gets its own work directory holding:

* ``conf/``          generated logback config (the startup classes load ``$ROCKETMQ_HOME/conf/logback_*.xml``)
* ``home/``          the JVM's ``user.home`` (RocketMQ writes defaults under it)
* ``*.properties``   the config file passed with ``-c``
* ``console.log``    stdout + stderr of the JVM
* ``logs/*.log``     RocketMQ's own logs
* ``store/``         (broker) the message store

Ports are chosen free on all interfaces, outside the kernel's ephemeral range. The broker also
binds listenPort-2 (the "VIP" channel) and listenPort+1 (HA), so all three are checked.
"""

from __future__ import annotations

import atexit
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from . import wire
from .build import JavaBuild, ensure_built

DEFAULT_STARTUP_TIMEOUT_S = 60.0
START_MARK = "===== compat harness: starting"
DEFAULT_STOP_TIMEOUT_S = 20.0

# JDK 9+ needs these for the 4.9 store: MappedFile releases mapped buffers through
# DirectByteBuffer.cleaner() by reflection, and mlock/munlock use sun.nio.ch.DirectBuffer.
JDK17_OPENS = [
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
]
SERVER_JVM_OPTS = [
    "-Xms256m", "-Xmx512m", "-XX:MaxDirectMemorySize=256m",
    "-XX:+UseSerialGC", "-XX:-OmitStackTraceInFastThrow", "-Xshare:auto",
    *JDK17_OPENS,
]


def broker_config(*, cluster: str, broker_name: str, namesrv_addr: str, port: int, store_dir,
                  home=None, extra: dict | None = None) -> dict:
    """The broker.conf keys every harness broker runs with (a master on loopback, small store files),
    whatever runs it: a JVM here, or a container of either image (then the paths are the container's)."""
    config = {
        "brokerClusterName": cluster,
        "brokerName": broker_name,
        "brokerId": 0,
        "brokerRole": "ASYNC_MASTER",
        "flushDiskType": "ASYNC_FLUSH",
        "namesrvAddr": namesrv_addr,
        "listenPort": port,
        "brokerIP1": "127.0.0.1",
        "brokerIP2": "127.0.0.1",
        "storePathRootDir": store_dir,
        "storePathCommitLog": f"{store_dir}/commitlog",
        "mappedFileSizeCommitLog": 64 * 1024 * 1024,
        "mappedFileSizeConsumeQueue": 30000 * 20,
        "maxHashSlotNum": 50000,
        "maxIndexNum": 200000,
        "autoCreateTopicEnable": True,
        "autoCreateSubscriptionGroup": True,
        "enablePropertyFilter": True,
    }
    if home is not None:
        config["rocketmqHome"] = home
    config.update(extra or {})
    return config


# ---------------------------------------------------------------------------------------------
# Registry of everything started in this Python process (used by the conftest log hook and atexit)

STARTED: list["ManagedProcess"] = []
_registry_lock = threading.Lock()


def _register(p: "ManagedProcess") -> None:
    with _registry_lock:
        if p not in STARTED:
            STARTED.append(p)


@atexit.register
def _stop_all_at_exit() -> None:
    for p in list(STARTED):
        try:
            if p.is_running():
                p.stop(timeout=10)
        except Exception:
            pass


# ---------------------------------------------------------------------------------------------
# Ports

_handed_out: set[int] = set()
_port_lock = threading.Lock()


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def port_is_free(port: int) -> bool:
    """True if nothing listens on ``port`` on any interface (checked the way Netty binds)."""
    if not 0 < port < 65536:
        return False
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def pick_ports(*offsets: int) -> int:
    """A base port P such that P+o is free for every offset o (and not handed out before)."""
    offsets = offsets or (0,)
    high = _ephemeral_low() - 1
    low = 20000 if high > 21000 else 10000
    rnd = random.Random(os.getpid() ^ time.monotonic_ns())
    with _port_lock:
        for _ in range(2000):
            base = rnd.randint(low - min(offsets), high - max(offsets))
            ports = [base + o for o in offsets]
            if any(p in _handed_out for p in ports):
                continue
            if all(port_is_free(p) for p in ports):
                _handed_out.update(ports)
                return base
    raise RuntimeError("no free port found")


def free_port() -> int:
    return pick_ports(0)


def free_broker_port() -> int:
    """listenPort P with P-2 (VIP channel), P and P+1 (HA) free."""
    return pick_ports(-2, 0, 1)


# ---------------------------------------------------------------------------------------------

LOGBACK_TEMPLATE = """<?xml version="1.0" encoding="UTF-8"?>
<!-- Generated by the rocketmq-py compat harness: all RocketMQ logs go to files in {log_dir}. -->
<configuration>
    <appender name="MAIN" class="ch.qos.logback.core.FileAppender">
        <file>{log_dir}/{name}.log</file>
        <append>true</append>
        <encoder><pattern>%d{{yyy-MM-dd HH:mm:ss.SSS}} %-5level [%thread] %logger{{0}} - %msg%n</pattern></encoder>
    </appender>
    <appender name="STATS" class="ch.qos.logback.core.FileAppender">
        <file>{log_dir}/{name}_stats.log</file>
        <append>true</append>
        <encoder><pattern>%d{{yyy-MM-dd HH:mm:ss.SSS}} %-5level %logger{{0}} - %msg%n</pattern></encoder>
    </appender>
    <logger name="RocketmqStats" additivity="false"><appender-ref ref="STATS"/></logger>
    <logger name="RocketmqCommercial" additivity="false"><appender-ref ref="STATS"/></logger>
    <logger name="RocketmqWaterMark" additivity="false"><appender-ref ref="STATS"/></logger>
    <root level="{level}"><appender-ref ref="MAIN"/></root>
</configuration>
"""


def write_logback(path: Path, log_dir: Path, name: str, level: str = "INFO") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(LOGBACK_TEMPLATE.format(log_dir=log_dir, name=name, level=level))


def write_properties(path: Path, props: dict) -> None:
    lines = []
    for k, v in props.items():
        if isinstance(v, bool):
            v = "true" if v else "false"
        lines.append(f"{k}={v}")
    path.write_text("\n".join(lines) + "\n")


def _argfile_quote(arg: str) -> str:
    if any(c in arg for c in " \t\"'#\\"):
        return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return arg


def die_with_parent(cmd: list[str]) -> list[str]:
    """``cmd`` prefixed so the kernel kills it when the thread that starts it exits (PR_SET_PDEATHSIG).

    setpriv sets the signal and then execs ``cmd``, so no Python runs in the forked child: a
    ``preexec_fn`` does, and gRPC's fork handlers (the Spark Connect client's threads live in the
    test process) then abort the child with "epoll_wait error: Bad file descriptor". Only a start
    from the main thread is tied, since the signal follows the starting thread, not the process.
    """
    setpriv = shutil.which("setpriv")  # util-linux, on every Debian machine
    if setpriv is None or threading.current_thread() is not threading.main_thread():
        return cmd
    return [setpriv, "--pdeathsig", "KILL", "--", *cmd]


def tail(path: Path, lines: int = 40) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            data = f.read().decode("utf-8", "replace")
    except OSError as e:
        return f"<cannot read {path}: {e}>"
    return "\n".join(data.splitlines()[-lines:])


class StartupError(RuntimeError):
    pass


class ManagedProcess:
    """Common part of the name server and broker wrappers (also used by the docker backend)."""

    kind = "process"

    def __init__(self, workdir: str | os.PathLike | None, startup_timeout: float):
        self.workdir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix=f"rmq-{self.kind}-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.startup_timeout = startup_timeout
        self.startup_seconds: float | None = None

    # --- interface implemented by subclasses
    def start(self):
        raise NotImplementedError

    def stop(self, timeout: float = DEFAULT_STOP_TIMEOUT_S) -> None:
        raise NotImplementedError

    def is_running(self) -> bool:
        raise NotImplementedError

    def describe(self) -> str:
        return f"{self.kind} at {self.workdir}"

    # --- shared
    def log_files(self) -> list[Path]:
        files = [self.workdir / "console.log"]
        logs = self.workdir / "logs"
        if logs.is_dir():
            files += sorted(p for p in logs.glob("*.log") if not p.name.endswith("_stats.log"))
        return [p for p in files if p.exists()]

    def log_tail(self, lines: int = 40) -> str:
        parts = [f"===== {self.describe()} ====="]
        for f in self.log_files():
            parts.append(f"----- {f} (last {lines} lines) -----")
            parts.append(tail(f, lines))
        return "\n".join(parts)

    def __enter__(self):
        if not self.is_running():
            self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def tls_enforced(jvm_opts) -> bool:
    """Whether ``-Dtls.server.mode=enforcing`` is among the JVM options (then the probes use TLS)."""
    return "-Dtls.server.mode=enforcing" in list(jvm_opts)


class _JvmProcess(ManagedProcess):
    main_class = ""
    log_name = ""
    boot_marker = ""

    def __init__(self, build: JavaBuild | None, workdir, port: int | None, jvm_opts, startup_timeout: float):
        super().__init__(workdir, startup_timeout)
        self.build = build or ensure_built()
        self._fixed_port = port is not None
        self.port = port if port is not None else self._pick_port()
        self.jvm_opts = list(jvm_opts)
        self.tls = tls_enforced(self.jvm_opts)
        self.proc: subprocess.Popen | None = None
        self.home = self.workdir / "home"
        self.log_dir = self.workdir / "logs"

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def _pick_port(self) -> int:
        return free_port()

    def _prepare(self) -> list[str]:
        """Write config files; return the program arguments."""
        raise NotImplementedError

    def _ready(self) -> bool:
        raise NotImplementedError

    def command(self) -> list[str]:
        """``java @jvm.args``: the options live in the work dir, so a run can be repeated by hand."""
        args = self._prepare()
        jvm_args = [*SERVER_JVM_OPTS, *self.jvm_opts,
                    f"-Duser.home={self.home}", f"-Drocketmq.home.dir={self.workdir}",
                    "-cp", self.build.server_classpath, self.main_class, *args]
        argfile = self.workdir / "jvm.args"
        argfile.write_text("\n".join(_argfile_quote(a) for a in jvm_args) + "\n")
        return [self.build.java, f"@{argfile}"]

    def is_running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _booted(self) -> bool:
        """The boot line was printed by the current run (not by one before a restart)."""
        text = self._console_text()
        return text.rfind(self.boot_marker) > text.rfind(START_MARK)

    def _console_text(self) -> str:
        try:
            return (self.workdir / "console.log").read_text(errors="replace")
        except OSError:
            return ""

    def start(self):
        attempts = 1 if self._fixed_port else 3
        for attempt in range(attempts):
            try:
                self._start_once()
                return self
            except StartupError as e:
                text = self._console_text() + tail(self.log_dir / f"{self.log_name}.log", 200)
                if attempt + 1 < attempts and "Address already in use" in text:
                    self.port = self._pick_port()
                    continue
                raise StartupError(f"{e}\n{self.log_tail(60)}") from None
        return self

    def _start_once(self) -> None:
        if self.is_running():
            raise StartupError(f"{self.describe()} is already running")
        self.home.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        cmd = self.command()
        env = dict(os.environ)
        env["ROCKETMQ_HOME"] = str(self.workdir)
        env.pop("NAMESRV_ADDR", None)
        env.pop("JAVA_TOOL_OPTIONS", None)
        console = open(self.workdir / "console.log", "ab")
        console.write(f"\n{START_MARK} {time.strftime('%H:%M:%S')}: {' '.join(cmd)}\n".encode())
        console.flush()
        t0 = time.monotonic()
        try:
            self.proc = subprocess.Popen(die_with_parent(cmd), cwd=self.workdir, env=env, stdin=subprocess.DEVNULL,
                                         stdout=console, stderr=subprocess.STDOUT, start_new_session=True)
        finally:
            console.close()
        _register(self)
        deadline = t0 + self.startup_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise StartupError(f"{self.describe()} exited with code {self.proc.returncode} while starting")
            try:
                if self._ready():
                    self.startup_seconds = time.monotonic() - t0
                    return
            except OSError:
                pass
            except RuntimeError:
                pass
            time.sleep(0.1)
        self._terminate(5)
        raise StartupError(f"{self.describe()} not ready within {self.startup_timeout:.0f} s")

    def _terminate(self, timeout: float) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)

    def stop(self, timeout: float = DEFAULT_STOP_TIMEOUT_S) -> None:
        """SIGTERM (the JVM shutdown hooks run), then SIGKILL after ``timeout`` seconds."""
        self._terminate(timeout)

    def kill(self) -> None:
        """kill -9: no shutdown hooks, no flush."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)

    def restart(self, kill: bool = False):
        """Stop (or kill -9) and start again with the same port, config and store."""
        self.kill() if kill else self.stop()
        self._fixed_port = True
        return self.start()


class JavaNameServer(_JvmProcess):
    """org.apache.rocketmq.namesrv.NamesrvStartup on a free loopback port."""

    kind = "namesrv"
    main_class = "org.apache.rocketmq.namesrv.NamesrvStartup"
    log_name = "namesrv"
    boot_marker = "The Name Server boot success"

    def __init__(self, build: JavaBuild | None = None, workdir=None, port: int | None = None, *,
                 extra_config: dict | None = None, jvm_opts=(), startup_timeout: float = DEFAULT_STARTUP_TIMEOUT_S):
        super().__init__(build, workdir, port, jvm_opts, startup_timeout)
        self.extra_config = dict(extra_config or {})

    def describe(self) -> str:
        return f"namesrv {self.addr} (pid {self.pid}, dir {self.workdir})"

    def _prepare(self) -> list[str]:
        write_logback(self.workdir / "conf" / "logback_namesrv.xml", self.log_dir, self.log_name)
        config = self.workdir / "namesrv.properties"
        write_properties(config, {
            "listenPort": self.port,
            "rocketmqHome": self.workdir,
            "kvConfigPath": self.workdir / "namesrv" / "kvConfig.json",
            **self.extra_config,
        })
        return ["-c", str(config)]

    def _ready(self) -> bool:
        if not self._booted():
            return False
        wire.cluster_info(self.addr, timeout=2.0, tls=self.tls)
        return True


class JavaBroker(_JvmProcess):
    """org.apache.rocketmq.broker.BrokerStartup (a master) registered with a name server."""

    kind = "broker"
    main_class = "org.apache.rocketmq.broker.BrokerStartup"
    log_name = "broker"
    boot_marker = "boot success"

    _counter = 0

    def __init__(self, namesrv: "JavaNameServer | str", build: JavaBuild | None = None, workdir=None,
                 port: int | None = None, *, broker_name: str | None = None, cluster: str = "DefaultCluster",
                 extra_config: dict | None = None, jvm_opts=(),
                 startup_timeout: float = DEFAULT_STARTUP_TIMEOUT_S):
        JavaBroker._counter += 1
        self.namesrv_addr = namesrv if isinstance(namesrv, str) else namesrv.addr
        self.namesrv_tls = bool(getattr(namesrv, "tls", False))
        self.broker_name = broker_name or f"broker-{os.getpid()}-{JavaBroker._counter}"
        self.cluster = cluster
        self.extra_config = dict(extra_config or {})
        super().__init__(build, workdir, port, jvm_opts, startup_timeout)
        self.store_dir = self.workdir / "store"

    def describe(self) -> str:
        return f"broker {self.broker_name} {self.addr} (pid {self.pid}, dir {self.workdir})"

    def _pick_port(self) -> int:
        return free_broker_port()

    @property
    def vip_port(self) -> int:
        return self.port - 2

    @property
    def ha_port(self) -> int:
        return self.port + 1

    def config(self) -> dict:
        return broker_config(cluster=self.cluster, broker_name=self.broker_name, namesrv_addr=self.namesrv_addr,
                             port=self.port, store_dir=self.store_dir, home=self.workdir,
                             extra=self.extra_config)

    def _prepare(self) -> list[str]:
        write_logback(self.workdir / "conf" / "logback_broker.xml", self.log_dir, self.log_name)
        config = self.workdir / "broker.properties"
        write_properties(config, self.config())
        return ["-c", str(config)]

    def _ready(self) -> bool:
        # The console line is printed once BrokerController.start() returned; the name server
        # must also list this broker's address (guards against a stale entry after restart()).
        if not self._booted():
            return False
        body = wire.cluster_info(self.namesrv_addr, timeout=2.0, tls=self.namesrv_tls)
        return (f'"{self.broker_name}"'.encode() in body and self.addr.encode() in body
                and wire.port_open("127.0.0.1", self.port)
                and wire.broker_runtime_info_ready(self.addr, tls=self.tls))
