"""Issue 5, store moves: a store directory written by the official Java broker is read by our
MessageStore (every message at its queue offset, identical content, same ids, index and time lookups),
and a store written by ours is opened by the Java broker and read completely by a Java consumer
(and by mqadmin's key and id queries, which use our index and record layout)."""
from __future__ import annotations

import asyncio
import base64
import time
import uuid

import pytest
from harness import JavaBroker, mqadmin, run_peer
from harness.processes import free_broker_port

from rocketmq_py import codec
from rocketmq_py.common.topic_config import TopicConfig
from rocketmq_py.store import MessageStore, MessageStoreConfig, StoreMessage, StoreMessageBatch
from rocketmq_py.store.config_files import TopicConfigTable

# The harness broker's sizes (compat-tests/harness/processes.py): both sides must agree on them.
STORE_SIZES = {
    "mapped_file_size_commit_log": 64 * 1024 * 1024,
    "mapped_file_size_consume_queue": 30000 * 20,
    "max_hash_slot_num": 50000,
    "max_index_num": 200000,
}


def store_config(root) -> MessageStoreConfig:
    return MessageStoreConfig(store_path_root_dir=str(root), store_path_commit_log=str(root / "commitlog"),
                              **STORE_SIZES)


def decode_one(record: bytes):
    [message] = codec.decode_store_records(record)
    return message


@pytest.fixture(scope="module")
def java_written_store(java_namesrv, java_build, tmp_path_factory):
    """A Java broker's store after 60 sends to a 4-queue topic and a clean stop; plus what was sent."""
    broker = JavaBroker(java_namesrv, build=java_build, workdir=tmp_path_factory.mktemp("java-store"),
                        broker_name=f"broker-js-{uuid.uuid4().hex[:6]}")
    broker.start()
    topic = f"JavaStore_{uuid.uuid4().hex[:8]}"
    try:
        mqadmin("updateTopic", "-b", broker.addr, "-t", topic, "-r", "4", "-w", "4", namesrv=java_namesrv.addr)
        sent = run_peer("produce", namesrv=java_namesrv.addr, topic=topic, count=40, tags="TagA",
                        keys="key-{i} other-{i}", body="java-body-{i}", prop=["color=blue"])
        sent += run_peer("produce", namesrv=java_namesrv.addr, topic=topic, count=20, tags="TagB",
                         keys="big-{i}", body_size=5000)  # compressed by the producer (>= 4 KiB)
    finally:
        broker.stop()
    assert not (broker.store_dir / "abort").exists(), "the Java broker did not stop cleanly"
    return broker, topic, sent


def test_our_store_reads_every_java_message_at_its_queue_offset(java_written_store):
    broker, topic, sent = java_written_store
    store = MessageStore(store_config(broker.store_dir))
    store.load()
    try:
        assert store.last_exit_ok
        for item in sent:
            result = store.get_messages("g", topic, item["queueId"], item["queueOffset"], 1)
            assert result.status.name == "FOUND", item
            message = decode_one(result.body)
            assert message.msg_id == item["msgId"]
            assert message.offset_msg_id == item["offsetMsgId"]
            assert (message.queue_id, message.queue_offset) == (item["queueId"], item["queueOffset"])
            assert message.store_host == broker.addr
            assert message.topic == topic
            assert message.properties.get("CLUSTER") == broker.cluster
        java_bodies = sorted(decode_one(store.select_one_message_by_offset(
            codec.decode_offset_msg_id(item["offsetMsgId"])[2])).body for item in sent)
        assert java_bodies == sorted([f"java-body-{i}".encode() for i in range(40)] + [
            bytes((ord("a") + (k + i) % 26) for k in range(5000)) for i in range(20)])
        per_queue = {}
        for item in sent:
            per_queue[item["queueId"]] = max(per_queue.get(item["queueId"], 0), item["queueOffset"] + 1)
        for queue_id, count in per_queue.items():
            assert store.get_max_offset_in_queue(topic, queue_id) == count
            assert store.get_min_offset_in_queue(topic, queue_id) == 0
    finally:
        store.shutdown()


def test_our_index_and_time_lookups_on_the_java_store(java_written_store):
    broker, topic, sent = java_written_store
    store = MessageStore(store_config(broker.store_dir))
    store.load()
    try:
        found = store.query_message(topic, "other-7", 32, 0, 2 ** 62)
        [message] = codec.decode_store_records(found.body)
        assert message.body == b"java-body-7"
        unique = store.query_message(topic, sent[3]["msgId"], 32, 0, 2 ** 62)
        assert decode_one(unique.body).msg_id == sent[3]["msgId"]
        looked_up = store.lookup_message_by_offset(codec.decode_offset_msg_id(sent[0]["offsetMsgId"])[2])
        assert looked_up is not None and looked_up.msg_id == sent[0]["msgId"]
        queue_id = sent[-1]["queueId"]
        first_time = store.get_earliest_message_time(topic, queue_id)
        assert first_time > 0
        assert store.get_offset_in_queue_by_time(topic, queue_id, first_time) == 0
        tag_b = store.get_messages("g", topic, queue_id, 0, 32, {codec.java_string_hash("TagB")})
        assert tag_b.status.name == "FOUND"
        assert {m.tags for m in codec.decode_store_records(tag_b.body)} == {"TagB"}
    finally:
        store.shutdown()


