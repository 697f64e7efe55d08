"""Issue 9, point 3: a full disk never kills the broker.

The test mounts a 64 MiB tmpfs (it needs root; in CI a mount that fails is a failure, elsewhere a skip), runs
``rocketmq-py broker`` with its store there, fills the file system with a ballast file and sends until the
broker refuses: the refusal is Java's SERVICE_NOT_AVAILABLE (14), the process stays up (no SIGBUS: store
files get their blocks when they are made), pulls and queries keep working, sends resume without a restart
once the ballast is gone, and every acknowledged message reads back.

Forced cleaning (Java's cleanFileForciblyEnable, on by default) deletes the oldest CommitLog files above
85 % use whether consumed or not; it is turned off here so that "every acknowledged message reads back" tests
the put path alone.
"""
from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
import uuid

import pytest
from conftest_servers import (
    call,
    free_broker_port,
    pull_fields,
    send_fields,
    start_broker_process,
    stop_process,
    wait_for_port,
    write_broker_conf,
)

from rocketmq_py import codec
from rocketmq_py.common.codes import RequestCode, ResponseCode
from rocketmq_py.remoting import RemotingClient
from rocketmq_py.store.mapped_file import MappedFile, StoreDiskFullError

FS_SIZE = 64 * 1024 * 1024
BODY = 32 * 1024
TOPIC = "DiskFullTopic"


@pytest.fixture
def small_fs(tmp_path):
    """A 64 MiB tmpfs made for this test, unmounted after it."""
    mount_point = tmp_path / "fs"
    mount_point.mkdir()
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={FS_SIZE}", "tmpfs", str(mount_point)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        reason = f"cannot mount a tmpfs (root is needed): {result.stderr.strip() or result.returncode}"
        if os.environ.get("CI") == "true":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def _fill(path, leave_bytes: int) -> None:
    """Write a ballast file until only about ``leave_bytes`` are free."""
    chunk = b"\0" * (1024 * 1024)
    with open(path, "wb") as ballast:
        while shutil.disk_usage(path.parent).free > leave_bytes + len(chunk):
            ballast.write(chunk)
            ballast.flush()


def test_a_store_file_that_cannot_get_its_blocks_is_refused_and_not_left_behind(small_fs):
    _fill(small_fs / "ballast", 1024 * 1024)
    target = small_fs / "00000000000000000000"
    with pytest.raises(StoreDiskFullError, match="no room"):
        MappedFile(target, 8 * 1024 * 1024)
    assert not target.exists()


async def _send(client, addr, body) -> int:
    response = await call(client, addr, RequestCode.SEND_MESSAGE_V2, send_fields(TOPIC, 0), body)
    return response.code, response.remark


async def _pull_all(client, addr) -> list[bytes]:
    bodies, offset = [], 0
    while True:
        response = await call(client, addr, RequestCode.PULL_MESSAGE, pull_fields(TOPIC, 0, offset))
        if response.code != ResponseCode.SUCCESS:
            return bodies
        records = codec.decode_store_records(response.body)
        bodies += [record.body for record in records]
        offset = int(response.ext_fields["nextBeginOffset"])


async def _exercise(addr: str, ballast, broker) -> None:
    client = RemotingClient()
    acked: list[bytes] = []
    try:
        refusal = None
        for _ in range(4000):
            body = uuid.uuid4().bytes * (BODY // 16)
            code, remark = await _send(client, addr, body)
            assert broker.poll() is None, f"the broker died with {broker.returncode}"
            if code == ResponseCode.SUCCESS:
                acked.append(body)
                continue
            refusal = (code, remark)
            break
        assert refusal is not None, "the disk never filled"
        code, remark = refusal
        assert code == ResponseCode.SERVICE_NOT_AVAILABLE, refusal
        assert "the broker's disk is full" in remark, remark
        # Refused sends stay refused, and do no harm, while reads go on.
        for _ in range(20):
            assert (await _send(client, addr, b"still full"))[0] == ResponseCode.SERVICE_NOT_AVAILABLE
        assert await _pull_all(client, addr) == acked
        query = await call(client, addr, RequestCode.QUERY_CONSUMER_OFFSET,
                           {"consumerGroup": "cg", "topic": TOPIC, "queueId": "0"})
        assert query.code in (ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND), query.remark
        stats = await call(client, addr, RequestCode.GET_BROKER_RUNTIME_INFO)
        assert stats.code == ResponseCode.SUCCESS, stats.remark
        ballast.unlink()
        deadline = time.monotonic() + 60
        while True:
            body = b"after the space came back " + uuid.uuid4().bytes
            code, remark = await _send(client, addr, body)
            if code == ResponseCode.SUCCESS:
                acked.append(body)
                break
            assert code == ResponseCode.SERVICE_NOT_AVAILABLE, (code, remark)
            assert time.monotonic() < deadline, "sends did not resume within 60 s of freeing space"
            await asyncio.sleep(0.5)
        assert await _pull_all(client, addr) == acked
    finally:
        await client.shutdown()


@pytest.mark.timeout(300)
def test_full_disk_refuses_sends_with_javas_code_and_the_broker_lives_on(small_fs, tmp_path):
    port = free_broker_port()
    conf = write_broker_conf(tmp_path / "broker.conf", small_fs / "store", port, cleanFileForciblyEnable="false")
    log = tmp_path / "broker.log"
    broker = start_broker_process(conf, log)
    try:
        wait_for_port(port, broker, log)
        ballast = small_fs / "ballast"
        _fill(ballast, 24 * 1024 * 1024)
        asyncio.run(_exercise(f"127.0.0.1:{port}", ballast, broker))
        assert broker.poll() is None, f"the broker died with {broker.returncode}"
    finally:
        returncode = stop_process(broker)
    output = log.read_text()
    assert returncode == 0, output
    assert "Traceback" not in output, output
    assert "marking the store full" in output and "puts are accepted" in output, output
