"""Issue 4, point 1: the official Java producer sends messages of every kind (tags, keys, properties,
compressed, batch, ordered, delayed, transactional); the Python push consumer receives exactly that set,
with bodies and properties identical to what the official Java consumer receives. The blocking consumer
(listener on threads) and the asyncio consumer (async listener) both."""
from __future__ import annotations

import asyncio
import base64
import threading
import time

import pytest
from harness import mqadmin, run_peer, unique_name

from rocketmq_py.client.consumer import (
    AsyncPushConsumer,
    ConsumeConcurrentlyStatus,
    PushConsumer,
)

PER_KIND = 3
KINDS = ("tags", "keys", "props", "compressed", "batch", "ordered", "delayed", "transaction")
#: Properties each client adds after decoding (not part of the stored message).
CLIENT_ADDED = {"MIN_OFFSET", "MAX_OFFSET", "CONSUME_START_TIME"}


@pytest.fixture(scope="module")
def kinds_topic(java_namesrv, java_broker):
    """Every kind from the Java producer, and what the official Java consumer received: (topic, sent, java)."""
    topic = unique_name("Kinds")
    mqadmin("updateTopic", "-b", java_broker.addr, "-t", topic, "-r", "4", "-w", "4", namesrv=java_namesrv.addr)
    sent = run_peer("produce-kinds", namesrv=java_namesrv.addr, topic=topic, per_kind=PER_KIND, timeout=180)
    assert sorted({line["kind"] for line in sent}) == sorted(KINDS)
    lines = run_peer("consume", namesrv=java_namesrv.addr, topic=topic, group=unique_name("javacg"), count=len(sent),
                     timeout_ms=60000, timeout=120)
    assert not lines[-1]["timedOut"], lines[-1]
    java = {line["msgId"]: line for line in lines[:-1]}
    assert set(java) == {line["msgId"] for line in sent}
    return topic, sent, java


def _stored_view(message) -> dict:
    properties = {k: v for k, v in message.properties.items() if k not in CLIENT_ADDED}
    return {
        "topic": message.topic, "bodyBase64": base64.b64encode(message.body).decode(), "properties": properties,
        "tags": message.tags, "keys": message.keys, "queueId": message.queue_id,
        "queueOffset": message.queue_offset, "reconsumeTimes": message.reconsume_times,
        "bornTimestamp": message.born_timestamp, "storeTimestamp": message.store_timestamp,
        "sysFlag": message.sys_flag, "flag": message.flag, "bornHost": message.born_host,
        "storeHost": message.store_host, "offsetMsgId": message.offset_msg_id,
    }


def _java_view(line: dict) -> dict:
    view = {k: line[k] for k in ("topic", "bodyBase64", "tags", "keys", "queueId", "queueOffset", "reconsumeTimes",
                                 "bornTimestamp", "storeTimestamp", "sysFlag", "flag", "bornHost", "storeHost",
                                 "offsetMsgId")}
    view["properties"] = {k: v for k, v in line["properties"].items() if k not in CLIENT_ADDED}
    return view


def _check_same_set(received: list, sent: list, java: dict) -> None:
    ids = [m.msg_id for m in received]
    assert len(ids) == len(set(ids)), "a message was delivered twice"
    assert set(ids) == {line["msgId"] for line in sent}
    for message in received:
        assert _stored_view(message) == _java_view(java[message.msg_id]), message.msg_id
    by_kind = {line["msgId"]: line["kind"] for line in sent}
    compressed = [m for m in received if by_kind[m.msg_id] == "compressed"]
    assert all(m.sys_flag & 0x1 and len(m.body) >= 6000 for m in compressed)
    transactional = [m for m in received if by_kind[m.msg_id] == "transaction"]
    assert all(m.properties.get("TRAN_MSG") == "true" and m.transaction_id == m.msg_id for m in transactional)


def test_blocking_push_consumer_receives_every_kind_as_java_does(java_namesrv, kinds_topic):
    topic, sent, java = kinds_topic
    received: list = []
    lock = threading.Lock()
    threads: set[str] = set()
    all_in = threading.Event()

    def listener(messages, context):
        with lock:
            received.extend(messages)
            threads.add(threading.current_thread().name)
            if len(received) >= len(sent):
                all_in.set()
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = PushConsumer(unique_name("cg"), namesrv_addr=java_namesrv.addr, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener)
    with consumer:
        assert all_in.wait(60), f"got {len(received)} of {len(sent)}"
        time.sleep(1.0)  # nothing more may come
    _check_same_set(received, sent, java)
    assert all(name.startswith("ConsumeMessageThread_") for name in threads)


def test_asyncio_push_consumer_with_an_async_listener(java_namesrv, kinds_topic):
    topic, sent, java = kinds_topic

    async def consume() -> list:
        received: list = []
        done = asyncio.Event()

        async def listener(messages, context):
            await asyncio.sleep(0)
            received.extend(messages)
            if len(received) >= len(sent):
                done.set()
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        consumer = AsyncPushConsumer(unique_name("cg"), namesrv_addr=java_namesrv.addr,
                                     consume_from_where="CONSUME_FROM_FIRST_OFFSET", consume_message_batch_max_size=4)
        consumer.subscribe(topic)
        consumer.register_message_listener(listener)
        async with consumer:
            await asyncio.wait_for(done.wait(), 60)
            await asyncio.sleep(1.0)
        return received

    _check_same_set(asyncio.run(consume()), sent, java)
