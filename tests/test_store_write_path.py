"""The store's compiled write path against its pure-Python twin, and the one way into the store.

The same records go into two stores, one written by the compiled ``_write_path`` and one by the twin
``_write_path_py``, on one fixed clock: the same results and refusals, the same arrival notices, and byte for
byte the same CommitLog, ConsumeQueue and index files, over files that roll. Records of several topics and
queues share a put, as records built elsewhere (a front process) will.
"""
from __future__ import annotations

import itertools
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketmq_py import codec
from rocketmq_py.common.sysflag import TRANSACTION_COMMIT_TYPE, TRANSACTION_NOT_TYPE, TRANSACTION_TYPE_MASK
from rocketmq_py.store import (
    MessageStore,
    MessageStoreConfig,
    PutMessageStatus,
    StoreMessage,
    encode_record,
    layout,
    message_store,
    write_path,
)
from rocketmq_py.store.consume_queue import UNIT, ConsumeQueue


def test_the_expected_implementation_runs(expected_implementation):
    assert write_path.IMPLEMENTATION == expected_implementation("rocketmq_py.store._write_path")


#: Small files: a few puts roll the CommitLog, every ConsumeQueue and the index.
SMALL = dict(mapped_file_size_commit_log=4096, mapped_file_size_consume_queue=5 * UNIT, max_hash_slot_num=8,
             max_index_num=12)
V4 = bytes([10, 0, 0, 5]) + (41234).to_bytes(4, "big")
V6 = bytes(15) + b"\x01" + (10911).to_bytes(4, "big")
TOPICS = ["A", "B", "SCHEDULE_TOPIC_XXXX"]
#: Transaction kinds: plain, prepared, commit, rollback (the middle two with another bit set as well).
SYS_FLAGS = [0, 0, 0x4, 0x8 | 0x2, 0xC]


def open_store(root: Path, writer_module, monkeypatch) -> tuple[MessageStore, list[tuple[object, ...]]]:
    """A loaded store written by ``writer_module``'s StoreWriter, on a clock that ticks once a put."""
    monkeypatch.setattr(message_store, "StoreWriter", writer_module.StoreWriter)
    store = MessageStore(MessageStoreConfig(store_path_root_dir=str(root), **SMALL))
    store.load()
    ticks = itertools.count(1_700_000_000_000)
    store.commit_log.clock = lambda: next(ticks)
    arrivals: list[tuple[object, ...]] = []
    store.add_arrival_listener(arrivals.extend)
    return store, arrivals


def store_files(root: Path) -> dict[str, bytes]:
    files = {}
    for directory in ("commitlog", "consumequeue"):
        for path in sorted(p for p in (root / directory).rglob("*") if p.is_file()):
            files[str(path.relative_to(root))] = path.read_bytes()
    index = root / "index"
    if index.is_dir():
        for number, path in enumerate(sorted(p for p in index.iterdir() if p.is_file())):
            files[f"index/#{number}"] = path.read_bytes()
    return files


def outcome(put) -> tuple[object, ...]:
    return put.status, put.physical_offsets, put.queue_offsets, put.store_timestamp, put.wrote_bytes


words = st.text(st.sampled_from("abcxyz"), min_size=1, max_size=4)
messages = st.builds(
    lambda topic, queue_id, sys_flag, body, tags, keys, uniq, level, born, stored: encode_record(
        topic.encode(), body,
        codec.properties_to_string({name: value for name, value in (
            ("TAGS", tags), ("KEYS", keys), ("UNIQ_KEY", uniq),
            ("DELAY", str(level) if topic == "SCHEDULE_TOPIC_XXXX" else None)) if value is not None}).encode(),
        queue_id, 0, sys_flag, 1_690_000_000_000, born, stored, 0, 77 if sys_flag & 0xC else 0),
    st.sampled_from(TOPICS), st.integers(0, 3), st.sampled_from(SYS_FLAGS), st.binary(max_size=300),
    st.none() | words, st.none() | st.lists(words, max_size=3).map(" ".join), st.none() | words, st.integers(1, 18),
    st.sampled_from([V4, V6]), st.sampled_from([V4, V6]))
puts = st.lists(st.lists(messages, min_size=1, max_size=4).map(b"".join) | st.binary(max_size=60),
                min_size=1, max_size=25)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(puts)
