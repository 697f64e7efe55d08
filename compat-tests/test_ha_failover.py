"""Issue 12, point 3: failover. Our master and our slave (slaveReadEnable); the official 4.9.8 push consumer
and our PushConsumer consume one topic while our producer sends.

To make "read from the slave" certain, each consumer has a backlog when the master dies: the Java consumer
is paused (SIGSTOP) and ours is shut down while a second batch is sent and replicated; then the master is
killed with kill -9, the Java consumer resumes and ours starts again, and both must get the whole batch,
which only the slave can serve. Then the master is restarted on its store and the slave is stopped: the
messages sent now can only come from the master, so both consumers went back to it. No acknowledged
message is lost; duplicates (at-least-once: offsets committed to the master before the kill are only
synchronised to the slave every 10 s) are counted and printed.
"""
from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from typing import Callable

import pytest
from harness.ha import (
    SLAVE,
    JavaPushConsumer,
    create_topic,
    wait_for_route,
    wait_replicated,
    wait_topic_synced,
)
from harness.py_servers import PythonBroker

from rocketmq_py.client.consumer import ConsumeConcurrentlyStatus, PushConsumer
from rocketmq_py.client.producer import Producer
from rocketmq_py.common.message import Message

FIRST, BACKLOG, AFTER_RESTART = 1000, 1000, 500


def _wait_for(condition, what, timeout_s: float = 240.0) -> None:
    """``what()`` describes the state when the wait times out."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what()}"
        time.sleep(0.5)


@pytest.mark.timeout(900)
def test_consumers_fail_over_to_the_slave_and_back_without_losing_acked_messages(java_namesrv, tmp_path):
    broker_name = f"ha-failover-{uuid.uuid4().hex[:6]}"
    namesrv = java_namesrv.addr
    master = PythonBroker(namesrv, tmp_path / "master", broker_name).start()
    slave = PythonBroker(namesrv, tmp_path / "slave", broker_name, **SLAVE).start()
    topic, group = f"HaFailover_{uuid.uuid4().hex[:8]}", f"HaFailoverGroup_{uuid.uuid4().hex[:6]}"
    create_topic(master.addr, topic, 4)
    wait_for_route(namesrv, topic)
    ours: Counter[str] = Counter()
    lock = threading.Lock()

    def on_messages(messages, context):
        with lock:
            for message in messages:
                ours[message.body.decode()] += 1
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    def start_ours() -> PushConsumer:
        consumer = PushConsumer(group + "_py", namesrv_addr=namesrv, consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                                poll_name_server_interval=5000)
        consumer.subscribe(topic, "*")
        consumer.register_message_listener(on_messages)
        consumer.start()
        return consumer

    java = JavaPushConsumer(namesrv, topic, group + "_java", tmp_path / "java-consumer.err")
    producer = Producer(f"HaFailoverProducer_{uuid.uuid4().hex[:6]}", namesrv_addr=namesrv,
                        poll_name_server_interval=5000)
    acked: list[str] = []

    def send(prefix: str, count: int) -> list[str]:
        bodies = [f"{prefix}-{index}" for index in range(count)]
        for body in bodies:
            producer.send(Message(topic, body.encode()))
            acked.append(body)
        return bodies

    def both_have(bodies) -> bool:
        java_bodies = java.bodies
        with lock:
            return all(ours[b] for b in bodies) and all(java_bodies.get(b) for b in bodies)

    def state(what: str, bodies) -> "Callable[[], str]":
        def describe() -> str:
            java_bodies = java.bodies
            with lock:
                missing = (sum(1 for b in bodies if not ours[b]), sum(1 for b in bodies if not java_bodies.get(b)))
            return f"{what}: missing (ours, java) = {missing} of {len(bodies)}; {java.describe()}"
        return describe

    consumer = start_ours()
    producer.start()
    try:
        first = send("first", FIRST)
        _wait_for(lambda: both_have(first), state("both consumers to consume from the master", first))
        consumer.shutdown()
        java.pause()
        backlog = send("backlog", BACKLOG)
        wait_replicated(master.addr, slave.addr)
        wait_topic_synced(slave.addr, topic)
        master.kill()  # kill -9
        java.resume()
        consumer = start_ours()
        _wait_for(lambda: both_have(backlog), state("both consumers to read the backlog from the slave", backlog))

        master.start()  # same port and store: recovers after the kill -9
        wait_replicated(master.addr, slave.addr)
        slave.stop()
        after = send("after", AFTER_RESTART)
        _wait_for(lambda: both_have(after), state("both consumers to come back to the master", after))
    finally:
        producer.shutdown()
        consumer.shutdown()
        java.stop()
        master.stop()
        slave.stop()
    java_bodies = java.bodies
    duplicates = {"ours": sum(ours.values()) - len(ours), "java": sum(java_bodies.values()) - len(java_bodies)}
    print(f"failover: {len(acked)} acknowledged, duplicates {duplicates}")
    assert set(acked) <= set(ours) and set(acked) <= set(java_bodies)
