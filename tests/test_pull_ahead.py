"""A second pull in flight for a push consumer's queue with a backlog (rocketmq_py/client/consumer/pull_ahead.py).

The fake broker holds chosen pulls until the pull after them arrives, and serves that one first, as a Java
broker's pool of pull threads may. What must hold: every message reaches the listener once, in queue order for
an orderly listener; a pull ahead whose premise failed (the answer before it cut short) is discarded and the
consumer goes on from the real offset; the flow control counts the pulls in flight; and the committed offsets
the pulls carry never go backwards at the broker.
"""
from __future__ import annotations

import asyncio
import threading

import pytest

from rocketmq_py.client.consumer import AsyncPushConsumer, ConsumeConcurrentlyStatus, ConsumeOrderlyStatus
from rocketmq_py.common.codes import RequestCode

from support.consumer_broker import GROUP, FakeBroker, committed, until

BATCH = 4
BODIES = [b"m%d" % index for index in range(40)]
#: Generous: a loaded machine may be slow, and a consumer that does not pull ahead leaves a held pull for ever.
WAIT_S = 60.0


class ServeLaterFirst:
    """Holds the pull at each of ``offsets`` until the pull a batch after it arrives, then serves that one first
    and lets the held one go."""

    def __init__(self, offsets: set[int]) -> None:
        self.offsets = offsets
        self.held: dict[int, asyncio.Event] = {}
        self.served_out_of_order = 0

    async def __call__(self, key: tuple[str, int], offset: int) -> None:
        if key != ("T", 0):
            return
        earlier = self.held.pop(offset - BATCH, None)
        if earlier is not None:
            self.served_out_of_order += 1
            asyncio.get_running_loop().call_soon(earlier.set)
        if offset in self.offsets:
            self.offsets.discard(offset)
            event = self.held[offset] = asyncio.Event()
            await event.wait()


@pytest.fixture
async def broker():
    async with FakeBroker({"T": 1}) as fake:
        for body in BODIES:
            fake.put("T", 0, body)
        yield fake


def consumer_of(broker: FakeBroker, orderly: bool, got: list[bytes], **options) -> AsyncPushConsumer:
    consumer = AsyncPushConsumer(GROUP, namesrv_addr=broker.namesrv.address, pull_batch_size=BATCH,
                                 consume_from_where="CONSUME_FROM_FIRST_OFFSET", **options)
    consumer.subscribe("T", "*")
    success = ConsumeOrderlyStatus.SUCCESS if orderly else ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    def listener(messages, context):
        got.extend(m.body for m in messages)
        return success

    consumer.register_message_listener(listener, orderly=orderly)
    return consumer


def pulled_offsets(broker: FakeBroker) -> list[int]:
    return [int(r.ext_fields["queueOffset"]) for r in broker.of_code(RequestCode.PULL_MESSAGE)
            if r.ext_fields["topic"] == "T"]


def check_commits_never_went_back(broker: FakeBroker) -> None:
    offsets = [offset for topic, _, offset in broker.pull_commits if topic == "T"]
    assert offsets == sorted(offsets)


def check_consumed_once(got: list[bytes], orderly: bool) -> None:
    # A concurrent listener's threads may finish the messages of a batch in any order.
    assert (got if orderly else sorted(got, key=BODIES.index)) == BODIES


@pytest.mark.parametrize("orderly", [True, False], ids=["orderly", "concurrently"])
async def test_answers_served_out_of_order_reach_the_listener_in_queue_order(broker, orderly):
    gate = broker.pull_gate = ServeLaterFirst({12, 24})
    got: list[bytes] = []
    async with consumer_of(broker, orderly, got):
        await until(lambda: len(got) >= len(BODIES), WAIT_S)
    check_consumed_once(got, orderly)
    assert gate.served_out_of_order == 2
    assert committed(broker) == {0: len(BODIES)}
    check_commits_never_went_back(broker)


@pytest.mark.parametrize("orderly", [True, False], ids=["orderly", "concurrently"])
async def test_a_pull_ahead_after_an_answer_cut_short_is_discarded(broker, orderly):
    broker.pull_gate = ServeLaterFirst({12})
    broker.answer_limits[("T", 0, 12)] = 2  # as the broker's byte limit cuts a batch short
    got: list[bytes] = []
    async with consumer_of(broker, orderly, got):
        await until(lambda: len(got) >= len(BODIES), WAIT_S)
    check_consumed_once(got, orderly)
    offsets = pulled_offsets(broker)
    # the pull ahead for 16 went out with the pull for 12; its answer was dropped, and the consumer went on from 14
    assert offsets.index(16) < offsets.index(14)
    assert committed(broker) == {0: len(BODIES)}
    check_commits_never_went_back(broker)


async def test_the_flow_control_counts_the_pull_in_flight(broker):
    # 5 messages per queue: after the first batch (4 cached, held by a listener that waits) a pull may go, but no
    # pull ahead of it, which would bring the cache to 12 with the one in flight.
    release = threading.Event()
    got: list[bytes] = []
    consumer = AsyncPushConsumer(GROUP, namesrv_addr=broker.namesrv.address, pull_batch_size=BATCH,
                                 pull_threshold_for_queue=5, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe("T", "*")

    def listener(messages, context):
        release.wait()
        got.extend(m.body for m in messages)
        return ConsumeOrderlyStatus.SUCCESS

    consumer.register_message_listener(listener, orderly=True)
    try:
        async with consumer:
            await until(lambda: consumer.flow_control.cached_count >= 1, WAIT_S)
            assert pulled_offsets(broker) == [0, BATCH]
            release.set()
            await until(lambda: len(got) >= len(BODIES), WAIT_S)
    finally:
        release.set()
    assert got == BODIES


async def test_a_suspended_consumer_drops_the_answer_of_its_pull_ahead(broker):
    # suspend() while the pull for 12 is held and the pull ahead for 16 has arrived: the answer for 12 is cached,
    # the one for 16 dropped, and after resume() the consumer pulls 16 again.
    consumer: AsyncPushConsumer | None = None
    serve_later_first = ServeLaterFirst({12})

    async def gate(key: tuple[str, int], offset: int) -> None:
        if key == ("T", 0) and offset == 16 and 12 in serve_later_first.held:
            assert consumer is not None
            consumer.suspend()
        await serve_later_first(key, offset)

    broker.pull_gate = gate
    got: list[bytes] = []
    consumer = consumer_of(broker, True, got)
    async with consumer:
        await until(lambda: serve_later_first.served_out_of_order == 1 and len(got) >= 16, WAIT_S)
        assert pulled_offsets(broker).count(16) == 1
        consumer.resume()
        await until(lambda: len(got) >= len(BODIES), WAIT_S)
    assert got == BODIES
    assert pulled_offsets(broker).count(16) == 2
