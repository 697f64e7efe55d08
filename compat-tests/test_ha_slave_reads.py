"""Issue 28, must show 1: consumers that fail over to a slave receive every message, skip none.

Eight master-slave pairs at once, one per (slave: ours or Java's) x (``slaveReadEnable`` off or on) x (the
master stopped cleanly, or killed with kill -9); every master is the official 4.9.7 broker as ASYNC_MASTER
with the harness defaults. One topic spans the eight pairs (five queues each; the fifth stays empty), and two
fresh groups consume it from the first offset: the official DefaultMQPushConsumer (a JVM) and our
PushConsumer, both started while the masters are up. Then both are paused (SIGSTOP for the JVM, suspend()
for ours), 2,000 messages go to each master (500 to each of four queues), each slave catches up (its CommitLog
byte-equal to its master's, every queue's max offset equal), the Java slaves' and our slaves' answers to the
same raw pulls are compared, the masters are stopped (four cleanly, four with kill -9), and the consumers
resume: each must receive all 2,000 messages of every pair. A paused consumer can have at most one pull per
queue answered by a master (up to 32 messages), so at least 2,000 - 4 x 32 come from the slave.

Before the fix our slave, with the default slaveReadEnable=false, answered every pull PULL_RETRY_IMMEDIATELY
with an advanced nextBeginOffset: the Java consumer moved past every message. A consumer that moves past the
end without the messages is seen through the offsets it commits to the slave, so the wait ends then too, and
the counts are printed for every pair and consumer either way: received, duplicates, skipped (not received,
below the offset the consumer committed) and not reached (not received, at or past it: a consumer that stalled).
"""
from __future__ import annotations

import hashlib
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pytest
from harness import backend
from harness.ha import (
    JavaPushConsumer,
    commit_log_range,
    committed_offset,
    create_topic,
    has_consumer,
    raw_pull,
    send_until_stored,
    wait_for_route,
    wait_max_offset,
    wait_replicated,
    wait_topic_synced,
)
from harness.py_servers import PythonBroker

from rocketmq_py.client.consumer import ConsumeConcurrentlyStatus, PushConsumer
from rocketmq_py.client.producer import Producer
from rocketmq_py.common.message import Message
from rocketmq_py.common.message_queue import MessageQueue

CLUSTER = "HaSlaveReads"
QUEUES = 5
WRITTEN_QUEUES = 4
PER_QUEUE = 500
PER_PAIR = PER_QUEUE * WRITTEN_QUEUES
#: Both consumers' pullBatchSize: what a master may still answer to a paused consumer's pull of a queue.
PULL_BATCH = 32
#: Brokers starting at once: a JVM start takes a few CPU-seconds, and the machine may be shared.
START_CONCURRENCY = 4
STARTUP_TIMEOUT_S = 240.0
CONSUME_TIMEOUT_S = 300.0
#: How often the consumers ask the name server for routes (both default to 30 s; the test need not wait).
POLL_NAME_SERVER_MS = 1000


@dataclass
class Pair:
    slave_kind: str
    slave_read_enable: bool
    stop_kind: str
    name: str
    master: object = None
    slave: object = None
    #: Bodies received before the master went away, per consumer ("java", "ours").
    before_stop: dict[str, int] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return (f"{self.slave_kind} slave, slaveReadEnable={str(self.slave_read_enable).lower()}, "
                f"master {'stopped' if self.stop_kind == 'stop' else 'killed (-9)'}")

    def bodies(self) -> list[str]:
        return [f"{self.name}/{queue}/{index}" for queue in range(WRITTEN_QUEUES) for index in range(PER_QUEUE)]


def _start_pair_brokers(pairs: list[Pair], namesrv, java_build, tmp_path) -> None:
    _, JavaBroker = backend.server_classes()

    def start_master(pair: Pair) -> None:
        pair.master = JavaBroker(namesrv, build=java_build, workdir=tmp_path / f"{pair.name}-master",
                                 broker_name=pair.name, cluster=CLUSTER, startup_timeout=STARTUP_TIMEOUT_S)
        pair.master.start()

    def start_slave(pair: Pair) -> None:
        keys = {"brokerId": 1, "brokerRole": "SLAVE", "slaveReadEnable": pair.slave_read_enable}
        if pair.slave_kind == "java":
            pair.slave = JavaBroker(namesrv, build=java_build, workdir=tmp_path / f"{pair.name}-slave",
                                    broker_name=pair.name, cluster=CLUSTER, extra_config=keys,
                                    startup_timeout=STARTUP_TIMEOUT_S)
            pair.slave.start()
        else:
            pair.slave = PythonBroker(namesrv.addr, tmp_path / f"{pair.name}-slave", pair.name, cluster=CLUSTER, **keys)
            pair.slave.start(timeout_s=STARTUP_TIMEOUT_S)

    jobs = [(start_master, pair) for pair in pairs] + [(start_slave, pair) for pair in pairs]
    with ThreadPoolExecutor(max_workers=START_CONCURRENCY) as pool:
        for future in [pool.submit(job, pair) for job, pair in jobs]:
            future.result()


