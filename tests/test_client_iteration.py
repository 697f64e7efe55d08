"""``for`` / ``async for`` over the lite pull consumers and ``async for batch in consumer.messages()`` on the
push consumer, against our broker on loopback: every message once, offsets committed, ``break`` and
shutdown leave nothing running; and the public rebalance listener."""
from __future__ import annotations

import asyncio
import threading

import pytest
from support.cluster import LoopbackCluster, wait_until

from rocketmq_py import (
    AsyncLitePullConsumer,
    AsyncPushConsumer,
    ConsumeFromWhere,
    ClientStateError,
    LitePullConsumer,
    MessageExt,
    MessageQueue,
    RebalanceListener,
)

COUNT = 40
FIRST = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET


@pytest.fixture
async def cluster(tmp_path):
    async with LoopbackCluster(tmp_path) as running:
        yield running


def _tasks_now() -> set[asyncio.Task]:
    return {task for task in asyncio.all_tasks() if not task.done()}


def _client_side(task: asyncio.Task) -> bool:
    # The broker of the loopback cluster shares this loop; the workers of its request lanes stay for the
    # next request, as a thread of Java's executors does.
    return not task.get_name().startswith("lane-")


async def _nothing_left_from(before: set[asyncio.Task]) -> None:
    """Every task started since ``before`` has ended (server-side connection tasks may take a moment)."""
    current = asyncio.current_task()
    await wait_until(lambda: not {t for t in _tasks_now() - before if t is not current and _client_side(t)})


def _threads_named(prefix: str) -> int:
    return sum(1 for thread in threading.enumerate() if thread.name.startswith(prefix))


class Recorder(RebalanceListener):
    def __init__(self) -> None:
        self.assigned: set[MessageQueue] = set()
        self.revoked: set[MessageQueue] = set()

    async def on_queues_assigned(self, assigned: set[MessageQueue]) -> None:
        self.assigned |= assigned

    def on_queues_revoked(self, revoked: set[MessageQueue]) -> None:
        self.revoked |= revoked


async def test_async_for_over_the_async_lite_pull_consumer(cluster):
    ids = await cluster.produce("IterLite", COUNT)
    before = _tasks_now()
    recorder = Recorder()
    consumer = AsyncLitePullConsumer("iter_lite", namesrv_addr=cluster.namesrv_addr, consume_from_where=FIRST,
                                     rebalance_listener=recorder)
    consumer.subscribe("IterLite")
    await consumer.start()
    seen: list[str] = []
    async for message in consumer:
        seen.append(message.msg_id)
        if len(seen) == COUNT:
            break
    await consumer.shutdown()
    assert sorted(seen) == sorted(ids)
    assert cluster.committed("iter_lite", "IterLite") == cluster.max_offsets("IterLite")
    assert recorder.assigned == {MessageQueue("IterLite", "broker-api", q) for q in range(4)}
    await _nothing_left_from(before)


async def test_the_async_for_loop_ends_at_shutdown(cluster):
    await cluster.produce("IterEnd", 4)
    consumer = AsyncLitePullConsumer("iter_end", namesrv_addr=cluster.namesrv_addr, consume_from_where=FIRST)
    consumer.subscribe("IterEnd")
    await consumer.start()
    received: list[MessageExt] = []

    async def loop() -> None:
        async for message in consumer:
            received.append(message)

    task = asyncio.get_running_loop().create_task(loop())
    await wait_until(lambda: len(received) == 4)
    await consumer.shutdown()
    await asyncio.wait_for(task, 30)
    assert cluster.committed("iter_end", "IterEnd") == cluster.max_offsets("IterEnd")
    async for _ in consumer:
        raise AssertionError("a shut-down consumer yields nothing")


async def test_a_message_not_handed_out_is_not_committed(cluster):
    await cluster.produce("IterPart", 10)
    consumer = AsyncLitePullConsumer("iter_part", namesrv_addr=cluster.namesrv_addr, consume_from_where=FIRST,
                                     pull_batch_size=10)
    consumer.assign([MessageQueue("IterPart", "broker-api", q) for q in range(4)])
    await consumer.start()
    taken = 0
    async for _message in consumer:
        taken += 1
        if taken == 1:
            break
    await consumer.commit_sync()
    committed = sum(offset for offset in [await consumer.committed(q) for q in consumer.assignment()]
                    if offset > 0)
    await consumer.shutdown()
    assert committed == 1


async def test_for_over_the_blocking_lite_pull_consumer(cluster):
    ids = await cluster.produce("IterBlocking", COUNT)

    def consume() -> list[str]:
        seen: list[str] = []
        with LitePullConsumer("iter_blocking", namesrv_addr=cluster.namesrv_addr, consume_from_where=FIRST) as c:
            c.subscribe("IterBlocking")
            for message in c:
                seen.append(message.msg_id)
                if len(seen) == COUNT:
                    break
        return seen

    seen = await asyncio.to_thread(consume)
    assert sorted(seen) == sorted(ids)
    assert cluster.committed("iter_blocking", "IterBlocking") == cluster.max_offsets("IterBlocking")


