"""Appending to the store: records, queue offsets, batches, file roll-over, transactions, delays, limits."""
from __future__ import annotations

import struct

import pytest

from rocketmq_py import codec
from rocketmq_py.common.magic_codes import BLANK_MAGIC_CODE
from rocketmq_py.store import (
    MessageStore,
    MessageStoreConfig,
    PutMessageStatus,
    StoreError,
    StoreMessage,
    StoreMessageBatch,
)

FILE_SIZE = 64 * 1024


def config(tmp_path, **overrides) -> MessageStoreConfig:
    values = dict(store_path_root_dir=str(tmp_path / "store"), mapped_file_size_commit_log=FILE_SIZE,
                  mapped_file_size_consume_queue=100 * 20, max_hash_slot_num=64, max_index_num=256)
    values.update(overrides)
    return MessageStoreConfig(**values)


@pytest.fixture
def store(tmp_path):
    store = MessageStore(config(tmp_path))
    store.load()
    store.start()
    yield store
    store.shutdown()


def message(topic="T", body=b"body", queue_id=0, **properties) -> StoreMessage:
    return StoreMessage(topic, body, queue_id=queue_id, properties=dict(properties), born_host="10.0.0.9:4321",
                        store_host="127.0.0.1:10911", born_timestamp=123)


async def test_put_assigns_queue_offsets_per_topic_queue_and_offset_ids(store):
    results = [await store.put_message(message(queue_id=q % 2)) for q in range(5)]
    assert [r.status for r in results] == [PutMessageStatus.PUT_OK] * 5
    assert [r.append_result.logics_offset for r in results] == [0, 0, 1, 1, 2]
    other = await store.put_message(message(topic="U"))
    assert other.append_result.logics_offset == 0
    first = results[0].append_result
    assert first.wrote_offset == 0
    assert results[1].append_result.wrote_offset == first.wrote_bytes
    assert codec.decode_offset_msg_id(results[1].append_result.msg_id) == ("127.0.0.1", 10911, first.wrote_bytes)
    assert store.get_max_offset_in_queue("T", 0) == 3 and store.get_max_offset_in_queue("T", 1) == 2


async def test_stored_record_is_the_reference_layout(store):
    result = await store.put_message(message(body=b"payload", TAGS="TagA", KEYS="k1"))
    record = store.select_one_message_by_offset(result.append_result.wrote_offset)
    [decoded] = codec.decode_store_records(record)
    assert (decoded.topic, decoded.body, decoded.tags, decoded.keys) == ("T", b"payload", "TagA", "k1")
    assert decoded.born_host == "10.0.0.9:4321" and decoded.store_host == "127.0.0.1:10911"
    assert decoded.store_timestamp == result.append_result.store_timestamp
    assert decoded.body_crc == codec.crc32_masked(b"payload")
    reference = codec.encode_store_record(
        topic="T", body=b"payload", properties=codec.properties_to_string({"TAGS": "TagA", "KEYS": "k1"}),
        born_timestamp=123, born_host="10.0.0.9:4321", store_host="127.0.0.1:10911",
        store_timestamp=decoded.store_timestamp)
    assert record == reference


async def test_properties_string_given_by_the_broker_is_stored_as_is(store):
    msg = message(TAGS="t", WAIT="true")
    msg.properties_string = "TAGS\x01t"
    result = await store.put_message(msg)
    [decoded] = codec.decode_store_records(store.select_one_message_by_offset(result.append_result.wrote_offset))
    assert decoded.properties == {"TAGS": "t"}


async def test_roll_over_writes_the_blank_marker_and_continues_in_the_next_file(store):
    body = b"x" * 20000
    results = [await store.put_message(message(body=body)) for _ in range(4)]
    assert all(r.is_ok for r in results)
    files = store.commit_log.queue.files
    assert [f.file_name for f in files] == ["00000000000000000000", f"{FILE_SIZE:020d}"]
    end_of_first = 3 * results[0].append_result.wrote_bytes
    assert results[3].append_result.wrote_offset == FILE_SIZE
    blank = files[0].mm[end_of_first:end_of_first + 8]
    assert struct.unpack(">ii", blank) == (FILE_SIZE - end_of_first, BLANK_MAGIC_CODE)
    got = store.get_messages("g", "T", 0, 0, 32)
    assert got.message_count == 4 and got.next_begin_offset == 4


async def test_batch_is_stored_as_consecutive_records(store):
    await store.put_message(message(queue_id=1))
    items = [(0, f"b{i}".encode(), {"UNIQ_KEY": f"U{i}", "KEYS": f"bk{i}"}) for i in range(5)]
    result = await store.put_messages(StoreMessageBatch("T", codec.encode_batch(items), queue_id=1,
                                                        properties={"WAIT": "true"}))
    assert result.is_ok
    append = result.append_result
    assert (append.msg_num, append.logics_offset) == (5, 1)
    assert len(append.msg_id.split(",")) == 5 and len(append.physical_offsets) == 5
    got = store.get_messages("g", "T", 1, 1, 32)
    decoded = codec.decode_store_records(got.body)
    assert [m.body for m in decoded] == [f"b{i}".encode() for i in range(5)]
    assert [m.queue_offset for m in decoded] == [1, 2, 3, 4, 5]
    assert decoded[0].properties == {"UNIQ_KEY": "U0", "KEYS": "bk0", "WAIT": "true"}
    assert [m.offset_msg_id for m in decoded] == append.msg_id.split(",")
    assert store.query_message("T", "bk3", 32, 0, 2 ** 62).buffer_total_size > 0


