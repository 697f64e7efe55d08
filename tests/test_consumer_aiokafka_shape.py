"""Issue 32, item 5: the asyncio consumers have aiokafka's shape (subscribe, assign and seek are plain methods),
against our name server and broker in process: the typed example written that way runs; a seek outside the
queue is refused by the next poll; code that still awaits subscribe or seek keeps working, with a
DeprecationWarning; and the blocking seek still refuses an offset out of range as Java's does."""
from __future__ import annotations

import asyncio
import gc
import importlib.util
import warnings
from pathlib import Path

import pytest
from support.cluster import LoopbackCluster

from rocketmq_py import AsyncLitePullConsumer, ConsumeFromWhere, InvalidArgumentError, LitePullConsumer, MessageQueue

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "aiokafka_style.py"
FIRST = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET


@pytest.fixture
async def cluster(tmp_path):
    async with LoopbackCluster(tmp_path) as running:
        yield running


def _example():
    spec = importlib.util.spec_from_file_location("aiokafka_style", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_the_aiokafka_style_example_consumes_everything_three_ways(cluster):
    example = _example()
    sent = await example.produce(cluster.namesrv_addr, "AioStyle", 12)
    assert sorted(await example.consume_with_a_group(cluster.namesrv_addr, "AioStyle", 12)) == sorted(sent)
    assert cluster.committed("aiokafka_style_group", "AioStyle") == cluster.max_offsets("AioStyle")
    assert sorted(await example.replay_every_queue(cluster.namesrv_addr, "AioStyle", 12)) == sorted(sent)
    assert set(await example.consume_with_push(cluster.namesrv_addr, "AioStyle", 12)) == set(sent)


async def _consume_all(consumer: AsyncLitePullConsumer, count: int) -> list[bytes]:
    bodies: list[bytes] = []
    while len(bodies) < count:
        bodies += [message.body for message in await consumer.poll(30_000)]
    return bodies


def _busiest(cluster: LoopbackCluster, topic: str) -> tuple[int, int]:
    """The queue of ``topic`` with the most messages, and its max offset."""
    queue_id, max_offset = max(cluster.max_offsets(topic).items(), key=lambda item: item[1])
    return queue_id, max_offset


async def test_a_seek_outside_the_queue_is_raised_by_the_next_poll_and_loses_nothing(cluster):
    await cluster.produce("SeekRange", 8)
    consumer = AsyncLitePullConsumer("seek_range", namesrv_addr=cluster.namesrv_addr, auto_commit=False)
    async with consumer:
        queues = await consumer.fetch_message_queues("SeekRange")
        consumer.assign(queues)
        for queue in queues:
            consumer.seek(queue, 0)
        assert len(await _consume_all(consumer, 8)) == 8
        queue_id, max_offset = _busiest(cluster, "SeekRange")
        busiest = MessageQueue("SeekRange", "broker-api", queue_id)

        consumer.seek(busiest, max_offset + 1)
        with pytest.raises(InvalidArgumentError, match=rf"seek offset {max_offset + 1} .* outside \[0, {max_offset}\]"):
            await consumer.poll(30_000)
        await cluster.produce("SeekRange", 4)
        assert len(await _consume_all(consumer, 4)) == 4, "the queue went on where it was"

        consumer.seek(busiest, 0)
        now = cluster.max_offsets("SeekRange")[queue_id]
        assert len(await _consume_all(consumer, now)) == now


async def test_code_that_awaits_subscribe_and_seek_still_works_and_is_warned(cluster):
    await cluster.produce("Awaited", 6)
    subscriber = AsyncLitePullConsumer("awaited_sub", namesrv_addr=cluster.namesrv_addr, consume_from_where=FIRST)
    with pytest.warns(DeprecationWarning, match=r"subscribe\(\) is no longer a coroutine: call it without await"):
        await subscriber.subscribe("Awaited")
    async with subscriber:
        with pytest.warns(DeprecationWarning, match="subscribe"):
            await subscriber.subscribe("AwaitedToo")  # running: waits until the brokers were told
        assert {s.topic for s in subscriber.subscriptions()} == {"Awaited", "AwaitedToo"}
        assert len(await _consume_all(subscriber, 6)) == 6

    seeker = AsyncLitePullConsumer("awaited_seek", namesrv_addr=cluster.namesrv_addr, auto_commit=False)
    async with seeker:
        queue_id, max_offset = _busiest(cluster, "Awaited")
        queue = MessageQueue("Awaited", "broker-api", queue_id)
        seeker.assign([queue])
        with pytest.warns(DeprecationWarning, match=r"seek\(\) is no longer a coroutine"):
            await seeker.seek(queue, 0)
        assert len(await _consume_all(seeker, max_offset)) == max_offset
        with pytest.warns(DeprecationWarning), pytest.raises(InvalidArgumentError, match="outside"):
            await seeker.seek(queue, max_offset + 5)
        await cluster.produce("Awaited", 8)
        grown = cluster.max_offsets("Awaited")[queue_id] - max_offset
        assert grown > 0
        assert len(await _consume_all(seeker, grown)) == grown, "an awaited refusal is not raised again by poll()"


async def test_plain_calls_leave_no_coroutine_behind(cluster):
    consumer = AsyncLitePullConsumer("plain_calls", namesrv_addr=cluster.namesrv_addr)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        consumer.subscribe("Plain")
        async with consumer:
            consumer.subscribe("PlainToo")
            await asyncio.sleep(0)
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)] == []


async def test_the_blocking_seek_refuses_an_offset_out_of_range_as_javas(cluster):
    await cluster.produce("BlockingSeek", 4)
    queue_id, max_offset = _busiest(cluster, "BlockingSeek")
    queue = MessageQueue("BlockingSeek", "broker-api", queue_id)

    def seek_both_ways() -> list[bytes]:
        with LitePullConsumer("blocking_seek", namesrv_addr=cluster.namesrv_addr, auto_commit=False) as consumer:
            consumer.assign([queue])
            with pytest.raises(InvalidArgumentError, match="outside"):
                consumer.seek(queue, max_offset + 1)
            consumer.seek(queue, max_offset - 1)
            return [message.body for message in consumer.poll(30_000)]

    assert len(await asyncio.to_thread(seek_both_ways)) == 1
