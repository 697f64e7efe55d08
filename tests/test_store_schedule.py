"""Delayed messages: stored in SCHEDULE_TOPIC_XXXX, put back on their real topic when due, with the
level offsets kept in delayOffset.json."""
from __future__ import annotations

import asyncio
import threading
import time

from rocketmq_py import codec
from rocketmq_py.store import GetMessageStatus, MessageStore, MessageStoreConfig, StoreMessage
from rocketmq_py.store.config_files import DelayOffsetTable


def open_store(tmp_path) -> MessageStore:
    store = MessageStore(MessageStoreConfig(
        store_path_root_dir=str(tmp_path / "store"), mapped_file_size_commit_log=64 * 1024,
        mapped_file_size_consume_queue=100 * 20, max_hash_slot_num=64, max_index_num=256,
        message_delay_level="1s 2s 1h"))
    store.load()
    store.start()
    return store


async def wait_for(predicate, timeout=8.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.05)
    return False


async def test_delayed_message_is_delivered_on_its_real_topic(tmp_path):
    store = open_store(tmp_path)
    arrivals = []
    store.add_arrival_listener(lambda put: arrivals.extend((arrival[0], threading.get_ident()) for arrival in put))
    try:
        sent_at = time.time()
        due = await store.put_message(StoreMessage("T", b"soon", queue_id=1, properties={"DELAY": "1", "TAGS": "x"}))
        later = await store.put_message(StoreMessage("T", b"much later", queue_id=1, properties={"DELAY": "3"}))
        assert due.is_ok and later.is_ok
        assert store.get_messages("g", "T", 1, 0, 8).status == GetMessageStatus.NO_MESSAGE_IN_QUEUE
        assert await wait_for(lambda: store.get_max_offset_in_queue("T", 1) == 1)
        assert time.time() - sent_at >= 1.0
        [message] = codec.decode_store_records(store.get_messages("g", "T", 1, 0, 8).body)
        assert message.body == b"soon" and message.tags == "x"
        assert message.properties["REAL_TOPIC"] == "T" and message.properties["REAL_QID"] == "1"
        assert ("T", threading.get_ident()) in arrivals, "the listener runs on the loop's thread"
        await asyncio.sleep(0.3)
        assert store.get_max_offset_in_queue("T", 1) == 1, "the one-hour message is not due"
    finally:
        store.shutdown()
    offsets = DelayOffsetTable(tmp_path / "store" / "config")
    assert offsets.load()
    assert offsets.offset_table[1] == 1 and offsets.offset_table.get(3, 0) == 0
    again = open_store(tmp_path)
    try:
        await asyncio.sleep(1.5)
        assert again.get_max_offset_in_queue("T", 1) == 1, "a delivered message is not delivered twice"
    finally:
        again.shutdown()
