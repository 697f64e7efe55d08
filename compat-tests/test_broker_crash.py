"""Issue 5, point 3: kill -9 our broker process during a stream of SYNC_FLUSH sends from the official Java
producer, then restart it. Every send the producer saw acknowledged is still there and a Java consumer
reads it; the consumer offsets committed before the crash survive; recovery cuts the torn record at the
end of the CommitLog (one is written there before the restart, as a crash mid-write leaves it)."""
from __future__ import annotations

import json
import time

import pytest
from harness import mqadmin, run_peer, unique_name, wire
from harness.peers import start_peer
from harness.py_servers import PythonBroker

from rocketmq_py import codec
from rocketmq_py.store import layout

QUERY_CONSUMER_OFFSET = 14
GET_MAX_OFFSET = 30
ACKS_BEFORE_KILL = 300


def _valid_end(commit_log_dir) -> tuple[int, bytes]:
    """The CommitLog offset after the last valid record, and that record (read without any recovery)."""
    end, last = 0, b""
    for path in sorted(commit_log_dir.iterdir()):
        data = path.read_bytes()
        position, start = 0, int(path.name)
        while True:
            info = layout.check_record(data, position, len(data))
            if info.size <= 0:
                break
            last = data[position:position + info.size]
            position += info.size
            end = start + position
    return end, last


def _tear(commit_log_dir, end: int, record: bytes) -> None:
    """Write the first half of a record after the valid end: what a write cut by the crash leaves behind."""
    files = sorted(commit_log_dir.iterdir())
    target = max((p for p in files if int(p.name) <= end), key=lambda p: int(p.name))
    with open(target, "r+b") as handle:
        handle.seek(end - int(target.name))
        handle.write(record[:len(record) // 2])


def _committed(broker_addr: str, group: str, topic: str, queues: int) -> dict[int, int]:
    offsets = {}
    for queue_id in range(queues):
        header, _ = wire.request(broker_addr, QUERY_CONSUMER_OFFSET,
                                 {"consumerGroup": group, "topic": topic, "queueId": queue_id})
        offsets[queue_id] = int(header["extFields"]["offset"]) if header["code"] == 0 else -1
    return offsets


def _persisted(store_dir, group: str, topic: str) -> dict[int, int] | None:
    path = store_dir / "config" / "consumerOffset.json"
    if not path.exists():
        return None
    table = codec.json_loads(path.read_text())["offsetTable"].get(f"{topic}@{group}")
    return {int(queue): int(offset) for queue, offset in table.items()} if table else None


def _stored(broker_addr: str, topic: str, queues: int) -> int:
    total = 0
    for queue_id in range(queues):
        header, _ = wire.request(broker_addr, GET_MAX_OFFSET, {"topic": topic, "queueId": queue_id})
        total += int(header["extFields"]["offset"])
    return total


@pytest.fixture
def sync_broker(py_namesrv, tmp_path):
    broker = PythonBroker(py_namesrv.addr, tmp_path / "broker", flushDiskType="SYNC_FLUSH").start()
    yield broker
    broker.stop()


def test_kill_minus_nine_during_sync_flush_sends(py_namesrv, sync_broker):
    broker, topic, group = sync_broker, unique_name("Crash"), unique_name("CrashGroup")
    queues = 4
    mqadmin("updateTopic", "-b", broker.addr, "-t", topic, "-r", str(queues), "-w", str(queues),
            namesrv=py_namesrv.addr)
    run_peer("produce", namesrv=py_namesrv.addr, topic=topic, count=40, body="before-{i}")
    *_, done = run_peer("consume", namesrv=py_namesrv.addr, topic=topic, group=group, count=40, timeout_ms=60000)
    assert done["count"] == 40
    time.sleep(1)  # the consumer's last oneway offset update
    committed = _committed(broker.addr, group, topic, queues)
    assert sum(committed.values()) >= 36, committed
    deadline = time.monotonic() + 20
    while _persisted(broker.store_dir, group, topic) != committed:
        assert time.monotonic() < deadline, "the committed offsets were not persisted within 20 s"
        time.sleep(0.2)

    producer = start_peer("produce", namesrv=py_namesrv.addr, topic=topic, count=100_000, body="stream-{i}",
                          retries=0, timeout_ms=3000)
    acked: list[dict] = []
    try:
        assert producer.stdout is not None
        for line in producer.stdout:
            item = json.loads(line)
            if "msgId" in item:
                acked.append(item)
            if len(acked) == ACKS_BEFORE_KILL:
                broker.kill()
                break
        for line in producer.stdout:
            item = json.loads(line)
            if "msgId" in item:
                acked.append(item)
    finally:
        producer.wait(timeout=60)
    assert len(acked) >= ACKS_BEFORE_KILL
    assert {item["status"] for item in acked} == {"SEND_OK"}
    assert (broker.store_dir / "abort").exists(), "kill -9 leaves the abort file"

    commit_log = broker.store_dir / "commitlog"
    end, last_record = _valid_end(commit_log)
    _tear(commit_log, end, last_record)
    broker.start()
    assert "abnormal" in broker.log_text()
    runtime = json.loads(wire.request(broker.addr, wire.GET_BROKER_RUNTIME_INFO)[1])["table"]
    assert int(runtime["commitLogMaxOffset"]) == end, "recovery cuts the torn record"

    assert _committed(broker.addr, group, topic, queues) == committed, "committed offsets survive the crash"
    stored = _stored(broker.addr, topic, queues)
    assert stored >= 40 + len(acked)
    after = run_peer("produce", namesrv=py_namesrv.addr, topic=topic, count=5, body="after-{i}")
    assert [s["status"] for s in after] == ["SEND_OK"] * 5

    *fresh, done = run_peer("consume", namesrv=py_namesrv.addr, topic=topic, group=unique_name("CrashFresh"),
                            count=stored + 5, timeout_ms=90000, timeout=150)
    assert done["count"] == stored + 5 and not done["timedOut"]
    ids = {m["msgId"] for m in fresh}
    assert {item["msgId"] for item in acked} <= ids, "every acknowledged send is consumed"
    assert {item["msgId"] for item in after} <= ids

    rest = stored + 5 - sum(committed.values())
    *resumed, done = run_peer("consume", namesrv=py_namesrv.addr, topic=topic, group=group, count=rest,
                              timeout_ms=90000, timeout=150)
    assert done["count"] == rest and not done["timedOut"]
    assert all(m["queueOffset"] >= committed[m["queueId"]] for m in resumed), \
        "the group resumes from its committed offsets"
    assert len({(m["queueId"], m["queueOffset"]) for m in resumed}) == rest
