"""The Go client (github.com/apache/rocketmq-client-go/v2, pinned in compat-tests/go/go.mod) as a peer.

``run_go("send", namesrv=..., topic=..., mode="sync", count=3)`` runs our driver ``compat-tests/go/bin/gocompat``
(built by ``ci/clients/go.sh``, which ci/setup.sh runs) and returns its JSON lines. The driver is rebuilt
once per pytest process when Go is installed (Go's build cache makes that cheap); without Go and without a
binary the calling test is skipped, or fails under CI=true.
"""
from __future__ import annotations

import shutil
import subprocess
import threading
from pathlib import Path

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
