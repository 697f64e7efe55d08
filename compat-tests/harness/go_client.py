"""The Go client (github.com/apache/rocketmq-client-go/v2, pinned in compat-tests/go/go.mod) as a peer.

``run_go("send", namesrv=..., topic=..., mode="sync", count=3)`` runs our driver ``compat-tests/go/bin/gocompat``
(built by ``ci/clients/go.sh``, which ci/setup.sh runs) and returns its JSON lines. The driver is rebuilt
once per pytest process when Go is installed (Go's build cache makes that cheap); without Go and without a
binary the calling test is skipped, or fails under CI=true.

``GoKeyedSends(namesrv, topic, "go-", stderr_path)`` runs ``gocompat keyed`` (sends keyed messages until told to
stop, sending each failed attempt again) and reads its lines as they come: a failover test starts it before a
``kill -9`` of the master, and ``wait_acked(100, other_than=old_master)`` blocks until 100 sends were stored by
another broker (the store address is in each acknowledged send's offset message id).
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from rocketmq_py import codec

from .build import unavailable
from .peers import options, run_json_lines

GO_DIR = Path(__file__).resolve().parent.parent / "go"
BINARY = GO_DIR / "bin" / "gocompat"
BUILD_SCRIPT = GO_DIR.parent.parent / "ci" / "clients" / "go.sh"
BUILD_TIMEOUT_S = 10 * 60

_lock = threading.Lock()
_built: Path | str | None = None


def _build_or_reason() -> Path | str:
    if shutil.which("go") is None:
        return BINARY if BINARY.exists() else "go is not installed and compat-tests/go is not built: run ci/setup.sh"
    try:
        proc = subprocess.run(["bash", str(BUILD_SCRIPT)], capture_output=True, text=True, timeout=BUILD_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return f"{BUILD_SCRIPT.name} timed out after {BUILD_TIMEOUT_S} s"
    if proc.returncode != 0 or not BINARY.exists():
        return f"{BUILD_SCRIPT.name} failed (exit {proc.returncode}):\n{(proc.stdout + proc.stderr)[-3000:]}"
    return BINARY


def go_binary() -> Path:
    """The driver, built if needed (once per process)."""
    global _built
    with _lock:
        if _built is None:
            _built = _build_or_reason()
    if isinstance(_built, str):
        unavailable(_built)
    assert isinstance(_built, Path)
    return _built


def run_go(command: str, **opts) -> list[dict]:
    """Run ``gocompat <command> --opts...``; a non-zero exit or an ``{"error": ...}`` line raises PeerError.

    ``timeout`` and ``linger`` are the driver's own (seconds); the process gets a minute more than both."""
    cmd = [str(go_binary()), command, *options(**opts)]
    limit = float(opts.get("timeout", 60)) + float(opts.get("linger", 0)) + 60
    return run_json_lines(cmd, f"gocompat {command}", timeout=limit)


def consumed(lines: list[dict]) -> tuple[list[dict], dict]:
    """Split a push or pull run's lines into (message lines, the closing ``done`` line)."""
    *messages, done = lines
    assert done.get("event") == "done", done
    assert all(line.get("event") == "msg" for line in messages), messages
    return messages, done


@dataclass(frozen=True)
class Ack:
    key: str
    #: ``host:port`` of the broker that stored the message (from its offset message id).
    stored_by: str
    #: ``time.monotonic()`` when the test read the line.
    read_at: float


class GoKeyedSends:
    """``gocompat keyed`` as a process, its lines read by a thread: ``.acked`` (in order), ``.failures`` (count
    by error text, its broker address left out), ``.done`` (the last line, after ``stop()``)."""

    def __init__(self, namesrv: str, topic: str, prefix: str, stderr_path: Path) -> None:
        self.command = [str(go_binary()), "keyed", *options(namesrv=namesrv, topic=topic, keys=prefix)]
        self.stderr_path = stderr_path
        self.acked: list[Ack] = []
        self.failures: Counter[str] = Counter()
        self.done: dict | None = None
        #: ``time.monotonic()`` when the process was started (its client refreshes its routes every 30 s from then).
        self.started_at = 0.0
        self._proc: subprocess.Popen | None = None
        self._reader: threading.Thread | None = None
        self._changed = threading.Condition()

    def start(self) -> GoKeyedSends:
        self.started_at = time.monotonic()
        with open(self.stderr_path, "w") as stderr:
            self._proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                          text=True)
        self._reader = threading.Thread(target=self._read, name="gocompat-keyed", daemon=True)
        self._reader.start()
        return self

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        try:
            for raw in self._proc.stdout:
                line = json.loads(raw)
                with self._changed:
                    if line.get("event") == "sent":
                        host, port, _ = codec.decode_offset_msg_id(line["offsetMsgId"])
                        self.acked.append(Ack(line["key"], f"{host}:{port}", time.monotonic()))
                    elif line.get("event") == "failed":
                        self.failures[_without_address(line["error"])] += 1
                    else:
                        self.done = line
                    self._changed.notify_all()
        finally:
            with self._changed:
                self._changed.notify_all()

    def acked_count(self, other_than: str | None = None) -> int:
        """Acknowledged sends (stored by a broker other than ``other_than``, when given)."""
        with self._changed:
            return self._counted(other_than)

    def _counted(self, other_than: str | None) -> int:
        return sum(1 for ack in self.acked if ack.stored_by != other_than)

    def wait_acked(self, count: int, other_than: str | None = None, deadline_s: float = 120.0) -> int:
        """Block until ``count`` sends were acknowledged (stored by a broker other than ``other_than``); the count
        then. Raises if the process ended first, or when ``deadline_s`` passed (a bound for a broken group, not a
        measure)."""
        reader = self._reader
        assert reader is not None
        with self._changed:
            self._changed.wait_for(lambda: self._counted(other_than) >= count or not reader.is_alive(), deadline_s)
            if self._counted(other_than) < count:
                raise AssertionError(f"the Go producer stopped after {self._counted(other_than)} acknowledged sends "
                                     f"(failures {dict(self.failures)}): {self._stderr_tail()}")
            return self._counted(other_than)

    def stop(self, deadline_s: float = 60.0) -> dict:
        """Close its stdin (it ends after the send in progress) and wait for its exit; its ``done`` line."""
        assert self._proc is not None and self._proc.stdin is not None and self._reader is not None
        self._proc.stdin.close()
        returncode = self._proc.wait(timeout=deadline_s)
        self._reader.join()
        assert returncode == 0 and self.done is not None and "error" not in self.done, \
            f"gocompat keyed exited with {returncode}, last line {self.done}: {self._stderr_tail()}"
        return self.done

    def kill(self) -> None:
        """End the process if it still runs (after a failure of the test)."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()

    def _stderr_tail(self) -> str:
        return self.stderr_path.read_text(errors="replace")[-2000:]


def _without_address(error: str) -> str:
    """The error's kind: the Go client puts the broker's address in some of its texts."""
    return re.sub(r"\d+\.\d+\.\d+\.\d+:\d+", "<addr>", error)
