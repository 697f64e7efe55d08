"""Issue 3, points 1 and 2: every send mode of the Python producer reaches the official Java consumer
with body, tags, keys, user properties and msgId as sent; compressed bodies (zlib, LZ4, zstd, above
and below the threshold) read back; a delay of level 2 arrives no sooner than 5 s after the send."""
from __future__ import annotations

import asyncio
import base64
import threading
import time

import pytest
from harness import run_peer, unique_name

from rocketmq_py.client.producer import AsyncProducer, Producer, SelectMessageQueueByHash, SendStatus
from rocketmq_py.common.message import Message

CONSUME_TIMEOUT_MS = 60000


def _consume(namesrv: str, topic: str, count: int, timeout_ms: int = CONSUME_TIMEOUT_MS) -> list[dict]:
    lines = run_peer("consume", namesrv=namesrv, topic=topic, group=unique_name("cg"), count=count,
                     timeout_ms=timeout_ms, timeout=timeout_ms / 1000 + 60)
    done = lines[-1]
    assert done.get("done") and not done["timedOut"], f"the Java consumer got {done.get('count')} of {count}"
    return lines[:-1]


def _message(topic: str, mode: str, i: int, size: int = 0) -> Message:
    body = (f"{mode}-{i}-" + "x" * size).encode()
    return Message(topic, body, tags=f"Tag{mode}", keys=[f"key-{mode}-{i}", f"k2-{i}"],
                   properties={"mode": mode, "index": str(i), "user.prop": "värde"})


def _assert_same(sent: Message, got: dict) -> None:
    assert base64.b64decode(got["bodyBase64"]) == sent.body
    assert got["tags"] == sent.tags
    assert got["keys"] == sent.keys
    assert got["msgId"] == sent.properties["UNIQ_KEY"]
    for name in ("mode", "index", "user.prop"):
        assert got["properties"][name] == sent.properties[name]


PER_MODE = 4
MODES = ("sync", "async", "oneway", "queue", "selector", "batch", "asyncio")


@pytest.fixture(scope="module")
def all_modes(java_namesrv, java_broker):
    """Send PER_MODE messages in every mode to one new topic (auto-created through TBW102), then let
    one Java consumer read them all."""
    topic = unique_name("ProducerModes")
    sent: dict[str, list[Message]] = {mode: [] for mode in MODES}
    results: dict[str, list] = {mode: [] for mode in MODES}
    with Producer(unique_name("pg"), namesrv_addr=java_namesrv.addr) as producer:
        for i in range(PER_MODE):
            message = _message(topic, "sync", i)
            results["sync"].append(producer.send(message))
            sent["sync"].append(message)

        callbacks = threading.Semaphore(0)
        futures = []
        for i in range(PER_MODE):
            message = _message(topic, "async", i)
            sent["async"].append(message)
            futures.append(producer.send_async(message, on_success=lambda r: (results["async"].append(r),
                                                                              callbacks.release())))
        for future in futures:
            assert future.result(10).send_status is SendStatus.SEND_OK
        for _ in range(PER_MODE):
            assert callbacks.acquire(timeout=10), "an on_success callback did not run"

        for i in range(PER_MODE):
            message = _message(topic, "oneway", i)
            producer.send_oneway(message)
            sent["oneway"].append(message)

        queues = producer.fetch_publish_message_queues(topic)
        target = queues[2]
        for i in range(PER_MODE):
            message = _message(topic, "queue", i)
            results["queue"].append(producer.send(message, target))
            sent["queue"].append(message)

        for i in range(PER_MODE):
            message = _message(topic, "selector", i)
            results["selector"].append(producer.send(message, selector=SelectMessageQueueByHash(), arg=f"order-{i}"))
            sent["selector"].append(message)

        batch = [_message(topic, "batch", i) for i in range(PER_MODE)]
        results["batch"].append(producer.send(batch))
        sent["batch"].extend(batch)

    async def asyncio_sends() -> None:
        async with AsyncProducer(unique_name("pg"), namesrv_addr=java_namesrv.addr) as producer:
            messages = [_message(topic, "asyncio", i) for i in range(PER_MODE)]
            tasks = [producer.send_async(m) for m in messages]
            results["asyncio"].extend(await asyncio.gather(*tasks))
            sent["asyncio"].extend(messages)

    asyncio.run(asyncio_sends())
    total = sum(len(v) for v in sent.values())
    received = _consume(java_namesrv.addr, topic, total)
    by_id = {line["msgId"]: line for line in received}
    return sent, results, by_id, queues


