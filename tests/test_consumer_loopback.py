"""The consumers against an in-process fake name server and broker on loopback: pulls and the client-side
tag filter, offsets committed at shutdown and on a dropped queue, send-back and its retry-topic fallback,
a raising listener, orderly locks, rebalance between two consumers, broadcasting's local file, graceful
shutdown, the lite pull consumer, and the broker's admin requests answered by the consumer."""
from __future__ import annotations

import asyncio
import threading
import time

import pytest

from rocketmq_py import codec
from rocketmq_py.client.consumer import (
    AsyncLitePullConsumer,
    AsyncPushConsumer,
    ConsumeConcurrentlyStatus,
    ConsumeOrderlyStatus,
)
from rocketmq_py.client.consumer import service
from rocketmq_py.client.consumer.offset_store import read_offset_file
from rocketmq_py.common import consumer_body
from rocketmq_py.common.codes import RequestCode
from rocketmq_py.common.headers.consumer import ResetOffsetRequestHeader
from rocketmq_py.common.heartbeat import HeartbeatData
from rocketmq_py.common.message_queue import MessageQueue
from rocketmq_py.remoting.command import create_request

from support.consumer_broker import BROKER, GROUP, HOLD_S, RETRY, FakeBroker, committed, push, until


@pytest.fixture
async def broker():
    async with FakeBroker({"T": 2}) as fake:
        yield fake


