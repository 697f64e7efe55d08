"""Issue 9, point 4: a second broker started with the live broker's broker.conf exits at once, non-zero, with the
lock message naming the live broker's pid, and leaves every file of the live store byte for byte as it was.

The live broker itself writes its store on its own schedule (flushes, the checkpoint, the periodic persist of
consumerOffset.json and delayOffset.json): a comparison of the store across the second broker's run would see those
writes too. So the live broker is frozen (SIGSTOP, its whole process tree) while the second broker runs: between
the two snapshots, only the second broker can have changed a file. It still holds its lock while frozen.
"""
from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Iterator

from support.child import child_cwd, child_env
from support.ports import free_broker_port
from support.servers import (
    call,
    send_fields,
    start_broker_process,
    stop_process,
    wait_for_port,
    write_broker_conf,
)

from rocketmq_py.common.codes import RequestCode
from rocketmq_py.remoting import RemotingClient


def _snapshot(root) -> dict[str, str]:
    return {str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(root.rglob("*")) if path.is_file()}


def _process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (a broker's front processes, if any)."""
    tree = [pid]
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError):
            for child in (task / "children").read_text().split():
                tree += _process_tree(int(child))
    return tree


@contextlib.contextmanager
def _frozen(pid: int) -> Iterator[None]:
    """The process and its descendants stopped (SIGSTOP) for the block, then continued."""
    tree = _process_tree(pid)
    for member in tree:
        os.kill(member, signal.SIGSTOP)
    try:
        for member in tree:
            _wait_stopped(member)
        yield
    finally:
        for member in tree:
            os.kill(member, signal.SIGCONT)


def _wait_stopped(pid: int) -> None:
    # SIGSTOP is asynchronous: the state turns to T once the kernel has stopped every thread.
    while True:
        states = {(task / "stat").read_text().rsplit(")", 1)[1].split()[0]
                  for task in Path(f"/proc/{pid}/task").iterdir()}
        if states <= {"T", "t"}:
            return
        os.sched_yield()


async def _send_keyed_messages(addr: str) -> None:
    client = RemotingClient()
    try:
        for index in range(20):
            response = await call(client, addr, RequestCode.SEND_MESSAGE_V2,
                                  send_fields("LiveTopic", index % 4, KEYS=f"key-{index}"), b"live %d" % index)
            assert response.code == 0, response.remark
    finally:
        await client.shutdown()


def test_a_second_broker_on_a_live_store_exits_and_changes_nothing(tmp_path):
    port = free_broker_port()
    store = tmp_path / "store"
    conf = write_broker_conf(tmp_path / "broker.conf", store, port)
    log = tmp_path / "live.log"
    live = start_broker_process(conf, log)
    try:
        wait_for_port(port, live, log)
        asyncio.run(_send_keyed_messages(f"127.0.0.1:{port}"))
        with _frozen(live.pid):
            before = _snapshot(store)
            assert "abort" in before and "lock" in before and any(name.startswith("index/") for name in before)
            second = subprocess.run([sys.executable, "-m", "rocketmq_py", "broker", "-c", str(conf)],
                                    capture_output=True, text=True, timeout=120, cwd=child_cwd(),
                                    env=child_env({"PATH": "/usr/bin:/bin"}))
            output = second.stdout + second.stderr
            assert second.returncode != 0, output
            assert f"the store at {store} is locked by a running broker (pid {live.pid})" in output, output
            assert "recover" not in output.lower(), output
            assert _snapshot(store) == before
        assert live.poll() is None, "the live broker must keep running"
        asyncio.run(_send_keyed_messages(f"127.0.0.1:{port}"))
    finally:
        returncode = stop_process(live)
    assert returncode == 0, log.read_text()