def _stop_all(processes) -> None:
    running = [p for p in processes if p is not None]
    with ThreadPoolExecutor(max_workers=max(1, len(running))) as pool:
        list(pool.map(lambda p: p.stop(), running))


def _probe(addr: str, topic: str) -> dict[str, tuple]:
    """The same raw pulls to a slave: (code, remark, nextBeginOffset, suggestWhichBrokerId, min, max, records)."""
    probes = {
        "found": (0, 0, "*"), "found further on": (1, 100, "*"), "no tag matches": (0, 0, "NoSuchTag"),
        "at the end": (0, PER_QUEUE, "*"), "past the end": (0, PER_QUEUE + 10, "*"),
        "empty queue": (WRITTEN_QUEUES, 3, "*"), "empty queue at 0": (WRITTEN_QUEUES, 0, "*"),
    }
    answers = {}
    for what, (queue_id, offset, subscription) in probes.items():
        header, body = raw_pull(addr, "HaSlaveReadsProbe", topic, queue_id, offset, subscription)
        fields = header.get("extFields") or {}
        answers[what] = (header["code"], header.get("remark"), int(fields.get("nextBeginOffset", -1)),
                         int(fields.get("suggestWhichBrokerId", -1)), int(fields.get("minOffset", -1)),
                         int(fields.get("maxOffset", -1)), _record_count(body))
    return answers


def _record_count(body: bytes) -> int:
    count, position = 0, 0
    while position + 4 <= len(body):
        position += int.from_bytes(body[position:position + 4], "big")
        count += 1
    return count