async def test_batch_that_does_not_fit_moves_to_the_next_file_whole(store):
    await store.put_message(message(body=b"x" * 50000))
    items = [(0, b"y" * 3000, {}) for _ in range(6)]
    result = await store.put_messages(StoreMessageBatch("T", codec.encode_batch(items)))
    assert result.is_ok and result.append_result.wrote_offset == FILE_SIZE


async def test_illegal_batches_are_refused(store):
    body = codec.encode_batch([(0, b"x", {})])
    delayed = await store.put_messages(StoreMessageBatch("T", body, properties={"DELAY": "2"}))
    prepared = await store.put_messages(StoreMessageBatch("T", body, sys_flag=0x4))
    garbage = await store.put_messages(StoreMessageBatch("T", b"\x00\x00\x00\x20garbage"))
    assert [r.status for r in (delayed, prepared, garbage)] == [PutMessageStatus.MESSAGE_ILLEGAL] * 3


async def test_prepared_and_rollback_records_are_not_enqueued(store):
    prepared = await store.put_message(StoreMessage("T", b"half", sys_flag=0x4))
    rollback = await store.put_message(StoreMessage("T", b"rb", sys_flag=0xC))
    committed = await store.put_message(StoreMessage("T", b"commit", sys_flag=0x8))
    assert [r.append_result.logics_offset for r in (prepared, rollback, committed)] == [0, 0, 0]
    assert store.get_max_offset_in_queue("T", 0) == 1
    [decoded] = codec.decode_store_records(store.get_messages("g", "T", 0, 0, 8).body)
    assert decoded.body == b"commit"


async def test_delayed_message_goes_to_the_schedule_topic(store):
    result = await store.put_message(message(body=b"later", queue_id=3, DELAY="3", TAGS="t"))
    assert result.is_ok
    assert store.get_max_offset_in_queue("SCHEDULE_TOPIC_XXXX", 2) == 1
    [unit] = store.get_consume_queue("SCHEDULE_TOPIC_XXXX", 2).read_units(0)
    assert unit[2] == result.append_result.store_timestamp + 10_000, "tags code is the delivery time"
    [decoded] = codec.decode_store_records(store.get_messages("g", "SCHEDULE_TOPIC_XXXX", 2, 0, 1).body)
    assert decoded.properties["REAL_TOPIC"] == "T" and decoded.properties["REAL_QID"] == "3"
    too_far = await store.put_message(message(DELAY="99"))
    assert too_far.is_ok and store.get_max_offset_in_queue("SCHEDULE_TOPIC_XXXX", 17) == 1


async def test_size_limits(tmp_path):
    store = MessageStore(config(tmp_path, max_message_size=1000))
    store.load()
    store.start()
    try:
        assert (await store.put_message(message(body=b"x" * 1001))).status == PutMessageStatus.MESSAGE_ILLEGAL
        assert (await store.put_message(message(topic="t" * 128))).status == PutMessageStatus.MESSAGE_ILLEGAL
        long_properties = message(big="v" * 33000)
        assert (await store.put_message(long_properties)).status == PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
        assert (await store.put_message(message(body=b"x" * 1000))).is_ok
    finally:
        store.shutdown()


async def test_record_larger_than_a_file_is_refused(tmp_path):
    store = MessageStore(config(tmp_path, max_message_size=FILE_SIZE * 2))
    store.load()
    store.start()
    try:
        assert (await store.put_message(message(body=b"x" * FILE_SIZE))).status == PutMessageStatus.MESSAGE_ILLEGAL
    finally:
        store.shutdown()


async def test_puts_are_refused_when_not_running_or_slave(tmp_path):
    store = MessageStore(config(tmp_path))
    store.load()
    assert (await store.put_message(message())).status == PutMessageStatus.SERVICE_NOT_AVAILABLE
    store.shutdown()
    slave = MessageStore(config(tmp_path, broker_role="SLAVE"))
    slave.load()
    slave.start()
    try:
        assert (await slave.put_message(message())).status == PutMessageStatus.SERVICE_NOT_AVAILABLE
    finally:
        slave.shutdown()


def test_store_directory_is_locked(tmp_path):
    first = MessageStore(config(tmp_path))
    first.load()
    first.start()
    try:
        second = MessageStore(config(tmp_path))
        with pytest.raises(StoreError, match="locked by a running broker"):
            second.load()  # before it reads anything
        second.shutdown()
    finally:
        first.shutdown()


def test_bad_config_values_are_refused():
    with pytest.raises(ValueError, match="flushDiskType"):
        MessageStoreConfig(flush_disk_type="SOMETIMES")
    with pytest.raises(ValueError, match="messageDelayLevel"):
        MessageStoreConfig(message_delay_level="1s 2x")
