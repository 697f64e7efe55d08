"""The blocking producer's sync send from the calling thread (client/producer/direct.py), against the fake
cluster on loopback: it sends what the loop's send sends and behaves the same on refusals, retries and
timeouts, on connections of its own, one per thread; what must stay on the loop stays there.

The fake cluster runs on the test's event loop, so the blocking calls run in one other thread, the caller.
"""
from __future__ import annotations

import asyncio
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from support.fake_cluster import FakeCluster

from rocketmq_py import codec
from rocketmq_py.client.producer import Producer, SendStatus
from rocketmq_py.common.codes import RequestCode, ResponseCode
from rocketmq_py.common.message import Message
from rocketmq_py.common.message_queue import MessageQueue
from rocketmq_py.errors import MessageIllegalError, RemotingTimeoutError, SendFailedError, SendTimeoutError

BOTH_PATHS = pytest.mark.parametrize("direct", [True, False], ids=["calling-thread", "loop"])

#: The thread the tests' blocking calls run in (one thread, so that it is always the same thread's connections).
_CALLER = ThreadPoolExecutor(1, thread_name_prefix="caller")


async def _blocking(function: Any, *args: Any, **kwargs: Any) -> Any:
    return await asyncio.get_running_loop().run_in_executor(_CALLER, lambda: function(*args, **kwargs))


@pytest.fixture
async def cluster():
    async with FakeCluster() as fake:
        fake.known_topics.add("T")
        yield fake


async def _started(cluster: FakeCluster, **options: Any) -> Producer:
    producer = Producer("test_pg", namesrv_addr=cluster.namesrv.address,
                        instance_name=f"direct-{uuid.uuid4().hex[:8]}", **options)
    await _blocking(producer.start)
    return producer


async def _send(producer: Producer, *args: Any, **kwargs: Any) -> Any:
    return await _blocking(producer.send, *args, **kwargs)


def _send_connections(cluster: FakeCluster) -> list[Any]:
    """The server-side connection of every send, in arrival order."""
    by_request = {id(r): c for b in cluster.brokers for r, c in zip(b.requests, b.connections)}
    return [by_request[id(request)] for _, request in cluster.sends()]


def _comparable(request: Any) -> tuple:
    """A send request without what differs between two sends of the same message (time, message id)."""
    fields = dict(request.ext_fields)
    fields.pop("g")
    properties = codec.string_to_properties(fields.pop("i"))
    properties.pop("UNIQ_KEY", None)
    return (request.code, request.language, request.version, request.serialize_type, request.body,
            sorted(fields.items()), sorted(properties.items()))


@BOTH_PATHS
async def test_send_requests_and_results_are_the_loops(cluster, direct):
    producer = await _started(cluster, send_in_calling_thread=direct)
    try:
        results = [await _send(producer, Message("T", f"m{i}".encode(), tags="A", keys=["k"])) for i in range(6)]
        results.append(await _send(producer, [Message("T", b"b1"), Message("T", b"b2")]))
        results.append(await _send(producer, Message("T", b"q"), MessageQueue("T", "broker-b", 3)))
        results.append(await _send(producer, Message("T", b"s"), selector=lambda queues, message, arg: queues[arg],
                                   arg=5))
    finally:
        await _blocking(producer.shutdown)
    requests = [request for _, request in cluster.sends()]
    assert [r.code for r in requests] == [RequestCode.SEND_MESSAGE_V2] * 6 + [RequestCode.SEND_BATCH_MESSAGE] + \
        [RequestCode.SEND_MESSAGE_V2] * 2
    assert {r.send_status for r in results} == {SendStatus.SEND_OK}
    # round robin, then the batch, the given queue and the selected one, as the loop's send does
    assert [(r.message_queue.broker_name, r.message_queue.queue_id) for r in results[-2:]] == \
        [("broker-b", 3), (cluster.route(4).queue_datas[1].broker_name, 1)]
    assert [int(r.ext_fields["e"]) for r in requests[-2:]] == [3, 1]
    assert len({(r.message_queue.broker_name, r.message_queue.queue_id) for r in results[:6]}) == 6
    connections = _send_connections(cluster)
    if direct:
        # the first send learns the route on the loop; the others leave from the caller's own connections
        assert all(c is not connections[0] for c in connections[1:])
        assert len({id(c) for c in connections[1:]}) == 2
    else:
        assert len({id(c) for c in connections}) == 2  # the loop's one connection per broker


async def test_both_paths_send_the_same_bytes(cluster):
    sent: dict[bool, list[tuple]] = {}
    for direct in (False, True):
        before = len(cluster.sends())
        producer = await _started(cluster, send_in_calling_thread=direct)
        queue = MessageQueue("T", "broker-a", 2)  # the round robin starts at a random queue
        try:
            for i in range(4):
                await _send(producer, Message("T", f"same-{i}".encode() * 3000, tags="Z",
                                              properties={"p": str(i)}), queue)  # compressed bodies too
            fixed_ids = [{"UNIQ_KEY": f"7F00000100002A9F0000000000000{n}"} for n in (1, 2)]  # inside the batch body
            await _send(producer, [Message("T", b"x", properties=fixed_ids[0]),
                                   Message("T", b"y", properties=fixed_ids[1])], queue)
        finally:
            await _blocking(producer.shutdown)
        sent[direct] = [_comparable(r) for _, r in cluster.sends()[before:]]
    assert sent[True] == sent[False]
    assert sent[True][0][4] != b"same-0" * 3000, "the body above 4 KiB is compressed on both paths"