def test_compiled_and_twin_writers_leave_the_same_store(tmp_path_factory, monkeypatch, twins, buffers):
    writers = twins("rocketmq_py.store._write_path")
    root = tmp_path_factory.mktemp("stores")
    stores = [open_store(root / name, module, monkeypatch) for name, module in (("twin", writers.twin),
                                                                               ("compiled", writers.compiled))]
    try:
        for records in buffers:
            results = [outcome(store._writer.put(records)) for store, _ in stores]
            assert results[0] == results[1]
        assert stores[0][1] == stores[1][1], "the same arrival notices"
        files = [store_files(root / name) for name in ("twin", "compiled")]
        assert files[0].keys() == files[1].keys()
        for name in files[0]:
            assert files[0][name] == files[1][name], name
    finally:
        for store, _ in stores:
            store.shutdown()


@settings(max_examples=60, deadline=None)
@given(st.lists(messages, min_size=1, max_size=12).map(b"".join),
       st.dictionaries(st.tuples(st.sampled_from(TOPICS), st.integers(0, 3)), st.integers(0, 1 << 40), max_size=4))
def test_both_writers_read_and_number_records_alike(twins, records, table):
    """The two functions the replicated CommitLog shares with the write path agree between the twins: queue
    offsets continue each topic-queue's table entry, in record order, runs of one queue or interleaved."""
    writers = twins("rocketmq_py.store._write_path")
    numbered = []
    for module in (writers.twin, writers.compiled):
        infos = module.read_records(records)
        assert [(i.topic, i.queue_id, i.size) for i in infos] == \
            [(i.topic, i.queue_id, i.size) for i in writers.twin.read_records(records)]
        numbered.append(module.assign_queue_offsets(dict(table), infos))
    assert numbered[0] == numbered[1]
    queue_offsets, next_offsets = numbered[0]
    for key, following in next_offsets.items():
        taken = [offset for info, offset in zip(writers.twin.read_records(records), queue_offsets)
                 if (info.topic, info.queue_id) == key
                 and info.sys_flag & TRANSACTION_TYPE_MASK in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE)]
        assert taken == list(range(table.get(key, 0), following))
    assert writers.twin.read_records(records[:-1]) == [] and writers.compiled.read_records(records[:-1]) == []


def test_a_put_of_several_queues_takes_each_queues_next_offsets_with_one_store_time(tmp_path, monkeypatch):
    store, arrivals = open_store(tmp_path, write_path, monkeypatch)
    try:
        def record(topic: str, queue_id: int, sys_flag: int = 0) -> bytearray:
            return encode_record(topic.encode(), b"body", b"TAGS\x01t\x02KEYS\x01k", queue_id, 0, sys_flag, 1, V4,
                                 V4, 0, 0)

        first = store._writer.put(record("A", 0) + record("A", 0))
        mixed = [record("A", 0), record("B", 2), record("A", 1), record("A", 0, 0x4), record("B", 2)]
        put = store._writer.put(b"".join(mixed))
        assert put.status == PutMessageStatus.PUT_OK
        assert put.queue_offsets == [2, 0, 0, 0, 1], "a prepared record takes no queue offset"
        sizes = [len(r) for r in mixed]
        assert put.physical_offsets == [first.physical_offsets[0] + first.wrote_bytes + sum(sizes[:i])
                                        for i in range(5)]
        assert put.wrote_bytes == sum(sizes) and put.store_timestamp == first.store_timestamp + 1
        assert store.get_max_offset_in_queue("A", 0) == 3 and store.get_max_offset_in_queue("B", 2) == 2
        assert [(a[0], a[1], a[2]) for a in arrivals[2:]] == [("A", 0, 3), ("B", 2, 1), ("A", 1, 1), ("A", 0, 1),
                                                             ("B", 2, 2)]
        assert {a[4] for a in arrivals[2:]} == {put.store_timestamp}
        found = store.query_message("A", "k", 10, 0, 1 << 62)
        assert len(found.buffers) == 5, "every record of topic A is indexed under its key, the prepared one too"
    finally:
        store.shutdown()


