"""Our broker's retry, dead-letter and filter paths with real clients: a consumer that answers RECONSUME_LATER
gets each message back through ``%RETRY%group`` (CONSUMER_SEND_MSG_BACK and the delay levels) until it
lands in ``%DLQ%group``, which mqadmin printMsg reads; the official Java push consumer's tag and SQL92
subscriptions get exactly the matching messages of the official Java producer."""
from __future__ import annotations

import base64
import threading
import time
from collections import defaultdict

import pytest
from harness import mqadmin, run_peer, unique_name
from harness.py_servers import PythonBroker

from rocketmq_py.client.consumer import ConsumeConcurrentlyStatus, PushConsumer

FAST_DELAYS = " ".join(["1s"] * 18)


@pytest.fixture(scope="module")
def fast_broker(py_namesrv, tmp_path_factory):
    broker = PythonBroker(py_namesrv.addr, tmp_path_factory.mktemp("py-broker-fast"),
                          messageDelayLevel=FAST_DELAYS).start()
    yield broker
    assert broker.stop() == 0


def test_reconsume_later_goes_through_retry_to_the_dlq(py_namesrv, fast_broker):
    topic, group = unique_name("PyRetry"), unique_name("PyRetryGroup")
    mqadmin("updateTopic", "-b", fast_broker.addr, "-t", topic, "-r", "2", "-w", "2", namesrv=py_namesrv.addr)
    sent = run_peer("produce", namesrv=py_namesrv.addr, topic=topic, count=4, body="retry-{i}")
    ids = {line["msgId"] for line in sent}
    max_times = 2
    deliveries: dict[str, list[tuple[int, str | None]]] = defaultdict(list)
    lock = threading.Lock()

    def listener(messages, context):
        with lock:
            for message in messages:
                deliveries[message.msg_id].append((message.reconsume_times, message.properties.get("RETRY_TOPIC")))
        return ConsumeConcurrentlyStatus.RECONSUME_LATER

    consumer = PushConsumer(group, namesrv_addr=py_namesrv.addr, consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                            max_reconsume_times=max_times)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener)
    with consumer:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with lock:
                if len(deliveries) == 4 and all(len(seen) > max_times for seen in deliveries.values()):
                    break
            time.sleep(0.2)
        time.sleep(2.0)
    assert set(deliveries) == ids
    for msg_id, seen in deliveries.items():
        assert [times for times, _ in seen] == list(range(max_times + 1)), (msg_id, seen)
        assert all(original == topic for times, original in seen if times > 0)
    dead = mqadmin("printMsg", "-t", f"%DLQ%{group}", namesrv=py_namesrv.addr)
    assert dead.count("MSGID: ") == len(ids) and all(f"MSGID: {msg_id}" in dead for msg_id in ids), dead


@pytest.fixture(scope="module")
def filter_topic(py_namesrv, fast_broker):
    topic = unique_name("PyFilter")
    mqadmin("updateTopic", "-b", fast_broker.addr, "-t", topic, "-r", "4", "-w", "4", namesrv=py_namesrv.addr)
    for tag, color, price in (("TagA", "red", 5), ("TagB", "blue", 50), ("TagC", "green", 500)):
        run_peer("produce", namesrv=py_namesrv.addr, topic=topic, count=5, tags=tag,
                 prop=[f"color={color}", f"price={price}"], body=f"{tag}-{{i}}")
    return topic


def _bodies(lines: list[dict]) -> set[str]:
    return {base64.b64decode(line["bodyBase64"]).decode() for line in lines if "bodyBase64" in line}


def test_java_tag_subscription_gets_exactly_its_tags(py_namesrv, filter_topic):
    *received, done = run_peer("consume", namesrv=py_namesrv.addr, topic=filter_topic, group=unique_name("TagGroup"),
                               sub="TagA || TagC", count=11, timeout_ms=8000)
    assert done["count"] == 10 and done["timedOut"], "ten match, and nothing else arrives"
    assert _bodies(received) == {f"{tag}-{i}" for tag in ("TagA", "TagC") for i in range(5)}


def test_java_sql92_subscription_gets_exactly_the_matching_messages(py_namesrv, filter_topic):
    *received, done = run_peer("consume", namesrv=py_namesrv.addr, topic=filter_topic, group=unique_name("SqlGroup"),
                               sql="price > 10 AND color <> 'green'", count=6, timeout_ms=8000)
    assert done["count"] == 5 and done["timedOut"]
    assert _bodies(received) == {f"TagB-{i}" for i in range(5)}