@pytest.mark.timeout(1500)
def test_consumers_that_fail_over_to_a_slave_receive_every_message(java_namesrv, java_build, tmp_path, capsys):
    began = time.monotonic()
    run = uuid.uuid4().hex[:6]
    pairs = [Pair(kind, read, stop, f"hsr-{kind}-{'read' if read else 'noread'}-{stop}-{run}")
             for kind in ("py", "java") for read in (False, True) for stop in ("stop", "kill")]
    namesrv = java_namesrv.addr
    topic = f"HaSlaveReads_{run}"
    java_group, our_group = f"HaSlaveReadsJava_{run}", f"HaSlaveReadsPy_{run}"
    ours: Counter[str] = Counter()
    ours_lock = threading.Lock()
    java = consumer = producer = None
    try:
        _start_pair_brokers(pairs, java_namesrv, java_build, tmp_path)
        for pair in pairs:
            create_topic(pair.master.addr, topic, QUEUES)
        wait_for_route(namesrv, topic)

        java = JavaPushConsumer(namesrv, topic, java_group, tmp_path / "java-consumer.err",
                                poll_ns_ms=POLL_NAME_SERVER_MS)

        def on_messages(messages, context):
            with ours_lock:
                for message in messages:
                    ours[message.body.decode()] += 1
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        consumer = PushConsumer(our_group, namesrv_addr=namesrv, consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                                poll_name_server_interval=POLL_NAME_SERVER_MS)
        consumer.subscribe(topic, "*")
        consumer.register_message_listener(on_messages)
        consumer.start()
        _wait(lambda: all(has_consumer(p.master.addr, g) for p in pairs for g in (java_group, our_group)),
              lambda: "both consumers to send every master their heartbeat", 120)
        java.pause()
        consumer.suspend()

        producer = Producer(f"HaSlaveReadsProducer_{run}", namesrv_addr=namesrv)
        producer.start()

        def send(pair: Pair) -> None:
            for queue_id in range(WRITTEN_QUEUES):
                queue = MessageQueue(topic, pair.name, queue_id)
                bodies = [f"{pair.name}/{queue_id}/{index}" for index in range(PER_QUEUE)]
                for start in range(0, PER_QUEUE, 50):
                    send_until_stored(producer, [Message(topic, body.encode()) for body in bodies[start:start + 50]],
                                      queue)

        with ThreadPoolExecutor(max_workers=len(pairs)) as pool:
            list(pool.map(send, pairs))

        probes: dict[tuple[str, bool], dict[str, tuple]] = {}
        for pair in pairs:
            end = wait_replicated(pair.master.addr, pair.slave.addr)
            master_bytes = commit_log_range(pair.master.store_dir, 0, end)
            assert hashlib.sha256(commit_log_range(pair.slave.store_dir, 0, end)).digest() == \
                hashlib.sha256(master_bytes).digest(), pair.label
            for queue_id in range(QUEUES):
                expected = PER_QUEUE if queue_id < WRITTEN_QUEUES else 0
                assert wait_max_offset(pair.master.addr, topic, queue_id, expected) == expected
                assert wait_max_offset(pair.slave.addr, topic, queue_id, expected) == expected, pair.label
            wait_topic_synced(pair.slave.addr, topic)
            probes[(pair.slave_kind, pair.slave_read_enable)] = _probe(pair.slave.addr, topic)
        # Our slave answers the same pulls as Java's (checked at the end, so that a difference does not hide
        # what the consumers then do); and a 4.9 slave without slaveReadEnable serves messages.
        answers_differ = [f"slaveReadEnable={read}, {what}: ours {probes[('py', read)][what]}, Java's "
                          f"{probes[('java', read)][what]}"
                          for read in (False, True) for what in probes[("java", read)]
                          if probes[("py", read)][what] != probes[("java", read)][what]]
        for read in (False, True):
            assert probes[("java", read)]["found"][:2] == (0, "FOUND")

        java_before, ours_before = java.bodies, _snapshot(ours, ours_lock)
        for pair in pairs:
            pair.before_stop = {"java": sum(1 for b in pair.bodies() if b in java_before),
                                "ours": sum(1 for b in pair.bodies() if b in ours_before)}
        with ThreadPoolExecutor(max_workers=len(pairs)) as pool:
            list(pool.map(lambda p: p.master.stop() if p.stop_kind == "stop" else p.master.kill(), pairs))
        java.resume()
        consumer.resume()

        def settled(pair: Pair, received: dict[str, int], group: str) -> bool:
            if all(b in received for b in pair.bodies()):
                return True
            return all(committed_offset(pair.slave.addr, group, topic, q) >= PER_QUEUE for q in range(WRITTEN_QUEUES))

        def all_settled() -> bool:
            java_now, ours_now = java.bodies, _snapshot(ours, ours_lock)
            return all(settled(p, java_now, java_group) and settled(p, ours_now, our_group) for p in pairs)

        in_time = _wait_until(all_settled, CONSUME_TIMEOUT_S)
        # Our consumer commits its offsets as it shuts down; the Java one has committed every 5 s.
        consumer.shutdown()
        consumer = None
        java_bodies = java.bodies
        java_state = java.describe()
        committed = {(pair.name, who, queue_id): committed_offset(pair.slave.addr, group, topic, queue_id)
                     for pair in pairs for who, group in (("java", java_group), ("ours", our_group))
                     for queue_id in range(WRITTEN_QUEUES)}
    finally:
        if consumer is not None:
            consumer.shutdown()
        if producer is not None:
            producer.shutdown()
        if java is not None:
            java.stop()
        _stop_all([p.slave for p in pairs] + [p.master for p in pairs])

    our_bodies = _snapshot(ours, ours_lock)
    rows, failures = [], []
    for pair in pairs:
        for who, received in (("java", java_bodies), ("ours", our_bodies)):
            got = sum(1 for b in pair.bodies() if b in received)
            duplicates = sum(received[b] - 1 for b in pair.bodies() if b in received)
            # A body is "queue/index" and each queue got its messages in order: the index is the queue offset.
            skipped = sum(1 for queue_id in range(WRITTEN_QUEUES) for index in range(PER_QUEUE)
                          if f"{pair.name}/{queue_id}/{index}" not in received
                          and index < committed[(pair.name, who, queue_id)])
            from_slave = got - pair.before_stop[who]
            rows.append(f"  {pair.label:<54} {who:>4} consumer: received {got}/{PER_PAIR}, duplicates {duplicates}, "
                        f"skipped {skipped}, not reached {PER_PAIR - got - skipped}, after the master went away "
                        f"{from_slave}")
            if got != PER_PAIR or from_slave < PER_PAIR - WRITTEN_QUEUES * PULL_BATCH:
                failures.append(f"{pair.label}, {who} consumer")
    with capsys.disabled():
        print(f"\nconsumers failing over to a slave ({time.monotonic() - began:.0f} s):\n" + "\n".join(rows))
        if answers_differ:
            print("  our slaves' answers that differ from Java's slaves':\n    " + "\n    ".join(answers_differ))
    assert in_time and not failures and not answers_differ, (failures, answers_differ, java_state)


def _snapshot(counter: Counter[str], lock: threading.Lock) -> dict[str, int]:
    with lock:
        return dict(counter)


def _wait(condition, what, timeout_s: float) -> None:
    """``what()`` describes the wait when it times out."""
    assert _wait_until(condition, timeout_s), f"timed out waiting for {what()}"


def _wait_until(condition, timeout_s: float) -> bool:
    """Whether ``condition()`` came true within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True