async def test_push_consumes_everything_and_commits_at_shutdown(broker):
    for i in range(10):
        broker.put("T", i % 2, f"m{i}".encode(), tags="TagA" if i % 3 else "TagB")
    got = []

    def listener(messages, context):
        got.extend(m.body.decode() for m in messages)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = AsyncPushConsumer(GROUP, namesrv_addr=broker.namesrv.address,
                                 consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe("T", "TagA")
    consumer.register_message_listener(listener)
    async with consumer:
        await until(lambda: len(got) == 6)
        await asyncio.sleep(HOLD_S * 2)
    assert sorted(got) == sorted(f"m{i}" for i in range(10) if i % 3), "the client filters by tag string"
    assert committed(broker) == {0: 5, 1: 5}, "past the filtered messages too"
    heartbeat = HeartbeatData.decode(broker.of_code(RequestCode.HEART_BEAT)[0].body)
    [data] = heartbeat.consumer_data
    assert {s["topic"] for s in data["subscriptionDataSet"]} == {"T", RETRY}
    assert data["consumeType"] == "CONSUME_PASSIVELY" and data["messageModel"] == "CLUSTERING"
    pull = broker.of_code(RequestCode.PULL_MESSAGE)[0].ext_fields
    assert pull["suspendTimeoutMillis"] == "15000" and int(pull["sysFlag"]) & 0x2
    assert broker.of_code(RequestCode.UNREGISTER_CLIENT)[-1].ext_fields["consumerGroup"] == GROUP


async def test_reconsume_later_and_a_raising_listener_send_messages_back(broker):
    broker.put("T", 0, b"later")
    broker.put("T", 1, b"raise")
    seen: list[tuple[str, int, str]] = []

    async def listener(messages, context):
        m = messages[0]
        seen.append((m.body.decode(), m.reconsume_times, m.topic))
        if m.reconsume_times >= 1:
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS
        if m.body == b"raise":
            raise ValueError("boom")
        return ConsumeConcurrentlyStatus.RECONSUME_LATER

    async with push(broker, listener, max_reconsume_times=5):
        await until(lambda: len(seen) == 4)
        await asyncio.sleep(HOLD_S)
    assert sorted(seen) == [("later", 0, "T"), ("later", 1, "T"), ("raise", 0, "T"), ("raise", 1, "T")]
    assert sorted(back["delayLevel"] for back in broker.send_backs) == ["0", "0"]
    assert {back["originTopic"] for back in broker.send_backs} == {"T"}
    assert {back["maxReconsumeTimes"] for back in broker.send_backs} == {"5"}
    assert committed(broker) == {0: 1, 1: 1}
    assert committed(broker, RETRY) == {0: 2}


async def test_send_back_failure_falls_back_to_the_retry_topic(broker):
    broker.refuse_send_back = True
    broker.put("T", 0, b"once")
    calls = []

    def listener(messages, context):
        calls.append(messages[0].msg_id)
        return ConsumeConcurrentlyStatus.RECONSUME_LATER

    async with push(broker, listener):
        await until(lambda: broker.sends)
    [send] = broker.sends
    properties = codec.string_to_properties(send.ext_fields["i"])
    assert send.ext_fields["b"] == RETRY
    assert properties["RETRY_TOPIC"] == "T" and properties["RECONSUME_TIME"] == "1"
    assert properties["MAX_RECONSUME_TIMES"] == "16" and properties["DELAY"] == "3"
    assert properties["ORIGIN_MESSAGE_ID"] == calls[0]


async def test_shutdown_lets_a_listener_in_progress_finish_and_commits_it(broker):
    broker.put("T", 0, b"slow")
    started, finished = asyncio.Event(), []

    async def listener(messages, context):
        started.set()
        await asyncio.sleep(0.5)
        finished.append(messages[0].body)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = push(broker, listener)
    await consumer.start()
    await asyncio.wait_for(started.wait(), 5)
    await consumer.shutdown()
    assert finished == [b"slow"]
    assert committed(broker)[0] == 1


async def test_orderly_locks_consumes_serially_and_unlocks(broker):
    for i in range(6):
        broker.put("T", 0, f"o{i}".encode())
    order, active = [], []

    def listener(messages, context):
        active.append(1)
        assert len(active) == 1, "one batch of a queue at a time"
        time.sleep(0.01)
        order.append(messages[0].body.decode())
        active.pop()
        if messages[0].body == b"o2" and messages[0].reconsume_times == 0:
            return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        return ConsumeOrderlyStatus.SUCCESS

    consumer = AsyncPushConsumer(GROUP, namesrv_addr=broker.namesrv.address, consume_thread_min=4,
                                 consume_from_where="CONSUME_FROM_FIRST_OFFSET", suspend_current_queue_time_millis=50)
    consumer.subscribe("T", "*")
    consumer.register_message_listener(listener, orderly=True)
    async with consumer:
        await until(lambda: len(order) == 7)
        assert set(broker.locks) >= {MessageQueue("T", BROKER, 0)}
    assert order == ["o0", "o1", "o2", "o2", "o3", "o4", "o5"]
    assert broker.of_code(RequestCode.LOCK_BATCH_MQ)
    assert not broker.locks, "released at shutdown"
    assert committed(broker)[0] == 6


@pytest.mark.parametrize("orderly", [False, True], ids=["concurrently", "orderly"])
async def test_consume_threads_finish_their_messages_without_waking_the_event_loop(broker, monkeypatch, orderly):
    """As Java's consume threads do, a consume thread handles its listener's result itself (offsets, statistics,
    the next batch of an orderly queue). Handing results back to the event loop, which also runs every pull, kept
    the loop waiting for the GIL behind the consume threads and set the consumer's speed (issue 33)."""
    count = 200
    for i in range(count):
        broker.put("T", i % 2, f"m{i}".encode())
    loop = asyncio.get_running_loop()
    calls_from_consume_threads = []
    call_soon_threadsafe = loop.call_soon_threadsafe

    def recording(callback, *args, **kwargs):
        if threading.current_thread().name.startswith("ConsumeMessageThread_"):
            calls_from_consume_threads.append(callback)
        return call_soon_threadsafe(callback, *args, **kwargs)

    monkeypatch.setattr(loop, "call_soon_threadsafe", recording)
    seen: list[tuple[int, int]] = []
    lock = threading.Lock()
    all_seen = threading.Event()
    status = ConsumeOrderlyStatus.SUCCESS if orderly else ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    def listener(messages, context):
        with lock:
            seen.extend((m.queue_id, m.queue_offset) for m in messages)
            if len(seen) == count:
                all_seen.set()
        return status

    consumer = AsyncPushConsumer(GROUP, namesrv_addr=broker.namesrv.address,
                                 consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe("T", "*")
    consumer.register_message_listener(listener, orderly=orderly)
    async with consumer:
        assert await asyncio.to_thread(all_seen.wait, 60), f"consumed {len(seen)} of {count}"
    assert calls_from_consume_threads == []
    assert sorted(seen) == [(q, o) for q in (0, 1) for o in range(count // 2)]
    if orderly:
        assert [o for q, o in seen if q == 0] == list(range(count // 2)), "a queue in order"
    assert committed(broker) == {0: count // 2, 1: count // 2}


async def test_rebalance_moves_queues_and_commits_before_dropping(broker):
    broker.topics["T"] = 4
    for q in range(4):
        broker.put("T", q, f"q{q}".encode())
    got_a, got_b = [], []

    def collect(into):
        def listener(messages, context):
            into.extend(m.queue_id for m in messages)
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS
        return listener

    first = push(broker, collect(got_a), instance_name="a")
    second = push(broker, collect(got_b), instance_name="b")
    async with first:
        await until(lambda: len(got_a) == 4)
        await first.persist_consumer_offset(force=True)  # as the 5 s timer does in steady state
        async with second:
            first.rebalance_soon()
            def owned(consumer):
                return {q for q in consumer.rebalance.process_queue_table if q.topic == "T"}

            await until(lambda: len(owned(first)) == 2 and len(owned(second)) == 2)
            mine = owned(first)
            for q in range(4):
                broker.put("T", q, f"after{q}".encode())
            await until(lambda: len(got_a) + len(got_b) == 8)
    assert committed(broker) == {0: 2, 1: 2, 2: 2, 3: 2}
    moved = {MessageQueue("T", BROKER, i) for i in range(4)} - mine
    assert sorted(got_b) == sorted(q.queue_id for q in moved), \
        "the second consumer started at the offsets the first committed: no duplicate"
    assert sorted(got_a) == sorted([0, 1, 2, 3] + [q.queue_id for q in mine])


async def test_broadcasting_keeps_offsets_in_the_local_file(broker, tmp_path, monkeypatch):
    monkeypatch.setenv("ROCKETMQ_CLIENT_LOCAL_OFFSET_STORE_DIR", str(tmp_path))
    broker.put("T", 0, b"b0")
    broker.put("T", 1, b"b1")
    got = []

    def listener(messages, context):
        got.extend(messages)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = push(broker, listener, message_model="BROADCASTING", instance_name="bc")
    async with consumer:
        await until(lambda: len(got) == 2)
        client_id = consumer.instance.client_id
    path = tmp_path / client_id / GROUP / "offsets.json"
    assert read_offset_file(path) == {MessageQueue("T", BROKER, 0): 1, MessageQueue("T", BROKER, 1): 1}
    assert not committed(broker), "nothing on the broker"
    heartbeat = HeartbeatData.decode(broker.of_code(RequestCode.HEART_BEAT)[0].body)
    assert {s["topic"] for s in heartbeat.consumer_data[0]["subscriptionDataSet"]} == {"T"}, "no retry topic"


async def test_admin_requests_reach_the_consumer(broker):
    for i in range(4):
        broker.put("T", 0, f"a{i}".encode())
    got = []

    def listener(messages, context):
        got.extend(m.body.decode() for m in messages)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = push(broker, listener)
    async with consumer:
        await until(lambda: len(got) == 4)
        ctx = broker.clients[GROUP][consumer.instance.client_id]
        header = {"consumerGroup": GROUP, "clientId": consumer.instance.client_id, "jstackEnable": "true"}
        info = await broker.server.invoke(
            ctx.connection, create_request(RequestCode.GET_CONSUMER_RUNNING_INFO, header), 3000)
        data = codec.json_loads(info.body)
        assert data["properties"]["PROP_CONSUME_TYPE"] == "CONSUME_PASSIVELY"
        assert data["properties"]["consumerGroup"] == GROUP and "MainThread" in data["jstack"]
        assert {s["topic"] for s in data["subscriptionSet"]} == {"T", RETRY}

        status = await broker.server.invoke(ctx.connection, create_request(
            RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, {"topic": "T", "group": GROUP}), 3000)
        table = consumer_body.decode_queue_table(codec.json_loads(status.body)["messageQueueTable"])
        assert table[MessageQueue("T", BROKER, 0)] == 4

        direct = await broker.server.invoke(ctx.connection, create_request(
            RequestCode.CONSUME_MESSAGE_DIRECTLY, {"consumerGroup": GROUP, "brokerName": BROKER},
            broker.queues[("T", 0)][1]), 3000)
        assert codec.json_loads(direct.body)["consumeResult"] == "CR_SUCCESS" and got.count("a1") == 2

        reset = ResetOffsetRequestHeader("T", GROUP, 0, True).to_ext_fields()
        body = consumer_body.codec.json_dumps({"offsetTable": consumer_body.encode_queue_table(
            {MessageQueue("T", BROKER, 0): 2, MessageQueue("T", BROKER, 1): 0})}).encode()
        await broker.server.invoke_oneway(ctx.connection, create_request(
            RequestCode.RESET_CONSUMER_CLIENT_OFFSET, reset, body), 3000)
        await until(lambda: got.count("a3") == 2 and got.count("a2") == 2)
        assert got.count("a0") == 1, "consumed again from offset 2 only"


async def test_lite_pull_assign_seek_and_commit(broker):
    for i in range(5):
        broker.put("T", 0, f"l{i}".encode())
    queue = MessageQueue("T", BROKER, 0)
    async with AsyncLitePullConsumer(GROUP, namesrv_addr=broker.namesrv.address, auto_commit=False,
                                     consume_from_where="CONSUME_FROM_FIRST_OFFSET") as consumer:
        consumer.assign([queue])
        first = []
        while len(first) < 5:
            first += await consumer.poll(1000)
        consumer.seek(queue, 3)
        again = []
        while len(again) < 2:
            again += await consumer.poll(1000)
        assert [m.body for m in again] == [b"l3", b"l4"]
        await consumer.commit_sync()
        assert await consumer.committed(queue) == 5
        assert await consumer.offset_for_timestamp(queue, 0) == 2, "the broker's answer"
        pull = broker.of_code(RequestCode.PULL_MESSAGE)[0].ext_fields
        assert int(pull["sysFlag"]) == 0x2 | 0x4 | 0x10 and pull["subscription"] == "*"
    assert committed(broker) == {0: 5}


@pytest.mark.parametrize("where, expected", [
    ("CONSUME_FROM_FIRST_OFFSET", ["w0", "w1", "w2", "w3", "new"]),
    ("CONSUME_FROM_LAST_OFFSET", ["new"]),
    ("CONSUME_FROM_TIMESTAMP", ["w2", "w3", "new"]),
])
async def test_where_a_new_group_starts(broker, where, expected):
    for i in range(4):
        broker.put("T", 0, f"w{i}".encode())
    got = []

    def listener(messages, context):
        got.extend(m.body.decode() for m in messages)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    async with push(broker, listener, consume_from_where=where, consume_timestamp="20240131235959"):
        await until(lambda: any(q.topic == "T" for q in consumer_queues(broker)))
        broker.put("T", 0, b"new")
        await until(lambda: "new" in got)
        await asyncio.sleep(HOLD_S)
    # Which messages, each once: a concurrent consumer hands its batches to listener threads side by side, so
    # their order is the threads' (it differed on 3.13), as with Java's ConsumeMessageConcurrentlyService.
    assert sorted(got) == sorted(expected)
    if where == "CONSUME_FROM_TIMESTAMP":
        [search] = [r for r in broker.of_code(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP) if r.ext_fields["queueId"] == "0"
                    and r.ext_fields["topic"] == "T"]
        assert int(search.ext_fields["timestamp"]) == int(time.mktime((2024, 1, 31, 23, 59, 59, 0, 0, -1)) * 1000)


def consumer_queues(broker: FakeBroker) -> list[MessageQueue]:
    """The queues some consumer pulled."""
    return [MessageQueue(r.ext_fields["topic"], BROKER, int(r.ext_fields["queueId"]))
            for r in broker.of_code(RequestCode.PULL_MESSAGE)]


def _after_hops(hops: int, action) -> None:
    """Run ``action`` ``hops`` passes of the event loop from now."""
    if hops == 0:
        action()
    else:
        asyncio.get_running_loop().call_soon(_after_hops, hops - 1, action)


@pytest.mark.parametrize("kind", ["orderly", "concurrently", "lite-pull"])
async def test_shutdown_ends_when_the_consumers_change_while_it_runs(broker, kind, caplog):
    """A consumer-ids-changed notice (it wakes the rebalance loop) that lands while shutdown stops the
    background tasks must not keep the rebalance loop alive: on Python < 3.12, ``asyncio.wait_for`` lost a
    cancellation that came just after the event it waited on was set, the loop went on and shutdown
    waited for it forever (seen as a hung orderly consumer shutdown in the Java compat run)."""
    broker.put("T", 0, b"x")
    for hops in range(8):
        if kind == "lite-pull":
            consumer = AsyncLitePullConsumer(GROUP, namesrv_addr=broker.namesrv.address, instance_name=f"h{hops}")
            consumer.subscribe("T", "*")
        else:
            consumer = AsyncPushConsumer(GROUP, namesrv_addr=broker.namesrv.address, instance_name=f"h{hops}")
            consumer.subscribe("T", "*")
            if kind == "orderly":
                consumer.register_message_listener(lambda m, c: ConsumeOrderlyStatus.SUCCESS, orderly=True)
            else:
                consumer.register_message_listener(lambda m, c: ConsumeConcurrentlyStatus.CONSUME_SUCCESS)
        await consumer.start()
        await until(lambda: any(q.topic == "T" for q in consumer.rebalance.process_queue_table))
        await asyncio.sleep(HOLD_S)
        stopping = asyncio.ensure_future(consumer.shutdown())
        _after_hops(hops, consumer.rebalance_soon)  # what NOTIFY_CONSUMER_IDS_CHANGED does
        done, _ = await asyncio.wait({stopping}, timeout=3)
        if not done:
            stuck = [task for task in asyncio.all_tasks() if task.get_name().startswith("rebalance")]
            described = [repr(task) for task in stuck]
            for task in stuck:
                task.cancel()
            stopping.cancel()
            await asyncio.gather(stopping, *stuck, return_exceptions=True)
            raise AssertionError(f"shutdown hung when the notice came {hops} loop passes after it began: {described}")
        await stopping
        assert not [task for task in asyncio.all_tasks() if task.get_name() == f"rebalance {GROUP}"]
    assert "did not stop" not in caplog.text


async def test_shutdown_goes_on_without_a_task_that_ignores_its_cancellation(broker, monkeypatch, caplog):
    """The safety net: a background task that does not end when cancelled (a bug) is named in a warning and
    left behind after STOP_TIMEOUT_S instead of hanging shutdown."""
    monkeypatch.setattr(service, "STOP_TIMEOUT_S", 0.2)
    released = asyncio.Event()

    async def stubborn() -> None:
        while not released.is_set():
            try:
                await released.wait()
            except asyncio.CancelledError:
                pass

    consumer = push(broker, lambda messages, context: ConsumeConcurrentlyStatus.CONSUME_SUCCESS)
    await consumer.start()
    rogue = asyncio.get_running_loop().create_task(stubborn(), name="stubborn")
    # Let it reach its loop: a task cancelled before its first step ends at once, which is not the bug meant
    # here (and on 3.12 shutdown can reach the cancel without a pass of the loop in between).
    await asyncio.sleep(0)
    consumer._background.append(rogue)
    await asyncio.wait_for(consumer.shutdown(), 5)
    assert "background task stubborn did not stop" in caplog.text and "stubborn (test_consumer_loopback.py" in caplog.text
    assert broker.of_code(RequestCode.UNREGISTER_CLIENT), "the rest of shutdown ran"
    released.set()
    await rogue
