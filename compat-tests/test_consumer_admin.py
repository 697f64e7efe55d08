"""Issue 4, point (admin): the Python push consumer answers the broker's requests that Java's tools send
through it: ``mqadmin consumerStatus`` (GET_CONSUMER_RUNNING_INFO), the admin API's getConsumeStatus
(GET_CONSUMER_STATUS_FROM_CLIENT), ``queryMsgById -g -d`` (CONSUME_MESSAGE_DIRECTLY) and
``resetOffsetByTime`` (RESET_CONSUMER_CLIENT_OFFSET: the consumer consumes again from the time)."""
from __future__ import annotations

import threading
import time
from collections import Counter

from harness import mqadmin, run_peer, unique_name

from rocketmq_py.client.consumer import ConsumeConcurrentlyStatus, PushConsumer

COUNT = 12


def _wait(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


def test_mqadmin_reaches_the_python_consumer(java_namesrv, java_broker):
    namesrv = java_namesrv.addr
    topic, group = unique_name("Admin"), unique_name("cg")
    mqadmin("updateTopic", "-b", java_broker.addr, "-t", topic, "-r", "2", "-w", "2", namesrv=namesrv)
    before = int(time.time() * 1000) - 1000
    sent = run_peer("produce", namesrv=namesrv, topic=topic, count=COUNT, body="adm-{i}")
    bodies: list[str] = []
    lock = threading.Lock()

    def listener(messages, context):
        with lock:
            bodies.extend(m.body.decode() for m in messages)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = PushConsumer(group, namesrv_addr=namesrv, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener)
    with consumer:
        assert _wait(lambda: len(bodies) >= COUNT, 30)
        client_id = consumer.core.instance.client_id

        status = mqadmin("consumerStatus", "-g", group, "-i", client_id, namesrv=namesrv)
        assert "#Consumer Subscription#" in status and topic in status
        assert f"%RETRY%{group}" in status
        assert "PROP_CONSUME_TYPE" in status and "CONSUME_PASSIVELY" in status
        assert "#Consumer MQ Detail#" in status and "ProcessQueueInfo" in status

        offsets = run_peer("consumer-status", namesrv=namesrv, group=group, topic=topic)
        per_queue = Counter(line["queueId"] for line in sent)
        assert {(line["clientId"], line["queueId"]): line["offset"] for line in offsets} == \
            {(client_id, q): n for q, n in per_queue.items()}

        pushed = mqadmin("queryMsgById", "-i", sent[0]["offsetMsgId"], "-g", group, "-d", client_id,
                         namesrv=namesrv)
        assert "CR_SUCCESS" in pushed, pushed
        assert _wait(lambda: bodies.count("adm-0") == 2, 10), "consumed directly once more"

        # The broker resets only a group whose offsets it holds: commit now rather than wait for the timer.
        consumer._run(consumer.core.persist_consumer_offset(force=True))
        reset = mqadmin("resetOffsetByTime", "-g", group, "-t", topic, "-s", str(before), namesrv=namesrv)
        assert topic in reset or "rollback" in reset
        assert _wait(lambda: all(n >= 2 for n in Counter(bodies).values()) and len(set(bodies)) == COUNT, 40), \
            f"not consumed again after the reset: {Counter(bodies)}"
    assert set(bodies) == {f"adm-{i}" for i in range(COUNT)}