async def test_the_blocking_for_loop_ends_when_another_thread_shuts_down(cluster):
    await cluster.produce("IterBlockingEnd", 3)
    consumer = LitePullConsumer("iter_blocking_end", namesrv_addr=cluster.namesrv_addr, consume_from_where=FIRST)
    await asyncio.to_thread(consumer.subscribe, "IterBlockingEnd")
    await asyncio.to_thread(consumer.start)
    received: list[MessageExt] = []
    thread = threading.Thread(target=lambda: received.extend(consumer), name="iter-test-loop")
    thread.start()
    await wait_until(lambda: len(received) == 3)
    await asyncio.to_thread(consumer.close)
    await asyncio.to_thread(thread.join, 30)
    assert not thread.is_alive()
    assert cluster.committed("iter_blocking_end", "IterBlockingEnd") == cluster.max_offsets("IterBlockingEnd")


async def test_async_for_over_the_push_consumer_messages(cluster):
    ids = await cluster.produce("IterPush", COUNT)
    before = _tasks_now()
    recorder = Recorder()
    consumer = AsyncPushConsumer("iter_push", namesrv_addr=cluster.namesrv_addr, consume_from_where=FIRST,
                                 consume_message_batch_max_size=4, rebalance_listener=recorder)
    consumer.subscribe("IterPush")
    batches = consumer.messages()
    await consumer.start()
    seen: list[str] = []
    async for batch in batches:
        assert 1 <= len(batch) <= 4
        seen.extend(message.msg_id for message in batch)
        if len(seen) >= COUNT:
            break
    # The last batch is settled when the loop asks for the next one: a second loop does, then ends at shutdown.
    rest = consumer.messages()

    async def drain() -> None:
        async for batch in rest:
            seen.extend(message.msg_id for message in batch)

    drainer = asyncio.get_running_loop().create_task(drain())
    await asyncio.sleep(0)
    await consumer.shutdown()
    await asyncio.wait_for(drainer, 30)
    assert sorted(set(seen)) == sorted(ids)
    # The batch left at break went back to the broker (the retry topic): every offset moved on.
    assert cluster.committed("iter_push", "IterPush") == cluster.max_offsets("IterPush")
    # The group's retry topic is subscribed too, as in Java.
    assert {q for q in recorder.assigned if q.topic == "IterPush"} == {
        MessageQueue("IterPush", "broker-api", q) for q in range(4)}
    await _nothing_left_from(before)


async def test_push_messages_every_message_once_and_all_committed(cluster):
    ids = await cluster.produce("IterPushAll", COUNT)
    consumer = AsyncPushConsumer("iter_push_all", namesrv_addr=cluster.namesrv_addr, consume_from_where=FIRST)
    consumer.subscribe("IterPushAll")
    batches = consumer.messages()
    seen: list[str] = []

    async def loop() -> None:
        async for batch in batches:
            seen.extend(message.msg_id for message in batch)

    async with consumer:
        task = asyncio.get_running_loop().create_task(loop())
        # Once the body has taken the last batch, the loop already asked for the next: all are settled.
        await wait_until(lambda: len(seen) >= COUNT)
    await asyncio.wait_for(task, 30)
    assert sorted(seen) == sorted(ids)
    assert cluster.committed("iter_push_all", "IterPushAll") == cluster.max_offsets("IterPushAll")


async def test_push_messages_refuses_a_consumer_with_a_listener_or_already_started():
    consumer = AsyncPushConsumer("iter_refuse", namesrv_addr="127.0.0.1:1")
    consumer.register_message_listener(lambda messages, context: None)
    with pytest.raises(ClientStateError, match="has a message listener"):
        consumer.messages()


async def test_the_rebalance_listener_hears_queues_revoked_when_a_second_consumer_joins(cluster):
    await cluster.produce("Rebalanced", 4)
    first, second = Recorder(), Recorder()
    one = AsyncLitePullConsumer("rebalanced", namesrv_addr=cluster.namesrv_addr, rebalance_listener=first,
                                instance_name="one")
    two = AsyncLitePullConsumer("rebalanced", namesrv_addr=cluster.namesrv_addr, rebalance_listener=second,
                                instance_name="two")
    one.subscribe("Rebalanced")
    two.subscribe("Rebalanced")
    await one.start()
    try:
        await wait_until(lambda: len(first.assigned) == 4)
        await two.start()
        try:
            await wait_until(lambda: len(first.revoked) == 2 and len(second.assigned) == 2)
            assert first.revoked == second.assigned
            assert one.assignment() | two.assignment() == first.assigned
        finally:
            await two.shutdown()
    finally:
        await one.shutdown()
