"""Issue 10, must-show 3: the official Java producer (client 4.9.8) writing to two brokers of one cluster, one of
them saturated, loses no message.

The saturated broker runs with a tiny ``waitTimeMillsInSendQueue`` while a pipelined sender keeps
``LOAD_CONNECTIONS`` x ``LOAD_INFLIGHT`` sends of its own (another topic) outstanding on it, so sends wait in
its send queue and it answers SYSTEM_BUSY ``[TIMEOUT_CLEAN_QUEUE]``. SYSTEM_BUSY (2) is not among
DefaultMQProducer's retryResponseCodes: ``sendDefaultImpl`` marks the broker faulty and throws
MQBrokerException(2) to the application, which sends the message again; with ``sendLatencyFaultEnable`` the
producer then keeps away from that broker. The peer ``produce-busy`` is that application; its producer makes
no retries of its own (``retryTimesWhenSendFailed=0``), so every failed attempt is seen, and counted, by it,
and a message stored twice can be matched to an attempt that threw.

The producer keeps Java's latency fault strategy but with ``--fault-on-failure-only``: a broker leaves the rotation
after a failed send (for 600 s, as with Java's table), not after a slow successful one. With Java's default table
a successful send of 550 ms or more takes a broker out for 30 s; when that happened to the healthy broker (its first
send, on a machine at load 8: 2026-11-28, one run in ten), both brokers were out, ``pickOneAtLeast`` chose the one
with the lower last latency, the saturated broker, whose refusals are fast, and its next stored send put it back in
the rotation: 1,999 of 2,000 messages went to the saturated broker in that run. Which broker is slow then depends on
the machine, not on the brokers; a refusal does not, and it is what this test is about.

Run against two of our brokers and against two official 4.9.7 brokers, with the same assertions, which
both pass: the Java producer is refused by the saturated broker once, with ``[TIMEOUT_CLEAN_QUEUE]``, and
from then on sends every message to the healthy one (Java's producer stored a few messages on the saturated
Java broker before its first refusal in some runs). Both brokers sweep their send queue every 10 ms and
store what their workers take between sweeps, so both keep storing part of the load while saturated; the
shares differ with the machine and are not asserted.
"""
from __future__ import annotations

import time
from collections import Counter

import pytest
from harness import run_peer, unique_name, wire
from harness.pipelined import PipelinedLoad
from harness.py_servers import PythonBroker, PythonNameServer

from rocketmq_py.client.consumer import LitePullConsumer

UPDATE_AND_CREATE_TOPIC = 17
GET_ROUTEINFO_BY_TOPIC = 105
SYSTEM_BUSY = 2
#: Java messages, each with a unique key.
COUNT = 2000
QUEUES = 4
LOAD_CONNECTIONS = 4
LOAD_INFLIGHT = 1024
#: The saturated broker's limit; why the Java producer is certain to be refused there, whatever the machine's
#: speed: the test starts the producer only once the load itself is being refused (LOAD_BUSY_BEFORE_START),
#: that is once the send queue holds sends older than the limit. A Java send arriving then waits behind the
#: hundreds to thousands of sends the load keeps queued, each at least microseconds of work even when it is
#: only refused, and a loaded machine only lengthens that wait. Should one get through all the same (Java's
#: broker sweeps its queue every 10 ms, so its send thread may store a send that waited longer), the latency
#: fault strategy keeps that broker in the rotation, and the producer sends every other message there until
#: it is refused: only a refusal or a failed request takes a broker out (``fault_on_failure_only``, see the
#: module's docstring). With COUNT sends, a run without a refusal would need ~COUNT/2 sends in a row to slip
#: through a queue that refuses the load's.
SATURATED_WAIT_MS = 1
BUSY_REMARKS = ("[TIMEOUT_CLEAN_QUEUE]broker busy", "[PCBUSY_CLEAN_QUEUE]broker busy", "[REJECTREQUEST]system busy",
                "[OVERLOAD]system busy")
#: The load refusals seen before the Java producer starts: the send queue is past the limit by then.
LOAD_BUSY_BEFORE_START = 1000


