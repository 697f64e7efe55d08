"""The server processes' malloc keeps freed large blocks (rocketmq_py/remoting/allocator.py): the buffers of one
request are written into the pages of the last one's, not into fresh pages that fault one by one."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Coroutine

import pytest

from rocketmq_py.remoting.allocator import keep_freed_blocks

# Rounds of a request's life in bytes: 40 buffers of 200 KiB made, written and freed together. Prints whether
# keep_freed_blocks took, and the page faults of each round after the first (which maps the pages).
_ROUNDS = """
import json, resource, sys
from rocketmq_py.remoting.allocator import keep_freed_blocks
kept = keep_freed_blocks() if sys.argv[1] == "keep" else False
faults = []
for _ in range(6):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    buffers = [b"x" * (200 * 1024) for _ in range(40)]
    del buffers
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(json.dumps({"kept": kept, "faults": faults[1:]}))
"""
_PAGES_A_ROUND = 40 * 200 * 1024 // 4096


def _glibc() -> bool:
    try:
        return (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    except (ValueError, OSError):
        return False


def _rounds(mode: str, **env: str) -> dict:
    clean = {key: value for key, value in os.environ.items()
             if not key.startswith("MALLOC_") and key != "GLIBC_TUNABLES"}
    done = subprocess.run([sys.executable, "-c", _ROUNDS, mode], capture_output=True, text=True, check=True,
                          env={**clean, **env})
    return json.loads(done.stdout)


def test_kept_blocks_serve_the_next_buffers_without_faults() -> None:
    if not _glibc():
        assert keep_freed_blocks() is False  # nothing to set elsewhere: the default allocator stays
        return
    default = _rounds("default")
    kept = _rounds("keep")
    assert kept["kept"] is True
    # By default glibc gives the freed buffers back and every round faults its pages in again; the control
    # that shows the rounds measure what the setting changes.
    assert min(default["faults"]) >= _PAGES_A_ROUND // 2, default
    assert max(kept["faults"]) < _PAGES_A_ROUND // 20, kept


def test_an_operators_own_thresholds_are_kept() -> None:
    if not _glibc():
        return  # keep_freed_blocks does nothing there (the test above holds it to that)
    assert _rounds("keep", MALLOC_TRIM_THRESHOLD_="131072")["kept"] is False
    assert _rounds("keep", GLIBC_TUNABLES="glibc.malloc.mmap_threshold=131072")["kept"] is False
    assert _rounds("keep", GLIBC_TUNABLES="glibc.malloc.arena_max=2")["kept"] is True


def test_a_front_keeps_freed_blocks_before_it_serves(monkeypatch: pytest.MonkeyPatch) -> None:
    from rocketmq_py.remoting import front
    calls: list[str] = []
    monkeypatch.setattr(front, "keep_freed_blocks", lambda: calls.append("keep") or True)

    def run(main: Coroutine[Any, Any, object]) -> None:
        main.close()
        calls.append("serve")
    monkeypatch.setattr(front, "run_on_new_loop", run)
    assert front.main(["--channel-fd", "-1"]) == 0
    assert calls == ["keep", "serve"]


def test_the_broker_process_keeps_freed_blocks_before_it_serves(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    from rocketmq_py import broker, cli
    from rocketmq_py.remoting import allocator, loop
    calls: list[str] = []
    monkeypatch.setattr(allocator, "keep_freed_blocks", lambda: calls.append("keep") or True)

    class Controller:
        def __init__(self, *args: object) -> None:
            calls.append("controller")

        async def shutdown(self) -> None:
            pass
    monkeypatch.setattr(broker, "BrokerController", Controller)

    def run(main: Coroutine[Any, Any, object]) -> None:
        main.close()
        calls.append("serve")
    monkeypatch.setattr(loop, "run_on_new_loop", run)
    conf = tmp_path / "broker.conf"
    conf.write_text(f"storePathRootDir={tmp_path / 'store'}\n")
    assert cli.main(["broker", "-c", str(conf), "--workers", "0"]) == 0
    assert calls == ["keep", "controller", "serve"]