def test_java_broker_reopens_the_store_after_we_appended_to_it(java_written_store, java_namesrv, java_build):
    """Round trip: Java wrote, we append more, the Java broker opens it again and a consumer reads all."""
    broker, topic, sent = java_written_store
    store = MessageStore(store_config(broker.store_dir))
    store.load()
    store.start()

    async def append():
        for i in range(12):
            result = await store.put_message(StoreMessage(
                topic, f"python-body-{i}".encode(), queue_id=i % 4, properties={"TAGS": "TagP", "KEYS": f"py-{i}"},
                born_host="127.0.0.1:40000", store_host=broker.addr, born_timestamp=int(time.time() * 1000)))
            assert result.is_ok

    try:
        asyncio.run(append())
    finally:
        store.shutdown()
    broker.restart()
    try:
        lines = run_peer("consume", namesrv=java_namesrv.addr, topic=topic, group=f"RoundTrip_{uuid.uuid4().hex[:8]}",
                         count=len(sent) + 12, timeout_ms=60000)
        *received, done = lines
        assert done["count"] == len(sent) + 12 and not done["timedOut"]
        bodies = {base64.b64decode(m["bodyBase64"]) for m in received}
        assert {f"python-body-{i}".encode() for i in range(12)} <= bodies
        assert {f"java-body-{i}".encode() for i in range(40)} <= bodies
    finally:
        broker.stop()


@pytest.fixture(scope="module")
def python_written_store(tmp_path_factory):
    """Our store with singles, a batch, tags, keys and a CommitLog file roll-over, stopped cleanly.

    Records carry the address the Java broker will listen on, as a moved store carries its broker's.
    """
    root = tmp_path_factory.mktemp("py-store") / "store"
    port = free_broker_port()
    store_host = f"127.0.0.1:{port}"
    topic = f"PyStore_{uuid.uuid4().hex[:8]}"
    store = MessageStore(store_config(root))
    store.load()
    store.start()
    expected: dict[bytes, dict] = {}

    async def fill():
        now = int(time.time() * 1000)
        for i in range(100):
            body = f"py-single-{i}".encode()
            properties = {"TAGS": "TagA" if i % 2 else "TagB", "KEYS": f"pykey-{i}", "UNIQ_KEY": f"{i:032X}"}
            result = await store.put_message(StoreMessage(topic, body, queue_id=i % 4, properties=properties,
                                                          born_host="10.1.1.1:5555", born_timestamp=now,
                                                          store_host=store_host))
            assert result.is_ok
            expected[body] = {"tags": properties["TAGS"], "msgId": properties["UNIQ_KEY"],
                              "offsetMsgId": result.append_result.msg_id}
        items = [(0, f"py-batch-{i}".encode(), {"UNIQ_KEY": f"B{i:031X}", "TAGS": "TagA"}) for i in range(10)]
        result = await store.put_messages(StoreMessageBatch(topic, codec.encode_batch(items), queue_id=2,
                                                            properties={"WAIT": "true"}, born_timestamp=now,
                                                            store_host=store_host))
        assert result.is_ok and result.append_result.msg_num == 10
        for (_, body, properties), msg_id in zip(items, result.append_result.msg_id.split(",")):
            expected[body] = {"tags": "TagA", "msgId": properties["UNIQ_KEY"], "offsetMsgId": msg_id}
        big = bytes(range(256)) * 4096  # 1 MiB: 70 of them cross the 64 MiB CommitLog file
        for i in range(70):
            body = big[:-1] + bytes([i])
            result = await store.put_message(StoreMessage(topic, body, queue_id=3, properties={"TAGS": "Big"},
                                                          born_timestamp=now, store_host=store_host))
            assert result.is_ok
            expected[body] = {"tags": "Big", "msgId": result.append_result.msg_id,
                              "offsetMsgId": result.append_result.msg_id}

    try:
        asyncio.run(fill())
        assert len(store.commit_log.queue.files) == 2, "the big messages must roll over to a second file"
    finally:
        store.shutdown()
    topics = TopicConfigTable(root / "config")
    topics.table[topic] = TopicConfig(topic, 4, 4, 6)
    topics.persist()
    return root, port, topic, expected


