"""Issue 5, point 1: the official Java 4.9.8 producer and push consumer against OUR name server and broker
(both run as ``python -m rocketmq_py ...`` processes). Every message is accounted for with its body, tags,
keys and properties; every kind a Java producer sends (compressed, batch, ordered, delayed, transactional)
arrives; two Java consumers in one group split the queues.

The process wrappers (PythonNameServer, PythonBroker) live in harness/py_servers.py.
"""
from __future__ import annotations

import base64
import threading
import time
from collections import Counter

from harness import mqadmin, run_peer, unique_name, wire

from rocketmq_py.common.codes import RequestCode


def bodies(lines: list[dict]) -> list[bytes]:
    return [base64.b64decode(line["bodyBase64"]) for line in lines if "bodyBase64" in line]


def test_java_producer_and_push_consumer_account_for_every_message(py_namesrv, py_broker):
    topic, group = unique_name("JavaFlow"), unique_name("JavaFlowGroup")
    mqadmin("updateTopic", "-b", py_broker.addr, "-t", topic, "-r", "4", "-w", "4", namesrv=py_namesrv.addr)
    count = 200
    sent = run_peer("produce", namesrv=py_namesrv.addr, topic=topic, count=count, tags="TagA",
                    keys="key-{i} second-{i}", body="java-to-python-{i}", prop=["color=blue", "unicode=värde"])
    assert [s["status"] for s in sent] == ["SEND_OK"] * count
    assert {s["brokerName"] for s in sent} == {py_broker.broker_name}
    assert {s["queueId"] for s in sent} == {0, 1, 2, 3}
    *received, done = run_peer("consume", namesrv=py_namesrv.addr, topic=topic, group=group, count=count,
                               timeout_ms=60000)
    assert done["count"] == count and not done["timedOut"]
    by_id = {m["msgId"]: m for m in received}
    assert set(by_id) == {s["msgId"] for s in sent} and len(received) == count
    for index, item in enumerate(sent):
        message = by_id[item["msgId"]]
        assert base64.b64decode(message["bodyBase64"]) == f"java-to-python-{index}".encode()
        assert message["tags"] == "TagA" and message["keys"] == f"key-{index} second-{index}"
        assert message["properties"]["color"] == "blue" and message["properties"]["unicode"] == "värde"
        assert message["properties"]["CLUSTER"] == py_broker.cluster
        assert (message["queueId"], message["queueOffset"]) == (item["queueId"], item["queueOffset"])
        assert message["offsetMsgId"] == item["offsetMsgId"] and message["storeHost"] == py_broker.addr
        assert message["reconsumeTimes"] == 0


def test_every_kind_of_java_message_arrives(py_namesrv, py_broker):
    topic, group = unique_name("JavaKinds"), unique_name("JavaKindsGroup")
    mqadmin("updateTopic", "-b", py_broker.addr, "-t", topic, "-r", "4", "-w", "4", namesrv=py_namesrv.addr)
    per_kind = 4
    sent = [line for line in run_peer("produce-kinds", namesrv=py_namesrv.addr, topic=topic, per_kind=per_kind)
            if "kind" in line]
    kinds = Counter(line["kind"] for line in sent)
    assert kinds == {kind: per_kind for kind in ("tags", "keys", "props", "compressed", "batch", "ordered",
                                                 "delayed", "transaction")}
    *received, done = run_peer("consume", namesrv=py_namesrv.addr, topic=topic, group=group, count=len(sent),
                               timeout_ms=60000)
    assert done["count"] == len(sent) and not done["timedOut"], Counter(m["tags"] for m in received)
    by_id = {m["msgId"]: m for m in received}
    for item in sent:
        message = by_id[item["msgId"]]
        body = base64.b64decode(message["bodyBase64"])
        kind, index = item["kind"], item["index"]
        if kind == "compressed":
            assert body == bytes(ord("a") + (k * 7 + index) % 26 for k in range(6000 + index))
        else:
            assert body == f"{kind}-{index}".encode()
        if kind == "props":
            assert message["properties"]["color"] == ("red" if index % 2 == 0 else "blue")
            assert message["properties"]["unicode"] == f"värde-ü-{index}"
        if kind == "keys":
            assert message["keys"] == f"key-{index} other-{index}"
        if kind == "delayed":
            assert message["storeTimestamp"] - message["bornTimestamp"] >= 900
        if kind == "transaction":
            assert message["sysFlag"] & 0xC == 0x8, "a committed transactional message"


