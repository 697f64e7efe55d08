"""Issue 4, point 6: offsets are shared with Java. After the Python consumer finishes, Java's
``mqadmin consumerProgress`` shows a diff of 0; a Java consumer joining the same group later starts where
Python stopped, and a Python consumer starts where Java stopped. The broadcasting offsets file is Java's
layout both ways."""
from __future__ import annotations

import base64
import threading
import time

from harness import consumer_lags, mqadmin, run_peer, unique_name

from rocketmq_py.client.consumer import ConsumeConcurrentlyStatus, PushConsumer
from rocketmq_py.client.consumer.offset_store import offset_file_text, read_offset_file, write_offset_file
from rocketmq_py.common.message_queue import MessageQueue

BATCH = 20



def _python_consume(namesrv: str, group: str, topic: str, expected: int, settle_s: float = 1.5) -> list[str]:
    bodies: list[str] = []
    lock = threading.Lock()
    done = threading.Event()

    def listener(messages, context):
        with lock:
            bodies.extend(m.body.decode() for m in messages)
            if len(bodies) >= expected:
                done.set()
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = PushConsumer(group, namesrv_addr=namesrv, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener)
    with consumer:
        assert done.wait(40), f"the Python consumer got {len(bodies)} of {expected}"
        time.sleep(settle_s)
    return bodies


def test_offsets_pass_between_python_and_java_consumers(java_namesrv, java_broker):
    topic, group = unique_name("Offsets"), unique_name("cg")
    namesrv = java_namesrv.addr
    mqadmin("updateTopic", "-b", java_broker.addr, "-t", topic, "-r", "4", "-w", "4", namesrv=namesrv)

    run_peer("produce", namesrv=namesrv, topic=topic, count=BATCH, body="first-{i}")
    first = _python_consume(namesrv, group, topic, BATCH)
    assert sorted(first) == sorted(f"first-{i}" for i in range(BATCH))
    assert consumer_lags(group, topic, namesrv) == [0, 0, 0, 0]

    run_peer("produce", namesrv=namesrv, topic=topic, count=BATCH, body="second-{i}")
    lines = run_peer("consume", namesrv=namesrv, topic=topic, group=group, count=BATCH + 1, timeout_ms=12000,
                     timeout=60)
    java_bodies = [base64.b64decode(line["bodyBase64"]).decode() for line in lines[:-1]]
    assert sorted(java_bodies) == sorted(f"second-{i}" for i in range(BATCH)), "Java starts where Python stopped"

    run_peer("produce", namesrv=namesrv, topic=topic, count=BATCH, body="third-{i}")
    third = _python_consume(namesrv, group, topic, BATCH)
    assert sorted(third) == sorted(f"third-{i}" for i in range(BATCH)), "Python starts where Java stopped"
    assert consumer_lags(group, topic, namesrv) == [0, 0, 0, 0]


def test_local_offset_file_layout_is_javas_both_ways(tmp_path):
    queues = {MessageQueue("TopicA", "broker-a", 0): 12, MessageQueue("TopicA", "broker-a", 1): 7,
              MessageQueue("%RETRY%g", "broker-b", 0): 3}
    java_file = tmp_path / "java" / "offsets.json"
    run_peer("offset-file", write=str(java_file),
             entry=[f"{q.topic},{q.broker_name},{q.queue_id},{o}" for q, o in queues.items()])
    assert read_offset_file(java_file) == queues

    python_file = tmp_path / "python" / "offsets.json"
    write_offset_file(python_file, queues)
    entries = run_peer("offset-file", read=str(python_file))
    assert {MessageQueue(e["topic"], e["brokerName"], e["queueId"]): e["offset"] for e in entries} == queues
    single = {MessageQueue("TopicA", "broker-a", 0): 13}
    run_peer("offset-file", write=str(java_file), entry=["TopicA,broker-a,0,13"])
    assert offset_file_text(single) == java_file.read_text(), "the same text as fastjson's pretty format"
    write_offset_file(python_file, single)
    assert read_offset_file(python_file.with_name("offsets.json.bak")) == queues, "the previous content is kept"
