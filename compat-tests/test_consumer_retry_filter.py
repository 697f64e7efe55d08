"""Issue 4, points 5 and 7. Retry and DLQ: RECONSUME_LATER (or a listener that raises) brings a message
back from ``%RETRY%group`` with its reconsume count raised and its original topic; after
``max_reconsume_times`` it is in ``%DLQ%group``, as Java's ``mqadmin printMsg`` shows (a broker with 1 s
delay levels keeps this fast). Filters: a tag expression and a SQL92 selector each deliver exactly the
matching messages of the official Java producer."""
from __future__ import annotations

import threading
import time
from collections import defaultdict

import pytest
from harness import mqadmin, run_peer, unique_name

from rocketmq_py.client.consumer import ConsumeConcurrentlyStatus, MessageSelector, PushConsumer
from rocketmq_py.errors import InvalidSelectorError

FAST_DELAYS = " ".join(["1s"] * 18)


def test_reconsume_later_retries_then_dead_letters(java_namesrv, start_broker):
    broker = start_broker(messageDelayLevel=FAST_DELAYS)
    topic, group = unique_name("Retry"), unique_name("cg")
    namesrv = java_namesrv.addr
    mqadmin("updateTopic", "-b", broker.addr, "-t", topic, "-r", "2", "-w", "2", namesrv=namesrv)
    sent = run_peer("produce", namesrv=namesrv, topic=topic, count=4, body="retry-{i}", keys="rk-{i}")
    ids = {line["msgId"] for line in sent}
    max_times = 2
    deliveries: dict[str, list[tuple[int, str, str | None]]] = defaultdict(list)
    lock = threading.Lock()

    def listener(messages, context):
        with lock:
            for m in messages:
                deliveries[m.msg_id].append((m.reconsume_times, m.topic, m.properties.get("RETRY_TOPIC")))
        if messages[0].body.endswith((b"0", b"2")):
            raise RuntimeError("a listener that raises counts as RECONSUME_LATER")
        return ConsumeConcurrentlyStatus.RECONSUME_LATER

    consumer = PushConsumer(group, namesrv_addr=namesrv, consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                            max_reconsume_times=max_times)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener)
    with consumer:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with lock:
                if len(deliveries) == 4 and all(len(d) > max_times for d in deliveries.values()):
                    break
            time.sleep(0.2)
        time.sleep(3.0)  # no further delivery may come
    assert set(deliveries) == ids
    for msg_id, seen in deliveries.items():
        assert [times for times, _, _ in seen] == list(range(max_times + 1)), (msg_id, seen)
        assert all(shown == topic for _, shown, _ in seen), "the listener sees the original topic"
        assert all(original == topic for times, _, original in seen if times > 0)

    dead = mqadmin("printMsg", "-t", f"%DLQ%{group}", namesrv=namesrv)
    for msg_id in ids:
        assert f"MSGID: {msg_id}" in dead, f"{msg_id} is not in the dead-letter queue:\n{dead}"
    assert dead.count("MSGID: ") == len(ids)
    assert f"reconsumeTimes={max_times + 1}" in dead or f"reconsumeTimes={max_times}" in dead


@pytest.fixture(scope="module")
def filter_topic(java_namesrv, java_broker):
    topic = unique_name("Filter")
    mqadmin("updateTopic", "-b", java_broker.addr, "-t", topic, "-r", "4", "-w", "4", namesrv=java_namesrv.addr)
    for tag, color in (("TagA", "red"), ("TagB", "blue"), ("TagC", "green")):
        run_peer("produce", namesrv=java_namesrv.addr, topic=topic, count=5, tags=tag, prop=[f"color={color}"],
                 body=f"{tag}-{{i}}")
    return topic


def _consume_matching(namesrv: str, topic: str, selector, expected: int) -> list:
    received: list = []
    lock = threading.Lock()

    def listener(messages, context):
        with lock:
            received.extend(messages)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = PushConsumer(unique_name("cg"), namesrv_addr=namesrv, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe(topic, selector)
    consumer.register_message_listener(listener)
    with consumer:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(received) < expected:
            time.sleep(0.2)
        time.sleep(2.0)  # nothing that does not match may follow
    return received


def test_tag_filter_delivers_exactly_the_matching_tags(java_namesrv, filter_topic):
    got = _consume_matching(java_namesrv.addr, filter_topic, "TagB || TagC", 10)
    assert sorted(m.body.decode() for m in got) == sorted([f"TagB-{i}" for i in range(5)]
                                                          + [f"TagC-{i}" for i in range(5)])


def test_sql92_filter_delivers_exactly_the_matching_messages(java_namesrv, filter_topic):
    selector = MessageSelector.by_sql("color IN ('red', 'green') AND TAGS IS NOT NULL")
    got = _consume_matching(java_namesrv.addr, filter_topic, selector, 10)
    assert sorted(m.body.decode() for m in got) == sorted([f"TagA-{i}" for i in range(5)]
                                                          + [f"TagC-{i}" for i in range(5)])


def test_a_bad_selector_fails_at_subscribe(java_namesrv):
    consumer = PushConsumer(unique_name("cg"), namesrv_addr=java_namesrv.addr)
    with pytest.raises(InvalidSelectorError):
        consumer.subscribe("AnyTopic", MessageSelector.by_sql("color IN ('red'"))
    with pytest.raises(InvalidSelectorError):
        consumer.subscribe("AnyTopic", " || ")
