"""Run the Java peers (compat-tests/java/peers) and the official mqadmin tool.

    run_peer("produce", namesrv=ns.addr, topic="T", count=5)        -> list[dict]  (JSON lines)
    run_peer("produce", "--namesrv", ns.addr, "--topic", "T")         (same, raw arguments)
    with CodecService() as codec:
        codec.call({"op": "stringHash", "s": "TagA"})                -> {"hash": 2598919}
    mqadmin("clusterList", namesrv=ns.addr)                           -> stdout text
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import tempfile
import threading
from pathlib import Path

from .build import JavaBuild, ensure_built
from .processes import write_logback

PEER_MAIN = "org.rocketmqpy.compat.Peer"
MQADMIN_MAIN = "org.apache.rocketmq.tools.command.MQAdminStartup"

# Short-lived client JVMs: a small heap and C1 only start faster. codec-bench keeps full JIT.
CLIENT_JVM_OPTS = ["-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto"]
BENCH_JVM_OPTS = ["-Xms256m", "-Xmx512m"]
SERVICE_JVM_OPTS = ["-Xms64m", "-Xmx512m", "-XX:+UseSerialGC"]


class PeerError(RuntimeError):
    def __init__(self, message: str, lines: list[dict] | None = None, stderr: str = "", returncode: int | None = None):
        super().__init__(message)
        self.lines = lines or []
        self.stderr = stderr
        self.returncode = returncode


_home_lock = threading.Lock()
_home: Path | None = None


def client_home() -> Path:
    """A private ``user.home``/``ROCKETMQ_HOME`` for client JVMs (never the real home)."""
    global _home
    with _home_lock:
        if _home is None:
            _home = Path(tempfile.mkdtemp(prefix="rmq-client-home-"))
            write_logback(_home / "conf" / "logback_tools.xml", _home / "logs", "tools")
        return _home


def _client_env(namesrv: str | None = None) -> dict:
    env = dict(os.environ)
    env["ROCKETMQ_HOME"] = str(client_home())
    env.pop("JAVA_TOOL_OPTIONS", None)
    if namesrv:
        env["NAMESRV_ADDR"] = namesrv
    else:
        env.pop("NAMESRV_ADDR", None)
    return env


def _client_jvm(build: JavaBuild, jvm_opts) -> list[str]:
    home = client_home()
    return [build.java, *jvm_opts, f"-Duser.home={home}", f"-Drocketmq.home.dir={home}",
            f"-Drocketmq.client.logRoot={home / 'logs'}", "-cp", build.peers_classpath]


def options(**opts) -> list[str]:
    """``topic="T", body_size=10, prop=["a=1", "b=2"]`` -> ``--topic T --body-size 10 --prop a=1 --prop b=2``.
    ``True`` gives a bare flag; ``None``/``False`` are left out."""
    out: list[str] = []
    for key, value in opts.items():
        name = "--" + key.replace("_", "-")
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            if v is None or v is False:
                continue
            if v is True:
                out.append(name)
            else:
                out += [name, str(v)]
    return out


def _parse_lines(stdout: str) -> list[dict]:
    lines = []
    for raw in stdout.splitlines():
        raw = raw.strip()
        if raw:
            lines.append(json.loads(raw))
    return lines


def run_peer(command: str, *args: str, timeout: float = 120, check: bool = True, build: JavaBuild | None = None,
             jvm_opts=None, input: str | None = None, **opts) -> list[dict]:
    """Run ``Peer <command> args... --opts...`` and return its JSON lines.

    With ``check`` (default) a non-zero exit code or an ``{"error": ...}`` line raises PeerError.
    """
    build = build or ensure_built()
    if jvm_opts is None:
        jvm_opts = BENCH_JVM_OPTS if command == "codec-bench" else CLIENT_JVM_OPTS
    cmd = [*_client_jvm(build, jvm_opts), PEER_MAIN, command, *map(str, args), *options(**opts)]
    return run_json_lines(cmd, f"peer {command}", input=input, timeout=timeout, env=_client_env(), check=check)


def run_json_lines(cmd: list[str], label: str, *, input: str | None = None, timeout: float = 120,
                   env: dict[str, str] | None = None, cwd: Path | None = None, check: bool = True) -> list[dict]:
    """Run a driver program of ours (a Java peer, or a Go, Node.js or C++ client's driver) that prints one JSON
    object per line; return the lines. A timeout or a non-JSON line raises PeerError, and so, with ``check``,
    do a non-zero exit code and an ``{"error": ...}`` line. ``label`` names the program in the messages."""
    try:
        proc = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd,
                              stdin=None if input is not None else subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        raise PeerError(f"{label} timed out after {timeout} s\nstdout:\n{out[-3000:]}\nstderr:\n{err[-3000:]}",
                        stderr=err) from None
    try:
        lines = _parse_lines(proc.stdout)
    except json.JSONDecodeError as e:
        raise PeerError(f"{label} printed a non-JSON line ({e}):\n{proc.stdout[-3000:]}",
                        stderr=proc.stderr, returncode=proc.returncode) from None
    if check:
        errors = [line["error"] for line in lines if "error" in line]
        if proc.returncode != 0 or errors:
            raise PeerError(f"{label} failed (exit {proc.returncode}): {errors}\n"
                            f"stderr (tail):\n{proc.stderr[-4000:]}",
                            lines=lines, stderr=proc.stderr, returncode=proc.returncode)
    return lines


def start_peer(command: str, *args: str, build: JavaBuild | None = None, stderr=subprocess.DEVNULL,
               **opts) -> subprocess.Popen:
    """Start ``Peer <command> ...`` and return the process, its JSON lines readable from ``stdout`` as they
    come (for a stream that a test interrupts, e.g. by killing the broker); stderr is discarded unless
    ``stderr`` (a file) is given."""
    build = build or ensure_built()
    cmd = [*_client_jvm(build, CLIENT_JVM_OPTS), PEER_MAIN, command, *map(str, args), *options(**opts)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, text=True,
                            env=_client_env(), stdin=subprocess.DEVNULL)


def mqadmin(*args: str, namesrv: str | None = None, timeout: float = 120, check: bool = True,
            build: JavaBuild | None = None) -> str:
    """Run the official ``mqadmin`` (MQAdminStartup from the 4.9.8 tools jar); return its stdout.

    ``namesrv`` is passed as ``-n`` (unless args already have one) and as NAMESRV_ADDR.
    mqadmin reports most failures as a stack trace on stderr with exit code 0, so with ``check``
    an exception trace on stderr also raises PeerError.
    """
    build = build or ensure_built()
    argv = [str(a) for a in args]
    if namesrv and "-n" not in argv and "--namesrvAddr" not in argv:
        argv += ["-n", namesrv]
    # Peer's "mqadmin" runs MQAdminStartup.main0 unchanged and then exits at once (the tool's own
    # main lingers ~2 s in Netty's graceful shutdown).
    cmd = [*_client_jvm(build, CLIENT_JVM_OPTS), PEER_MAIN, "mqadmin", *argv]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_client_env(namesrv),
                          stdin=subprocess.DEVNULL)
    if check and (proc.returncode != 0 or "Exception" in proc.stderr):
        raise PeerError(f"mqadmin {' '.join(argv)} failed (exit {proc.returncode}):\n"
                        f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}",
                        stderr=proc.stderr, returncode=proc.returncode)
    return proc.stdout


#: The Java client's failures of a request that did not get through in time, not of the command.
_TRANSIENT = ("RemotingTimeoutException", "RemotingSendRequestException", "RemotingConnectException")


def mqadmin_patiently(*args: str, namesrv: str | None = None, attempts: int = 3) -> str:
    """:func:`mqadmin`, again when the tool's request did not get through in time. For commands safe to repeat.

    mqadmin gives each request a few seconds (3 s for a route or a topic, 5 s for most admin calls) counted
    inside its own JVM, which a loaded machine can use up before the request even leaves (then the client says
    RemotingSendRequestException) or before the answer is read (RemotingTimeoutException): at load ~20 on two
    cores a route query of mqadmin timed out at our name server and an updateTopic at our broker."""
    for attempt in range(attempts):
        try:
            return mqadmin(*args, namesrv=namesrv)
        except PeerError as error:
            if attempt + 1 == attempts or not any(name in error.stderr for name in _TRANSIENT):
                raise
    raise AssertionError("unreachable")


def preload_topic(namesrv: str, broker_addr: str, topic: str, queues: int, count: int, body_size: int,
                  timeout: float = 900) -> dict[str, float]:
    """Create ``topic`` on the broker (``mqadmin updateTopic``) and fill it with ``count`` messages of
    ``body_size`` bytes from the Java peer ``produce-bulk``, as fast as it sends; what the benchmarks read.
    Returns {"sent": n, "seconds": s}."""
    mqadmin("updateTopic", "-b", broker_addr, "-t", topic, "-r", str(queues), "-w", str(queues), namesrv=namesrv)
    loaded = run_peer("produce-bulk", namesrv=namesrv, topic=topic, count=count, body_size=body_size,
                      timeout=timeout, jvm_opts=["-Xms256m", "-Xmx1g"])[-1]
    return {"sent": loaded["sent"], "seconds": round(loaded["seconds"], 3)}


def progress_lags(progress: str, topic: str) -> list[int]:
    """Broker offset minus consumer offset per queue of ``topic``, by queue id, in the table that
    ``mqadmin consumerProgress -g <group>`` prints (#Topic #Broker Name #QID #Broker Offset #Consumer Offset ...)."""
    rows = [line.split() for line in progress.splitlines() if line.startswith(topic + " ")]
    return [int(fields[3]) - int(fields[4]) for fields in sorted(rows, key=lambda f: int(f[2]))]


def consumer_lags(group: str, topic: str, namesrv: str) -> list[int]:
    """:func:`progress_lags` of the group's committed offsets as the brokers report them now."""
    return progress_lags(mqadmin("consumerProgress", "-g", group, namesrv=namesrv), topic)


class CodecError(RuntimeError):
    pass


class CodecService:
    """One long-running ``Peer codec-service`` JVM answering JSON requests.

        with CodecService() as codec:
            codec.call({"op": "crc32", "bodyBase64": "aGVsbG8="})   # -> {"crc": 907060870}

    ``call`` returns the reply dict; a Java-side failure is a reply ``{"error": "<class>: <msg>"}``
    unless ``check=True``, which raises CodecError instead. Thread-safe (calls are serialized).
    """

    def __init__(self, build: JavaBuild | None = None, timeout: float = 30.0):
        self.build = build or ensure_built()
        self.timeout = timeout
        self.proc: subprocess.Popen | None = None
        self._lines: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._stderr_tail: list[str] = []

    def start(self) -> "CodecService":
        cmd = [*_client_jvm(self.build, SERVICE_JVM_OPTS), PEER_MAIN, "codec-service"]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, encoding="utf-8", bufsize=1, env=_client_env())
        threading.Thread(target=self._pump_stdout, daemon=True).start()
        threading.Thread(target=self._pump_stderr, daemon=True).start()
        self.call({"op": "ping"}, check=True)
        return self

    def _pump_stdout(self) -> None:
        assert self.proc and self.proc.stdout
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _pump_stderr(self) -> None:
        assert self.proc and self.proc.stderr
        for line in self.proc.stderr:
            self._stderr_tail = (self._stderr_tail + [line.rstrip("\n")])[-100:]

    def call(self, request: dict, check: bool = False, timeout: float | None = None) -> dict:
        with self._lock:
            if self.proc is None or self.proc.poll() is not None:
                raise CodecError("codec-service is not running; stderr:\n" + "\n".join(self._stderr_tail))
            assert self.proc.stdin
            self.proc.stdin.write(json.dumps(request, separators=(",", ":")) + "\n")
            self.proc.stdin.flush()
            try:
                line = self._lines.get(timeout=timeout or self.timeout)
            except queue.Empty:
                raise CodecError(f"codec-service gave no answer to {request.get('op')} "
                                 f"within {timeout or self.timeout} s") from None
            if line is None:
                raise CodecError("codec-service exited; stderr:\n" + "\n".join(self._stderr_tail))
        reply = json.loads(line)
        if check and "error" in reply:
            raise CodecError(f"{request.get('op')}: {reply['error']}")
        return reply

    def close(self) -> None:
        if self.proc is None:
            return
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait(timeout=10)

    def __enter__(self) -> "CodecService":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()