def test_java_broker_serves_every_message_of_our_store(python_written_store, java_namesrv, java_build,
                                                       tmp_path_factory):
    root, port, topic, expected = python_written_store
    broker = JavaBroker(java_namesrv, build=java_build, workdir=tmp_path_factory.mktemp("java-on-py"), port=port,
                        broker_name=f"broker-pys-{uuid.uuid4().hex[:6]}",
                        extra_config={"storePathRootDir": root, "storePathCommitLog": root / "commitlog",
                                      "maxMessageSize": 2 * 1024 * 1024})
    broker.start()
    try:
        lines = run_peer("consume", namesrv=java_namesrv.addr, topic=topic, group=f"PyStore_{uuid.uuid4().hex[:8]}",
                         count=len(expected), timeout_ms=90000, timeout=180)
        *received, done = lines
        assert done["count"] == len(expected) and not done["timedOut"]
        seen = {}
        for message in received:
            body = base64.b64decode(message["bodyBase64"])
            seen[body] = message
        assert set(seen) == set(expected)
        for body, want in expected.items():
            got = seen[body]
            assert got["tags"] == want["tags"]
            assert got["msgId"] == want["msgId"]
            assert got["offsetMsgId"] == want["offsetMsgId"]
            assert got["topic"] == topic
        by_key = mqadmin("queryMsgByKey", "-t", topic, "-k", "pykey-17", namesrv=java_namesrv.addr)
        assert expected[b"py-single-17"]["msgId"] in by_key
        offset_id = expected[b"py-single-5"]["offsetMsgId"]
        by_id = mqadmin("queryMsgById", "-i", offset_id, namesrv=java_namesrv.addr)
        assert "pykey-5" in by_id
    finally:
        broker.stop()


def test_our_store_recovers_a_java_store_after_kill_minus_nine(java_namesrv, java_build, tmp_path):
    broker = JavaBroker(java_namesrv, build=java_build, workdir=tmp_path / "broker",
                        broker_name=f"broker-k9-{uuid.uuid4().hex[:6]}")
    broker.start()
    topic = f"JavaKill_{uuid.uuid4().hex[:8]}"
    try:
        mqadmin("updateTopic", "-b", broker.addr, "-t", topic, "-r", "2", "-w", "2", namesrv=java_namesrv.addr)
        sent = run_peer("produce", namesrv=java_namesrv.addr, topic=topic, count=30, body="k9-{i}")
    finally:
        broker.kill()
    assert (broker.store_dir / "abort").exists()
    store = MessageStore(store_config(broker.store_dir))
    store.load()
    try:
        assert not store.last_exit_ok
        for item in sent:
            result = store.get_messages("g", topic, item["queueId"], item["queueOffset"], 1)
            assert result.status.name == "FOUND"
            assert decode_one(result.body).msg_id == item["msgId"]
    finally:
        store.shutdown()


CHILD = """
import asyncio, sys, time
from rocketmq_py.store import MessageStore, MessageStoreConfig, StoreMessage
root, topic, store_host = sys.argv[1], sys.argv[2], sys.argv[3]
config = MessageStoreConfig(store_path_root_dir=root, store_path_commit_log=root + "/commitlog",
                            mapped_file_size_commit_log=64 * 1024 * 1024, mapped_file_size_consume_queue=30000 * 20,
                            max_hash_slot_num=50000, max_index_num=200000, flush_disk_type="SYNC_FLUSH")
store = MessageStore(config)
store.load()
store.start()

async def main():
    i = 0
    while True:
        result = await store.put_message(StoreMessage(topic, b"sync-%d" % i, queue_id=i % 2,
                                                      properties={"KEYS": "sk-%d" % i}, store_host=store_host,
                                                      born_timestamp=int(time.time() * 1000)))
        assert result.status.name == "PUT_OK"
        print(i, flush=True)
        i += 1

asyncio.run(main())
"""


def count_records(commit_log_dir) -> int:
    """Valid records in the CommitLog files, read without running any recovery."""
    from rocketmq_py.store import layout

    count = 0
    for path in sorted(commit_log_dir.iterdir()):
        data = path.read_bytes()
        position = 0
        while True:
            info = layout.check_record(data, position, len(data))
            if info.size <= 0:
                break
            position += info.size
            count += 1
    return count


def test_java_broker_recovers_our_store_after_kill_minus_nine(java_namesrv, java_build, tmp_path):
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    root = tmp_path / "store"
    topic = f"PyKill_{uuid.uuid4().hex[:8]}"
    port = free_broker_port()
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(root), topic, f"127.0.0.1:{port}"],
                             stdout=subprocess.PIPE, text=True, env=env)
    acked = []
    try:
        for line in child.stdout:
            acked.append(int(line))
            if len(acked) >= 300:
                break
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    assert len(acked) >= 300 and (root / "abort").exists()
    stored = count_records(root / "commitlog")
    assert stored >= len(acked)
    topics = TopicConfigTable(root / "config")
    topics.table[topic] = TopicConfig(topic, 2, 2, 6)
    topics.persist()
    broker = JavaBroker(java_namesrv, build=java_build, workdir=tmp_path / "broker", port=port,
                        broker_name=f"broker-pk9-{uuid.uuid4().hex[:6]}",
                        extra_config={"storePathRootDir": root, "storePathCommitLog": root / "commitlog"})
    broker.start()
    try:
        lines = run_peer("consume", namesrv=java_namesrv.addr, topic=topic, group=f"PyKill_{uuid.uuid4().hex[:8]}",
                         count=stored, timeout_ms=60000)
        *received, done = lines
        bodies = {base64.b64decode(m["bodyBase64"]) for m in received}
        assert {b"sync-%d" % i for i in acked} <= bodies
        assert not done["timedOut"]
    finally:
        broker.stop()
