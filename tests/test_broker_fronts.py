"""Our broker with front processes (serverWorkerProcesses): the same answers, the same store, one broker."""
from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest
from support.broker import BrokerEnv, heartbeat
from support.cluster import wait_until
from support.file_regions import mapped_by

from rocketmq_py import codec
from rocketmq_py.common.codes import RequestCode, ResponseCode
from rocketmq_py.errors import RocketMQError
from rocketmq_py.remoting.front_pool import FrontTransport


def bodies(response) -> list[bytes]:  # type: ignore[no-untyped-def]
    return [record.body for record in codec.decode_store_records(response.body or b"")]


@pytest.fixture(name="regions")
def regions_fixture(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the file regions the broker process handed to its fronts (answers they read from files)."""
    sizes: list[int] = []
    write_region = FrontTransport.write_region

    def counting(transport: FrontTransport, head: bytes, region) -> None:  # type: ignore[no-untyped-def]
        sizes.append(region.size)
        write_region(transport, head, region)

    monkeypatch.setattr(FrontTransport, "write_region", counting)
    return sizes


async def test_sends_pulls_long_polls_and_admin_through_two_fronts(tmp_path: Path, regions: list[int]) -> None:
    async with BrokerEnv(tmp_path, server_worker_processes=2) as env:
        assert env.broker is not None and len(env.broker.server.front_pids) == 2
        await env.create_topic("TF", queues=2)
        # A pull that waits (long polling) is woken by a send that came through a front.
        waiting = asyncio.create_task(env.pull("TF", 1, 0, suspend_ms=10_000, timeout_ms=15_000))
        await asyncio.sleep(0.2)
        assert not waiting.done()
        sent = [await env.send("TF", f"m{i}".encode(), queue_id=i % 2, tags="A") for i in range(100)]
        assert all(response.code == ResponseCode.SUCCESS for response in sent)
        assert [int((r.ext_fields or {})["queueOffset"]) for r in sent[:4]] == [0, 0, 1, 1]
        woken = await asyncio.wait_for(waiting, 5)
        assert woken.code == ResponseCode.SUCCESS and bodies(woken)[0] == b"m1"
        # The woken pull's records were read from the CommitLog by the front, as an answer at once is.
        assert len(regions) == 1
        # A delayed message takes the send processor, not the fast path: it is stored all the same.
        delayed = await env.send("TF", b"later", queue_id=0, properties={"DELAY": "1"})
        assert delayed.code == ResponseCode.SUCCESS
        pulled = await env.pull("TF", 0, 10)
        assert bodies(pulled) == [f"m{i}".encode() for i in range(20, 84, 2)]
        assert len(regions) == 2 and regions[1] == len(pulled.body or b"")
        offset = await env.call(RequestCode.GET_MAX_OFFSET, {"topic": "TF", "queueId": 0})
        assert (offset.ext_fields or {})["offset"] == "50"
        # Heartbeats register the client under the address it connects from, as without fronts.
        await env.call(RequestCode.HEART_BEAT, body=heartbeat("client-f", "gf", "TF"))
        connections = codec.json_loads((await env.call(RequestCode.GET_CONSUMER_CONNECTION_LIST,
                                                       {"consumerGroup": "gf"})).body)
        [connection] = connections["connectionSet"]
        local = env.client.connection(env.addr)
        assert local is not None
        assert (connection["clientId"], connection["clientAddr"]) == ("client-f", local.local_address)


async def test_a_front_killed_with_a_pull_in_flight_loses_nothing(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """``kill -9`` of the front after the broker process named a pull's records and before the client got them:
    the client's pull fails with its connection, and the same pull through the restarted front gets them."""
    victims: list[int] = []
    write_region = FrontTransport.write_region

    def kill_then_write(transport: FrontTransport, head: bytes, region) -> None:  # type: ignore[no-untyped-def]
        if victims:
            os.kill(victims.pop(), signal.SIGKILL)
        write_region(transport, head, region)

    # A connection takes its transport's write_region when it is made: patched before any is.
    monkeypatch.setattr(FrontTransport, "write_region", kill_then_write)
    async with BrokerEnv(tmp_path, server_worker_processes=1) as env:
        broker = env.broker
        assert broker is not None
        await env.create_topic("TK", queues=1)
        for number in range(10):
            assert (await env.send("TK", f"m{number}".encode(), queue_id=0)).code == ResponseCode.SUCCESS
        [victim] = broker.server.front_pids
        victims.append(victim)
        with pytest.raises(RocketMQError):
            await env.pull("TK", 0, 0)
        assert not victims
        await wait_until(lambda: len(broker.server.front_pids) == 1 and victim not in broker.server.front_pids,
                         timeout=30)
        pulled = await env.pull("TK", 0, 0)
        assert bodies(pulled) == [f"m{number}".encode() for number in range(10)]


async def test_the_fronts_let_go_of_the_commit_log_files_the_clean_service_deletes(
        tmp_path: Path, regions: list[int]) -> None:
    """A front maps the CommitLog files it reads records from; when the clean service deletes one, the front
    closes its mapping (the disk space is freed) and later pulls answer as the broker alone answers them."""
    async with BrokerEnv(tmp_path, server_worker_processes=1) as env:
        broker = env.broker
        assert broker is not None
        await env.create_topic("TD", queues=1)
        body = bytes(200 * 1024)
        for _ in range(50):  # 10 MB: three 4 MB CommitLog files
            assert (await env.send("TD", body, queue_id=0)).code == ResponseCode.SUCCESS
        [front] = broker.server.front_pids
        commit_log = broker.store.commit_log.queue
        first = commit_log.files[0]
        assert len(bodies(await env.pull("TD", 0, 0))) > 0
        assert regions and mapped_by(front, first.path)
        assert commit_log.delete_expired_file_by_time(0, 0) == 2
        await wait_until(lambda: not mapped_by(front, first.path), timeout=30)
        alone = broker.store.get_messages("cg", "TD", 0, 0, 32)
        pulled = await env.pull("TD", 0, 0)
        assert pulled.remark == alone.status.name
        assert (pulled.body or b"") == alone.body
