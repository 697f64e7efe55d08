"""Issue 4, point 8: the lite pull consumer in assign mode, with seek, re-reads a known range exactly, from
messages the official Java producer sent; seek_to_begin/end, offset_for_timestamp, pause/resume and
commits as the broker sees them."""
from __future__ import annotations

import asyncio
import time

import pytest
from harness import mqadmin, progress_lags, run_peer, unique_name

from rocketmq_py.client.consumer import AsyncLitePullConsumer, LitePullConsumer
from rocketmq_py.common.message_queue import MessageQueue
from rocketmq_py.errors import InvalidArgumentError

COUNT = 40


@pytest.fixture(scope="module")
def produced(java_namesrv, java_broker):
    """COUNT messages from the Java producer to a new topic of 4 queues: {(queueId, queueOffset): line}."""
    topic = unique_name("LitePull")
    mqadmin("updateTopic", "-b", java_broker.addr, "-t", topic, "-r", "4", "-w", "4", namesrv=java_namesrv.addr)
    before = int(time.time() * 1000)
    lines = run_peer("produce", namesrv=java_namesrv.addr, topic=topic, count=COUNT, tags="TagL",
                     keys="key-{i}", body="lite-{i}", prop=["origin=java"])
    after = int(time.time() * 1000)
    by_position = {(line["queueId"], line["queueOffset"]): (i, line) for i, line in enumerate(lines)}
    return topic, by_position, before, after


def _poll_until(consumer, wanted: int, timeout_s: float = 30.0) -> list:
    got = []
    deadline = time.monotonic() + timeout_s
    while len(got) < wanted and time.monotonic() < deadline:
        got.extend(consumer.poll(1000))
    return got


def test_assign_and_seek_reread_a_known_range_exactly(java_namesrv, produced):
    topic, by_position, _, _ = produced
    with LitePullConsumer(unique_name("lp"), namesrv_addr=java_namesrv.addr, auto_commit=False) as consumer:
        queues = sorted(consumer.fetch_message_queues(topic))
        assert [q.queue_id for q in queues] == [0, 1, 2, 3]
        queue = queues[1]
        count_in_queue = sum(1 for q, _ in by_position if q == queue.queue_id)
        assert count_in_queue >= 5
        consumer.assign([queue])
        start, end = 2, count_in_queue - 1
        for _ in range(2):  # the same range twice: the second seek discards what was read
            consumer.seek(queue, start)
            got = _poll_until(consumer, end - start)
            got = [m for m in got if m.queue_offset < end][: end - start]
            assert [m.queue_offset for m in got] == list(range(start, end))
            for message in got:
                index, line = by_position[(queue.queue_id, message.queue_offset)]
                assert message.msg_id == line["msgId"]
                assert message.body == f"lite-{index}".encode()
                assert message.tags == "TagL" and message.keys == f"key-{index}"
                assert message.properties["origin"] == "java"
                assert message.topic == topic and message.queue_id == queue.queue_id


def test_seek_to_begin_and_end_and_offset_for_timestamp(java_namesrv, produced):
    topic, by_position, before, after = produced
    with LitePullConsumer(unique_name("lp"), namesrv_addr=java_namesrv.addr) as consumer:
        queue = MessageQueue(topic, next(iter(consumer.fetch_message_queues(topic))).broker_name, 2)
        consumer.assign([queue])
        size = sum(1 for q, _ in by_position if q == 2)
        assert consumer.offset_for_timestamp(queue, before - 60_000) == 0
        # As Java's store answers: the last message stored at or before the time.
        assert consumer.offset_for_timestamp(queue, after + 60_000) == size - 1
        consumer.seek_to_end(queue)
        assert consumer.poll(1500) == []
        consumer.seek_to_begin(queue)
        got = _poll_until(consumer, size)
        assert sorted(m.queue_offset for m in got) == list(range(size))
        with pytest.raises(InvalidArgumentError):
            consumer.seek(queue, size + 5)



def test_pause_holds_a_queue_back_and_commit_reaches_the_broker(java_namesrv, produced):
    topic, by_position, _, _ = produced
    group = unique_name("lp")
    per_queue = {q: sum(1 for queue_id, _ in by_position if queue_id == q) for q in range(4)}

    async def consume() -> tuple[list, list, dict]:
        async with AsyncLitePullConsumer(group, namesrv_addr=java_namesrv.addr, auto_commit=False,
                                         consume_from_where="CONSUME_FROM_FIRST_OFFSET") as consumer:
            queues = sorted(await consumer.fetch_message_queues(topic))
            consumer.assign(queues)
            consumer.pause([queues[0]])  # no await in between: queue 0 is never pulled before resume
            first: list = []
            deadline = time.monotonic() + 30
            while len(first) < COUNT - per_queue[0] and time.monotonic() < deadline:
                first.extend(await consumer.poll(1000))
            assert await consumer.poll(1500) == []
            consumer.resume([queues[0]])
            second: list = []
            while len(second) < per_queue[0] and time.monotonic() < deadline + 30:
                second.extend(await consumer.poll(1000))
            await consumer.commit_sync()
            return first, second, {q.queue_id: await consumer.committed(q) for q in queues}

    first, second, committed = asyncio.run(consume())
    assert {m.queue_id for m in first} == {1, 2, 3} and len(first) == COUNT - per_queue[0]
    assert {m.queue_id for m in second} == {0} and len(second) == per_queue[0]
    assert committed == per_queue
    progress = mqadmin("consumerProgress", "-g", group, namesrv=java_namesrv.addr)
    assert progress_lags(progress, topic) == [0, 0, 0, 0], progress


def test_asyncio_twin_polls_the_same_messages(java_namesrv, produced):
    topic, by_position, _, _ = produced

    async def read_all() -> list:
        async with AsyncLitePullConsumer(unique_name("lp"), namesrv_addr=java_namesrv.addr,
                                         consume_from_where="CONSUME_FROM_FIRST_OFFSET") as consumer:
            consumer.assign(await consumer.fetch_message_queues(topic))
            got: list = []
            deadline = time.monotonic() + 30
            while len(got) < COUNT and time.monotonic() < deadline:
                got.extend(await consumer.poll(1000))
            return got

    got = asyncio.run(read_all())
    assert sorted((m.queue_id, m.queue_offset) for m in got) == sorted(by_position)
    assert {m.body for m in got} == {f"lite-{i}".encode() for i in range(COUNT)}


def test_subscribe_mode_splits_the_queues_of_a_group(java_namesrv, produced):
    topic, by_position, _, _ = produced
    group = unique_name("lp")
    consumers = []
    try:
        for _ in range(2):
            consumer = LitePullConsumer(group, namesrv_addr=java_namesrv.addr,
                                        consume_from_where="CONSUME_FROM_FIRST_OFFSET")
            consumer.subscribe(topic, "TagL")
            consumer.start()
            consumers.append(consumer)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assigned = [{q for q in c.assignment() if q.topic == topic} for c in consumers]
            if all(len(a) == 2 for a in assigned) and not assigned[0] & assigned[1]:
                break
            time.sleep(0.2)
        else:
            raise AssertionError(f"the queues were not split: {assigned}")
        got: list = []
        deadline = time.monotonic() + 30
        while len(got) < COUNT and time.monotonic() < deadline:
            for consumer in consumers:
                got.extend((consumer, m) for m in consumer.poll(200))
    finally:
        for consumer in consumers:
            consumer.shutdown()
    assert sorted((m.queue_id, m.queue_offset) for _, m in got) == sorted(by_position)
    for consumer, message in got:
        assert MessageQueue(topic, message.broker_name, message.queue_id) in assigned[consumers.index(consumer)]