def test_records_that_do_not_read_or_name_no_directory_are_refused_and_nothing_is_written(tmp_path, monkeypatch):
    store, arrivals = open_store(tmp_path, write_path, monkeypatch)
    try:
        good = encode_record(b"A", b"x", b"", 0, 0, 0, 1, V4, V4, 0, 0)
        before = store_files(tmp_path)
        torn = good + good[:-1]
        assert store._writer.put(torn).status == PutMessageStatus.MESSAGE_ILLEGAL
        assert store._writer.put(b"").status == PutMessageStatus.MESSAGE_ILLEGAL
        too_long = encode_record(b"A", bytes(4096), b"", 0, 0, 0, 1, V4, V4, 0, 0)
        assert store._writer.put(too_long).status == PutMessageStatus.MESSAGE_ILLEGAL
        dot_dot = encode_record(b"..", b"x", b"", 0, 0, 0, 1, V4, V4, 0, 0)
        assert store._writer.put(good + dot_dot).status == PutMessageStatus.MESSAGE_ILLEGAL
        assert store_files(tmp_path) == before and arrivals == []
        assert store.commit_log.max_offset == 0
    finally:
        store.shutdown()


async def test_put_records_waits_for_the_group_commit_under_sync_flush(tmp_path):
    store = MessageStore(MessageStoreConfig(store_path_root_dir=str(tmp_path), flush_disk_type="SYNC_FLUSH"))
    store.load()
    store.start()
    try:
        records = encode_record(b"T", b"x", b"", 1, 0, 0, 1, V4, V4, 0, 0)
        put = await store.put_records(records)
        assert put.status == PutMessageStatus.PUT_OK and put.queue_offsets == [0]
        assert store.commit_log.queue.flushed_where >= put.physical_offsets[0] + put.wrote_bytes
        unwaited = await store.put_records(records, wait_store_msg_ok=False)
        assert unwaited.status == PutMessageStatus.PUT_OK and unwaited.queue_offsets == [1]
    finally:
        store.shutdown()


async def test_a_store_that_is_not_running_refuses_records(tmp_path):
    store = MessageStore(MessageStoreConfig(store_path_root_dir=str(tmp_path)))
    store.load()
    try:
        records = encode_record(b"T", b"x", b"", 1, 0, 0, 1, V4, V4, 0, 0)
        assert store.append_records(records).status == PutMessageStatus.SERVICE_NOT_AVAILABLE
        assert (await store.put_records(records)).status == PutMessageStatus.SERVICE_NOT_AVAILABLE
    finally:
        store.shutdown()


async def test_recovery_and_the_reput_dispatch_through_the_same_routine(tmp_path, monkeypatch, twins):
    """A store whose ConsumeQueues and index are lost rebuilds them from the CommitLog, through the writer's
    dispatch, to the bytes the puts built (the twin and the compiled writer alike)."""
    writers = twins("rocketmq_py.store._write_path")
    modules = [("twin", writers.twin)]
    if layout.IMPLEMENTATION == "cython":  # the compiled writer dispatches the compiled layout's RecordInfos
        modules.append(("compiled", writers.compiled))
    built = tmp_path / "built"
    store, _ = open_store(built, write_path, monkeypatch)
    store.start()
    try:
        for number in range(60):
            message = StoreMessage(["A", "B"][number % 2], os.urandom(50 + number), queue_id=number % 3,
                                   properties={"KEYS": f"k{number}", "TAGS": "t"}, sys_flag=[0, 0x4, 0x8][number % 3])
            assert (await store.put_message(message)).status == PutMessageStatus.PUT_OK
    finally:
        store.shutdown()
    expected = store_files(built)
    for name, module in modules:
        root = tmp_path / name
        shutil.copytree(built / "commitlog", root / "commitlog")
        again, _ = open_store(root, module, monkeypatch)
        again.start()  # the reput at start dispatches the CommitLog into new ConsumeQueues and a new index
        again.shutdown()
        rebuilt = store_files(root)
        assert rebuilt.keys() == expected.keys(), name
        for key in expected:
            assert rebuilt[key] == expected[key], (name, key)


def test_put_unit_is_the_only_consume_queue_writer_and_pads_a_queue_that_starts_late(tmp_path):
    queue = ConsumeQueue("T", 0, tmp_path / "cq", file_size=10 * UNIT)
    assert write_path.put_unit(queue, 5000, 100, 7, 13)
    assert queue.min_offset_in_queue == 13 and queue.max_offset_in_queue == 14
    units = queue.read_units(13)
    assert units == [(5000, 100, 7)]
    assert write_path.put_unit(queue, 4000, 100, 7, 12), "a unit before the last CommitLog offset is there already"
    assert queue.max_offset_in_queue == 14