@BOTH_PATHS
async def test_retriable_refusals_move_to_another_broker(cluster, direct):
    producer = await _started(cluster, send_in_calling_thread=direct)
    try:
        await _send(producer, Message("T", b"warm"))
        cluster.answer_next_sends([ResponseCode.SERVICE_NOT_AVAILABLE])
        before = len(cluster.sends())
        result = await _send(producer, Message("T", b"x"))
    finally:
        await _blocking(producer.shutdown)
    brokers = [name for name, _ in cluster.sends()[before:]]
    assert len(brokers) == 3 and brokers[0] != brokers[1] != brokers[2]
    assert result.send_status is SendStatus.SEND_OK


@BOTH_PATHS
async def test_refusals_that_are_not_retried_and_all_failing(cluster, direct):
    producer = await _started(cluster, send_in_calling_thread=direct)
    try:
        await _send(producer, Message("T", b"warm"))
        cluster.answer_next_sends([ResponseCode.MESSAGE_ILLEGAL])
        before = len(cluster.sends())
        with pytest.raises(MessageIllegalError):
            await _send(producer, Message("T", b"x"))
        assert len(cluster.sends()) - before == 1
        cluster.answer_next_sends([ResponseCode.SYSTEM_ERROR] * 3)
        with pytest.raises(SendFailedError) as failure:
            await _send(producer, Message("T", b"y"))
    finally:
        await _blocking(producer.shutdown)
    assert failure.value.code == ResponseCode.SYSTEM_ERROR
    assert "send [3] times" in str(failure.value)


async def test_a_late_response_is_dropped_and_the_connection_kept(cluster):
    producer = await _started(cluster)
    slow = cluster.brokers[0]
    queue = MessageQueue("T", slow.name, 0)
    try:
        await _send(producer, Message("T", b"warm"), queue)
        cluster.delay_sends(0.5)
        with pytest.raises(RemotingTimeoutError):
            await _send(producer, Message("T", b"late"), queue, timeout_ms=100)
        # the default path gives up once its whole timeout is used, as Java's sync send does
        with pytest.raises(SendTimeoutError):
            await _send(producer, Message("T", b"late too"), timeout_ms=100)
        cluster.delay_sends(0.0)
        await asyncio.sleep(0.6)  # both late responses are on their way back, or have arrived
        result = await _send(producer, Message("T", b"on time"), queue)
    finally:
        await _blocking(producer.shutdown)
    assert result.queue_offset == slow.offset, "the result is the last request's, not a late one's"
    connection_of = {r.body: c for r, c in zip(slow.requests, slow.connections)}
    late, on_time = connection_of[b"late"], connection_of[b"on time"]
    assert on_time is late, "a timed-out request does not cost the connection"


async def test_a_connection_the_broker_closed_is_replaced(cluster):
    producer = await _started(cluster)
    broker = cluster.brokers[0]
    queue = MessageQueue("T", broker.name, 1)
    try:
        await _send(producer, Message("T", b"warm"), queue)
        await _send(producer, Message("T", b"direct"), queue)
        direct = broker.connections[-1]
        direct.close()
        await direct.wait_closed(5)
        result = await _send(producer, Message("T", b"after"), queue)
    finally:
        await _blocking(producer.shutdown)
    assert result.send_status is SendStatus.SEND_OK
    assert broker.connections[-1] is not direct


async def test_threads_send_at_once_on_connections_of_their_own(cluster):
    producer = await _started(cluster)
    await _send(producer, Message("T", b"warm"))
    before = len(cluster.sends())
    threads: dict[str, int] = {}

    def work(n: int) -> list[Any]:
        threads[threading.current_thread().name] = n
        return [producer.send(Message("T", f"{n}-{i}".encode())) for i in range(25)]

    try:
        with ThreadPoolExecutor(6) as pool:
            results = [r for batch in await asyncio.gather(
                *(asyncio.wrap_future(pool.submit(work, n)) for n in range(6))) for r in batch]
    finally:
        await _blocking(producer.shutdown)
    assert len(threads) == 6 and {r.send_status for r in results} == {SendStatus.SEND_OK}
    assert len({r.msg_id for r in results}) == 150
    bodies = sorted(request.body for _, request in cluster.sends()[before:])
    assert bodies == sorted(f"{n}-{i}".encode() for n in range(6) for i in range(25))
    connections = {id(c) for c in _send_connections(cluster)[before:]}
    assert 6 < len(connections) <= 12, "each thread has its own connection to each broker"


async def test_send_hooks_keep_the_send_on_the_loop(cluster):
    producer = await _started(cluster)
    hook_threads: list[str] = []
    producer.core.send_hooks.append(lambda *args: hook_threads.append(threading.current_thread().name))
    try:
        queue = MessageQueue("T", "broker-a", 0)
        await _send(producer, Message("T", b"first"), queue)
        await _send(producer, Message("T", b"second"), queue)
    finally:
        await _blocking(producer.shutdown)
    assert len(hook_threads) == 2 and set(hook_threads) == {"rocketmq-py-client"}
    first, second = _send_connections(cluster)
    assert first is second  # both on the loop's connection (the second would be the caller's own)


async def test_shutdown_ends_every_threads_connections(cluster):
    producer = await _started(cluster)
    await _send(producer, Message("T", b"warm"))
    with ThreadPoolExecutor(3) as pool:
        await asyncio.gather(*(asyncio.wrap_future(pool.submit(producer.send, Message("T", b"x"))) for _ in range(6)))
    direct = [c for c in _send_connections(cluster)[1:]]
    assert direct and all(c.is_open for c in direct)
    await _blocking(producer.shutdown)
    closed = await asyncio.gather(*(c.wait_closed(5) for c in direct))
    assert all(closed)
