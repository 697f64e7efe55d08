"""Issue 9, point 4: a second broker started with the live broker's broker.conf exits at once, non-zero, with the
lock message naming the live broker's pid, and leaves every file of the live store byte for byte as it was."""
from __future__ import annotations

import asyncio
import hashlib
import subprocess
import sys
import time

from conftest_child import child_cwd, child_env
from conftest_servers import (
    call,
    free_broker_port,
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


def _settled_snapshot(root) -> dict[str, str]:
    """The snapshot once the live broker has flushed what it was sent (two snapshots 3 s apart agree)."""
    deadline = time.monotonic() + 90
    previous = _snapshot(root)
    while True:
        time.sleep(3)
        current = _snapshot(root)
        if current == previous:
            return current
        assert time.monotonic() < deadline, "the live store kept changing"
        previous = current


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
    # The live broker rewrites its consumer and delay offsets on its own clock (every 5 and 10 s), which a
    # snapshot taken once the store sat still for 3 s does not always precede: an hour apart, they stay out
    # of the comparison of what the second broker changed.
    conf = write_broker_conf(tmp_path / "broker.conf", store, port, flushConsumerOffsetInterval=3_600_000,
                             flushDelayOffsetInterval=3_600_000)
    log = tmp_path / "live.log"
    live = start_broker_process(conf, log)
    try:
        wait_for_port(port, live, log)
        asyncio.run(_send_keyed_messages(f"127.0.0.1:{port}"))
        before = _settled_snapshot(store)
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
