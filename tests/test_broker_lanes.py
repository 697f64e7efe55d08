"""The broker's lanes (Java's separate executors and BrokerFastFailure), shown without timing: the send lane is
blocked on purpose (the store's put waits at a gate), and what must still be answered is asked meanwhile."""
from __future__ import annotations

import asyncio
import re

import pytest

from rocketmq_py.broker.config import load_broker_config
from rocketmq_py.broker.lanes import SEND_WORKERS
from rocketmq_py.common.codes import RequestCode, ResponseCode
from rocketmq_py.remoting import RemotingClient, create_request
from rocketmq_py.common.clock import now_ms

from support.cluster import wait_until
from support.lanes import heartbeat_body, lone_broker, send_request

TOPIC = "LaneTopic"


def gate_the_store(broker) -> asyncio.Event:
    """Make every put wait until the returned event is set (a store that cannot keep up, made on purpose)."""
    gate = asyncio.Event()
    put_message = broker.store.put_message

    async def gated(message):
        await gate.wait()
        return await put_message(message)

    broker.store.put_message = gated
    # The fast path stores without ever suspending: while gated, it leaves every send to the processor.
    broker.store.refuses_plain = lambda *sizes: True
    return gate


@pytest.fixture
async def client():
    remoting = RemotingClient()
    yield remoting
    await remoting.shutdown()


async def test_admin_offset_and_heartbeat_requests_do_not_queue_behind_sends(tmp_path, client):
    async with lone_broker(tmp_path, wait_time_mills_in_send_queue=600_000) as broker:
        addr = broker.broker_addr
        assert (await client.invoke(addr, send_request(TOPIC), 10_000)).code == ResponseCode.SUCCESS
        gate = gate_the_store(broker)
        sends = [asyncio.ensure_future(client.invoke(addr, send_request(TOPIC), 120_000)) for _ in range(1024)]
        await wait_until(lambda: broker.lanes.send.size > 0, timeout=60.0)
        fields = {"topic": TOPIC, "queueId": "0"}
        max_offset = await client.invoke(addr, create_request(RequestCode.GET_MAX_OFFSET, fields), 60_000)
        assert (max_offset.code, max_offset.ext_fields["offset"]) == (ResponseCode.SUCCESS, "1")
        beat = await client.invoke(addr, create_request(RequestCode.HEART_BEAT, None,
                                                        heartbeat_body("c1", "lane-group", TOPIC)), 60_000)
        assert beat.code == ResponseCode.SUCCESS
        offset = await client.invoke(addr, create_request(RequestCode.QUERY_CONSUMER_OFFSET,
                                                          dict(fields, consumerGroup="lane-group")), 60_000)
        assert offset.code in (ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND)
        assert not any(send.done() for send in sends)
        gate.set()
        answers = await asyncio.gather(*sends)
        assert {answer.code for answer in answers} == {ResponseCode.SUCCESS}
        assert broker.store.get_max_offset_in_queue(TOPIC, 0) == 1025


async def test_a_send_that_waited_too_long_gets_system_busy_and_is_not_stored(tmp_path, client):
    async with lone_broker(tmp_path, wait_time_mills_in_send_queue=600_000) as broker:
        addr = broker.broker_addr
        gate = gate_the_store(broker)
        sends = [asyncio.ensure_future(client.invoke(addr, send_request(TOPIC), 120_000)) for _ in range(100)]
        queued = 100 - SEND_WORKERS  # every worker holds a send at the gate, the rest wait in the lane
        await wait_until(lambda: broker.lanes.send.size == queued, timeout=60.0)
        broker.config.wait_time_mills_in_send_queue = 50  # as UPDATE_BROKER_CONFIG would set it
        broker.on_config_updated()
        # The sweep refuses the queued sends once they are 50 ms old, while every worker is still at the gate.
        await wait_until(lambda: broker.lanes.send.refused["timeout"] == queued, timeout=60.0)
        gate.set()
        answers = await asyncio.gather(*sends)
        busy = [a for a in answers if a.code == ResponseCode.SYSTEM_BUSY]
        stored = [a for a in answers if a.code == ResponseCode.SUCCESS]
        assert (len(busy), len(stored)) == (queued, SEND_WORKERS)
        for answer in busy:
            assert re.fullmatch(r"\[TIMEOUT_CLEAN_QUEUE\]broker busy, start flow control for a while, "
                                r"period in queue: \d+ms, size of queue: \d+", answer.remark)
        assert broker.store.get_max_offset_in_queue(TOPIC, 0) == len(stored)


async def test_page_cache_busy_refuses_sends_as_java_does(tmp_path, client):
    """As Java: the sweep answers queued sends [PCBUSY_CLEAN_QUEUE] (SYSTEM_BUSY); a send that reaches the store
    meanwhile is refused by the store's own check, [PC_SYNCHRONIZED] with SYSTEM_ERROR.

    The queue's wait limit is out of reach: at the default 200 ms the sweep refused the queued sends
    ([TIMEOUT_CLEAN_QUEUE]) on a loaded machine before the test saw them queued."""
    async with lone_broker(tmp_path, wait_time_mills_in_send_queue=600_000) as broker:
        addr = broker.broker_addr
        gate = gate_the_store(broker)
        sends = [asyncio.ensure_future(client.invoke(addr, send_request(TOPIC), 60_000))
                 for _ in range(SEND_WORKERS + 3)]
        await wait_until(lambda: broker.lanes.send.size == 3, timeout=60.0)
        broker.store.commit_log.begin_time_in_lock = now_ms() - 5_000  # a put stuck in the lock for 5 s
        await wait_until(lambda: broker.lanes.send.refused["pcbusy"] == 3, timeout=60.0)
        gate.set()
        answers = await asyncio.gather(*sends)
        remarks = sorted({(answer.code, answer.remark.split("]")[0] + "]") for answer in answers})
        assert remarks == [(ResponseCode.SYSTEM_ERROR, "[PC_SYNCHRONIZED]"), (ResponseCode.SYSTEM_BUSY,
                                                                              "[PCBUSY_CLEAN_QUEUE]")]
        assert sum(answer.code == ResponseCode.SYSTEM_BUSY for answer in answers) == 3
        broker.config.broker_fast_failure_enable = False
        broker.on_config_updated()
        stored = await client.invoke(addr, send_request(TOPIC), 10_000)
        assert (stored.code, stored.remark) == (ResponseCode.SYSTEM_ERROR,
                                                "[PC_SYNCHRONIZED]broker busy, start flow control for a while")
        broker.store.commit_log.begin_time_in_lock = 0
        assert (await client.invoke(addr, send_request(TOPIC), 10_000)).code == ResponseCode.SUCCESS


def test_lane_settings_load_from_java_keys(tmp_path):
    path = tmp_path / "broker.conf"
    path.write_text("waitTimeMillsInSendQueue=350\nwaitTimeMillsInPullQueue=7000\nbrokerFastFailureEnable=false\n"
                    "sendThreadPoolQueueCapacity=123\nosPageCacheBusyTimeOutMills=2500\n"
                    f"storePathRootDir={tmp_path / 'store'}\n")
    broker, store = load_broker_config(path)
    assert (broker.wait_time_mills_in_send_queue, broker.wait_time_mills_in_pull_queue) == (350, 7000)
    assert (broker.broker_fast_failure_enable, broker.send_thread_pool_queue_capacity) == (False, 123)
    assert store.os_page_cache_busy_time_out_mills == 2500
