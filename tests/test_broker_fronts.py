"""Our broker with front processes (serverWorkerProcesses): the same answers, the same store, one broker."""
from __future__ import annotations

import asyncio
from pathlib import Path

from support.broker import BrokerEnv, heartbeat

from rocketmq_py import codec
from rocketmq_py.common.codes import RequestCode, ResponseCode


def bodies(response) -> list[bytes]:  # type: ignore[no-untyped-def]
    return [record.body for record in codec.decode_store_records(response.body or b"")]


async def test_sends_pulls_long_polls_and_admin_through_two_fronts(tmp_path: Path) -> None:
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
        # A delayed message takes the send processor, not the fast path: it is stored all the same.
        delayed = await env.send("TF", b"later", queue_id=0, properties={"DELAY": "1"})
        assert delayed.code == ResponseCode.SUCCESS
        pulled = await env.pull("TF", 0, 10)
        assert bodies(pulled) == [f"m{i}".encode() for i in range(20, 84, 2)]
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