def _create_topic(broker_addr: str, topic: str, queues: int) -> None:
    header, _ = wire.request(broker_addr, UPDATE_AND_CREATE_TOPIC, {
        "topic": topic, "defaultTopic": "TBW102", "readQueueNums": str(queues), "writeQueueNums": str(queues),
        "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}, timeout=10.0)
    assert header.get("code") == 0, f"creating {topic} on {broker_addr}: {header}"


def _poll(condition, what: str, timeout_s: float = 60.0, interval_s: float = 0.1) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {timeout_s} s")
        time.sleep(interval_s)


def _routed_to(namesrv_addr: str, topic: str, broker_names: list[str]) -> bool:
    header, body = wire.request(namesrv_addr, GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, timeout=5.0)
    return header.get("code") == 0 and all(f'"{name}"'.encode() in body for name in broker_names)


@pytest.fixture(params=["python", "java"])
def two_brokers(request, tmp_path):
    """(name server address, saturated broker, healthy broker): two brokers of one cluster, ours or Java's."""
    cluster = unique_name("BusyCluster")
    saturated_config = {"waitTimeMillsInSendQueue": SATURATED_WAIT_MS}
    if request.param == "java":
        start_broker = request.getfixturevalue("start_broker")
        namesrv = request.getfixturevalue("java_namesrv")
        saturated = start_broker(broker_name=unique_name("busy-sat"), cluster=cluster, **saturated_config)
        healthy = start_broker(broker_name=unique_name("busy-ok"), cluster=cluster)
        yield namesrv.addr, saturated, healthy
        return
    namesrv = PythonNameServer(tmp_path / "namesrv").start()
    brokers = []
    try:
        brokers.append(PythonBroker(namesrv.addr, tmp_path / "saturated", broker_name=unique_name("busy-sat"),
                                    cluster=cluster, **saturated_config).start())
        brokers.append(PythonBroker(namesrv.addr, tmp_path / "healthy", broker_name=unique_name("busy-ok"),
                                    cluster=cluster).start())
        yield namesrv.addr, brokers[0], brokers[1]
    finally:
        for process in [*brokers, namesrv]:
            process.stop()


def _stored(namesrv_addr: str, topic: str) -> list[tuple[str, str, int, int]]:
    """Every message of ``topic`` on every broker: (key, broker name, queue id, queue offset)."""
    stored: list[tuple[str, str, int, int]] = []
    with LitePullConsumer(unique_name("busy-check"), namesrv_addr=namesrv_addr, auto_commit=False) as consumer:
        queues = sorted(consumer.fetch_message_queues(topic))
        total = sum(consumer.max_offset(queue) for queue in queues)
        consumer.assign(queues)
        for queue in queues:
            consumer.seek_to_begin(queue)
        deadline = time.monotonic() + 60
        while len(stored) < total and time.monotonic() < deadline:
            stored += [(m.keys, m.broker_name, m.queue_id, m.queue_offset) for m in consumer.poll(1000)]
    assert len(stored) == total, f"read back {len(stored)} of the {total} messages stored"
    return stored


def test_java_producer_loses_nothing_when_one_broker_is_saturated(two_brokers):
    namesrv_addr, saturated, healthy = two_brokers
    topic = unique_name("BusyFailover")
    load_topic = unique_name("BusyLoad")
    for broker in (saturated, healthy):
        _create_topic(broker.addr, topic, QUEUES)
    _create_topic(saturated.addr, load_topic, 8)
    _poll(lambda: _routed_to(namesrv_addr, topic, [saturated.broker_name, healthy.broker_name]),
          f"the name server routes {topic} to both brokers")

    with PipelinedLoad(saturated.addr, load_topic, connections=LOAD_CONNECTIONS, inflight=LOAD_INFLIGHT) as load:
        _poll(lambda: load.counters.busy >= LOAD_BUSY_BEFORE_START,
              f"the saturated broker refused {LOAD_BUSY_BEFORE_START} sends of the load")
        lines = run_peer("produce-busy", namesrv=namesrv_addr, topic=topic, count=COUNT, keys="busy-",
                         body_size=256, latency_fault=True, fault_on_failure_only=True, timeout_ms=10000,
                         max_attempts=100, timeout=180)
        load_counts = {"stored": load.counters.messages, "busy": load.counters.busy,
                       "other": dict(load.counters.other_codes)}

    done = lines[-1]
    acked = {line["key"]: line for line in lines if "brokerName" in line}
    failed = [line for line in lines if "failed" in line]
    busy = [line for line in failed if line["code"] == SYSTEM_BUSY]
    keys = {f"busy-{i}" for i in range(COUNT)}
    by_broker = Counter(line["brokerName"] for line in acked.values())
    print(f"load {load_counts}; Java producer: acknowledged by broker {dict(by_broker)}, "
          f"failures {done['failures']}")

    # Every message was finally acknowledged, once.
    assert done["done"] and done["acked"] == COUNT and set(acked) == keys

    # The scenario happened: the saturated broker refused the Java producer with Java's busy answer, and the
    # producer went on through the healthy broker.
    # (The healthy broker keeps the default 200 ms limit: a loaded machine might, rarely, make it refuse too.)
    assert saturated.addr in {line["brokerAddr"] for line in busy}, \
        f"the saturated broker never answered SYSTEM_BUSY to the Java producer: {done['failures']}"
    assert {line["brokerAddr"] for line in busy} <= {saturated.addr, healthy.addr}
    # A send that waited too long is [TIMEOUT_CLEAN_QUEUE]; a page cache slow on a loaded machine gives
    # [PCBUSY_CLEAN_QUEUE] (Java: also [REJECTREQUEST]) instead, Java's other broker-busy answers.
    assert all(line["remark"].startswith(BUSY_REMARKS) for line in busy), busy[:3]
    assert by_broker[healthy.broker_name] > COUNT // 2
    # From the first refusal on, the saturated broker is out of the rotation for 600 s: every later message goes
    # to the healthy broker, unless that one failed a send too (then both are out, and Java picks either).
    first_refusal = next(i for i, line in enumerate(lines)
                         if line.get("code") == SYSTEM_BUSY and line.get("brokerAddr") == saturated.addr)
    if not any(line["brokerAddr"] == healthy.addr for line in failed):
        assert {line["brokerName"] for line in lines[first_refusal:] if "brokerName" in line} == \
            {healthy.broker_name}
    assert set(by_broker) <= {saturated.broker_name, healthy.broker_name}

    # No message lost: every acknowledged send is stored where the producer was told it is.
    stored = _stored(namesrv_addr, topic)
    positions = {(key, broker, queue_id, offset) for key, broker, queue_id, offset in stored}
    for key, line in acked.items():
        assert (key, line["brokerName"], line["queueId"], line["queueOffset"]) in positions, key
    # Nothing stored that was not sent, and a message stored twice only after an attempt that threw.
    copies = Counter(key for key, *_ in stored)
    assert set(copies) == keys
    duplicates = {key for key, n in copies.items() if n > 1}
    threw = {line["key"] for line in failed}
    print(f"stored {len(stored)} for {COUNT} keys; duplicates {sorted(duplicates)}")
    assert duplicates <= threw, f"stored twice without a failed attempt: {sorted(duplicates - threw)}"
