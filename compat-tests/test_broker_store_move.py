"""Store moves between whole brokers (the store engine alone is covered by test_store_move.py): a store
directory our broker process wrote is served by the official Java broker, and one the Java broker wrote is
served by ours. The Java consumer reads every message after the move, and the topic table and the
committed consumer offsets (topics.json, consumerOffset.json) move along."""
from __future__ import annotations

import base64

from harness import JavaBroker, mqadmin, run_peer, unique_name, wire
from harness.py_servers import PythonBroker

QUERY_CONSUMER_OFFSET = 14
QUEUES = 4


def _offsets(addr: str, group: str, topic: str) -> dict[int, int]:
    found = {}
    for queue_id in range(QUEUES):
        header, _ = wire.request(addr, QUERY_CONSUMER_OFFSET,
                                 {"consumerGroup": group, "topic": topic, "queueId": queue_id})
        found[queue_id] = int(header["extFields"]["offset"]) if header["code"] == 0 else -1
    return found


def _fill(namesrv: str, broker_addr: str, topic: str, group: str) -> tuple[list[dict], dict[int, int]]:
    """60 messages on 4 queues, and a group that consumed some of them (its offsets committed)."""
    mqadmin("updateTopic", "-b", broker_addr, "-t", topic, "-r", str(QUEUES), "-w", str(QUEUES), namesrv=namesrv)
    sent = run_peer("produce", namesrv=namesrv, topic=topic, count=40, body="first-{i}", tags="T1")
    *_, done = run_peer("consume", namesrv=namesrv, topic=topic, group=group, count=40, timeout_ms=60000)
    assert done["count"] == 40
    sent += run_peer("produce", namesrv=namesrv, topic=topic, count=20, body="second-{i}", tags="T2")
    return sent, _offsets(broker_addr, group, topic)


def _read_all(namesrv: str, topic: str, sent: list[dict]) -> None:
    *received, done = run_peer("consume", namesrv=namesrv, topic=topic, group=unique_name("MoveReader"), count=len(sent),
                               timeout_ms=60000, timeout=120)
    assert done["count"] == len(sent) and not done["timedOut"]
    by_id = {m["msgId"]: m for m in received}
    assert set(by_id) == {item["msgId"] for item in sent}
    for item in sent:
        assert by_id[item["msgId"]]["offsetMsgId"] == item["offsetMsgId"]
        assert (by_id[item["msgId"]]["queueId"], by_id[item["msgId"]]["queueOffset"]) == (
            item["queueId"], item["queueOffset"])
    bodies = {base64.b64decode(m["bodyBase64"]).decode() for m in received}
    assert bodies == {f"first-{i}" for i in range(40)} | {f"second-{i}" for i in range(20)}


def test_java_broker_serves_a_store_our_broker_wrote(py_namesrv, java_build, tmp_path):
    ours = PythonBroker(py_namesrv.addr, tmp_path / "ours", broker_name=unique_name("move-py")).start()
    topic, group = unique_name("MoveOut"), unique_name("MoveOutGroup")
    try:
        sent, offsets = _fill(py_namesrv.addr, ours.addr, topic, group)
    finally:
        assert ours.stop() == 0
    java = JavaBroker(py_namesrv.addr, build=java_build, workdir=tmp_path / "java", port=ours.port,
                      broker_name=ours.broker_name, extra_config={"storePathRootDir": ours.store_dir,
                                                                  "storePathCommitLog": ours.store_dir / "commitlog"})
    java.start()
    try:
        assert _offsets(java.addr, group, topic) == offsets, "consumerOffset.json moved along"
        _read_all(py_namesrv.addr, topic, sent)
    finally:
        java.stop()


def test_our_broker_serves_a_store_the_java_broker_wrote(py_namesrv, java_build, tmp_path):
    java = JavaBroker(py_namesrv.addr, build=java_build, workdir=tmp_path / "java", broker_name=unique_name("move-java"))
    java.start()
    topic, group = unique_name("MoveIn"), unique_name("MoveInGroup")
    try:
        sent, offsets = _fill(py_namesrv.addr, java.addr, topic, group)
    finally:
        java.stop()
    ours = PythonBroker(py_namesrv.addr, tmp_path / "ours", broker_name=java.broker_name,
                        storePathRootDir=java.store_dir, storePathCommitLog=java.store_dir / "commitlog")
    ours.port = java.port
    ours.start()
    try:
        assert "abnormal" not in ours.log_text(), "the Java broker stopped cleanly"
        assert _offsets(ours.addr, group, topic) == offsets, "consumerOffset.json moved along"
        _read_all(py_namesrv.addr, topic, sent)
    finally:
        assert ours.stop() == 0