@pytest.mark.parametrize("mode", MODES)
def test_every_send_mode_reaches_the_java_consumer(all_modes, mode):
    sent, results, by_id, _ = all_modes
    assert len(sent[mode]) == PER_MODE
    for message in sent[mode]:
        got = by_id.get(message.properties["UNIQ_KEY"])
        assert got is not None, f"{mode} message {message.properties['index']} was not consumed"
        _assert_same(message, got)
    for result in results[mode]:
        assert result.send_status is SendStatus.SEND_OK


def test_send_results_match_what_the_broker_stored(all_modes):
    sent, results, by_id, queues = all_modes
    for message, result in zip(sent["sync"], results["sync"]):
        got = by_id[result.msg_id]
        assert result.msg_id == message.properties["UNIQ_KEY"]
        assert result.offset_msg_id == got["offsetMsgId"]
        assert (result.message_queue.queue_id, result.queue_offset) == (got["queueId"], got["queueOffset"])
    for message in sent["queue"]:
        assert by_id[message.properties["UNIQ_KEY"]]["queueId"] == queues[2].queue_id
    [batch_result] = results["batch"]
    assert batch_result.msg_id == ",".join(m.properties["UNIQ_KEY"] for m in sent["batch"])


def test_selector_hashes_the_key_like_java(all_modes):
    sent, results, by_id, queues = all_modes
    for i, message in enumerate(sent["selector"]):
        key = f"order-{i}"
        java_hash = 0
        for ch in key:
            java_hash = (31 * java_hash + ord(ch)) & 0xFFFFFFFF
        if java_hash & 0x80000000:
            java_hash -= 1 << 32
        expected = queues[abs(java_hash) % len(queues)]
        assert by_id[message.properties["UNIQ_KEY"]]["queueId"] == expected.queue_id


COMPRESSIONS = ("ZLIB", "LZ4", "ZSTD")


def test_compressed_bodies_read_back_by_java(java_namesrv, java_broker):
    topic = unique_name("ProducerCompress")
    sent = []
    for kind in COMPRESSIONS:
        with Producer(unique_name("pg"), namesrv_addr=java_namesrv.addr, compress_type=kind) as producer:
            for size in (100, 4096, 20000):  # below, at and above compress_msg_body_over_howmuch
                body = (f"{kind}-{size}-" * (size // 8 + 1)).encode()[:size]
                message = Message(topic, body, tags=kind, keys=f"{kind}-{size}", properties={"size": str(size)})
                producer.send(message)
                sent.append((kind, size, message))
    by_id = {line["msgId"]: line for line in _consume(java_namesrv.addr, topic, len(sent))}
    for kind, size, message in sent:
        got = by_id[message.properties["UNIQ_KEY"]]
        assert base64.b64decode(got["bodyBase64"]) == message.body, (kind, size)
        flag = got["sysFlag"]
        if size >= 4096:
            code = {"LZ4": 1, "ZSTD": 2, "ZLIB": 3}[kind]
            assert flag & 0x1 and (flag & 0x700) >> 8 == code, (kind, size, flag)
        else:
            assert not flag & 0x1, (kind, size, flag)


def test_delay_level_2_arrives_no_sooner_than_5_s(java_namesrv, java_broker):
    topic = unique_name("ProducerDelay")
    with Producer(unique_name("pg"), namesrv_addr=java_namesrv.addr) as producer:
        producer.send(Message(topic, b"warm-up"))  # creates the topic, so the consumer below can start at once
        consumed: list[dict] = []
        consumer = threading.Thread(target=lambda: consumed.extend(_consume(java_namesrv.addr, topic, 3)))
        consumer.start()
        time.sleep(3)
        message = Message(topic, b"delayed", tags="Delay", keys="delayed-1", properties={"d": "2"})
        message.delay_time_level = 2
        sent_at_ms = time.time() * 1000
        producer.send(message)
        producer.send(Message(topic, b"immediate"))
        consumer.join(120)
    by_body = {base64.b64decode(line["bodyBase64"]): line for line in consumed}
    delayed = by_body[b"delayed"]
    consumed_at_ms = int(delayed["properties"]["CONSUME_START_TIME"])
    assert consumed_at_ms - sent_at_ms >= 5000, consumed_at_ms - sent_at_ms
    assert delayed["msgId"] == message.properties["UNIQ_KEY"]
    assert delayed["properties"]["d"] == "2" and delayed["tags"] == "Delay"
    assert int(by_body[b"immediate"]["properties"]["CONSUME_START_TIME"]) < consumed_at_ms