def test_two_java_consumers_in_one_group_split_the_queues(py_namesrv, py_broker):
    topic, group = unique_name("JavaSplit"), unique_name("JavaSplitGroup")
    mqadmin("updateTopic", "-b", py_broker.addr, "-t", topic, "-r", "4", "-w", "4", namesrv=py_namesrv.addr)
    outputs: list[list[dict]] = [[], []]

    def consume(slot: int) -> None:
        outputs[slot] = run_peer("consume", namesrv=py_namesrv.addr, topic=topic, group=group, count=10_000,
                                 timeout_ms=25000, timeout=90)

    threads = [threading.Thread(target=consume, args=(slot,)) for slot in (0, 1)]
    for thread in threads:
        thread.start()
    _wait_for_consumers(py_broker.addr, group, 2)
    time.sleep(3)  # both have rebalanced after the ids-changed notices
    count = 80
    sent = run_peer("produce", namesrv=py_namesrv.addr, topic=topic, count=count, body="split-{i}")
    for thread in threads:
        thread.join()
    firsts = [[m for m in lines if "bodyBase64" in m] for lines in outputs]
    assert all(firsts), "each consumer got part of the messages"
    queues = [{m["queueId"] for m in lines} for lines in firsts]
    assert not queues[0] & queues[1] and queues[0] | queues[1] == {0, 1, 2, 3}
    ids = [m["msgId"] for lines in firsts for m in lines]
    assert sorted(ids) == sorted(s["msgId"] for s in sent), "every message once, over both consumers"


def _wait_for_consumers(broker_addr: str, group: str, count: int, timeout_s: float = 40.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            header, body = wire.request(broker_addr, 38, {"consumerGroup": group}, timeout=2.0)
            if header.get("code") == 0 and body.count(b"@") >= count:
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.3)
    raise AssertionError(f"{count} consumers of {group} did not register within {timeout_s} s")


def test_our_broker_answers_on_the_vip_channel(py_broker):
    # Java's clients send on listenPort - 2 by default (sendMessageWithVIPChannel): the same broker answers there.
    header, body = wire.request(f"127.0.0.1:{py_broker.port - 2}", RequestCode.GET_BROKER_CONFIG)
    assert header["code"] == 0, header
    config = dict(line.split("=", 1) for line in body.decode().splitlines() if "=" in line)
    assert (config["brokerName"], config["listenPort"]) == (py_broker.broker_name, str(py_broker.port))


def test_java_orderly_consumer_locks_queues_and_sees_each_key_in_order(py_namesrv, py_broker):
    from rocketmq_py.client.producer import Producer, SelectMessageQueueByHash
    from rocketmq_py.common.message import Message

    topic, group = unique_name("Orderly"), unique_name("OrderlyGroup")
    mqadmin("updateTopic", "-b", py_broker.addr, "-t", topic, "-r", "4", "-w", "4", namesrv=py_namesrv.addr)
    keys, steps = [f"order-{k}" for k in range(6)], 8
    with Producer(unique_name("OrderlyProducer"), namesrv_addr=py_namesrv.addr) as producer:
        for step in range(steps):
            for key in keys:
                message = Message(topic, f"{key}:{step}".encode(), properties={"key": key, "step": str(step)})
                producer.send(message, selector=SelectMessageQueueByHash(), arg=key)
    *received, done = run_peer("consume-orderly", namesrv=py_namesrv.addr, topic=topic, group=group,
                               count=len(keys) * steps, timeout_ms=60000, timeout=120)
    assert not done["timedOut"]
    order: dict[str, list[int]] = {}
    for line in received:
        order.setdefault(line["properties"]["key"], []).append(int(line["properties"]["step"]))
    assert order == {key: list(range(steps)) for key in keys}
