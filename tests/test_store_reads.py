"""Reading from the store: pull statuses and offsets, tag filtering, transfer limits, lookups by
time, offset and key, and arrival notifications."""
from __future__ import annotations

import time

import pytest

from rocketmq_py import codec
from rocketmq_py.store import GetMessageStatus, MessageStore, MessageStoreConfig, StoreMessage, TagCodeFilter


def config(tmp_path, **overrides) -> MessageStoreConfig:
    values = dict(store_path_root_dir=str(tmp_path / "store"), mapped_file_size_commit_log=256 * 1024,
                  mapped_file_size_consume_queue=10 * 20, max_hash_slot_num=64, max_index_num=256)
    values.update(overrides)
    return MessageStoreConfig(**values)


@pytest.fixture
def store(tmp_path):
    store = MessageStore(config(tmp_path))
    store.load()
    store.start()
    yield store
    store.shutdown()


async def put(store, count, topic="T", queue_id=0, tags=None, body=b"m", **properties):
    results = []
    for i in range(count):
        props = dict(properties)
        if tags:
            props["TAGS"] = tags[i % len(tags)]
        results.append(await store.put_message(StoreMessage(topic, body + str(i).encode(), queue_id=queue_id,
                                                            properties=props)))
    return results


def bodies(result) -> list[bytes]:
    return [m.body for m in codec.decode_store_records(result.body)]


async def test_pull_statuses_and_next_offsets(store):
    assert store.get_messages("g", "T", 0, 0, 32).status == GetMessageStatus.NO_MESSAGE_IN_QUEUE
    await put(store, 3)
    found = store.get_messages("g", "T", 0, 1, 32)
    assert (found.status, found.next_begin_offset, found.min_offset, found.max_offset) == (
        GetMessageStatus.FOUND, 3, 0, 3)
    assert bodies(found) == [b"m1", b"m2"]
    assert found.queue_offsets == [1, 2]
    # The records one by one, as stored, and the body is them back to back.
    records = [store.commit_log.get_record(offset) for offset in
               (store.get_commit_log_offset_in_queue("T", 0, index) for index in (1, 2))]
    assert found.buffers == records and found.body == b"".join(records)
    assert (found.message_count, found.buffer_total_size) == (2, len(found.body))
    one = store.get_messages("g", "T", 0, 3, 32)
    assert (one.status, one.next_begin_offset) == (GetMessageStatus.OFFSET_OVERFLOW_ONE, 3)
    badly = store.get_messages("g", "T", 0, 9, 32)
    assert (badly.status, badly.next_begin_offset) == (GetMessageStatus.OFFSET_OVERFLOW_BADLY, 3)
    empty = store.find_consume_queue("T", 5)
    assert empty.max_offset_in_queue == 0
    assert store.get_messages("g", "T", 5, 0, 32).status == GetMessageStatus.NO_MESSAGE_IN_QUEUE


async def test_offset_too_small_after_a_queue_starts_above_zero(store):
    store.commit_log.topic_queue_table[("T", 0)] = 25
    await put(store, 2)
    consume_queue = store.get_consume_queue("T", 0)
    assert (consume_queue.min_offset_in_queue, consume_queue.max_offset_in_queue) == (25, 27)
    small = store.get_messages("g", "T", 0, 3, 32)
    assert (small.status, small.next_begin_offset) == (GetMessageStatus.OFFSET_TOO_SMALL, 25)
    assert bodies(store.get_messages("g", "T", 0, 25, 32)) == [b"m0", b"m1"]
    padding = consume_queue.queue.files[0].mm[0:20]
    assert padding == b"\x00" * 8 + b"\x7f\xff\xff\xff" + b"\x00" * 8


async def test_tag_filter_on_units_and_the_next_offset_past_misses(store):
    await put(store, 8, tags=["A", "B", "B", "A"])
    codes = {codec.java_string_hash("A")}
    result = store.get_messages("g", "T", 0, 0, 32, codes)
    assert bodies(result) == [b"m0", b"m3", b"m4", b"m7"]
    assert result.queue_offsets == [0, 3, 4, 7]
    none = store.get_messages("g", "T", 0, 0, 32, {codec.java_string_hash("C")})
    assert (none.status, none.next_begin_offset) == (GetMessageStatus.NO_MATCHED_MESSAGE, 8)
    assert TagCodeFilter(None).is_matched_by_consume_queue(123)
    assert TagCodeFilter({-1}).is_matched_by_consume_queue(-1)


async def test_max_messages_and_transfer_limits(tmp_path):
    store = MessageStore(config(tmp_path, max_transfer_count_on_message_in_memory=3,
                                max_transfer_bytes_on_message_in_memory=100_000))
    store.load()
    store.start()
    try:
        await put(store, 6)
        assert store.get_messages("g", "T", 0, 0, 2).message_count == 2
        limited = store.get_messages("g", "T", 0, 0, 32)
        assert (limited.message_count, limited.next_begin_offset) == (3, 3)
    finally:
        store.shutdown()


async def test_a_pull_stays_within_one_consume_queue_file(store):
    await put(store, 15)
    first = store.get_messages("g", "T", 0, 7, 32)
    assert (first.message_count, first.next_begin_offset) == (3, 10)
    assert bodies(store.get_messages("g", "T", 0, 10, 32)) == [f"m{i}".encode() for i in range(10, 15)]


async def put_in_distinct_milliseconds(store, count):
    """One message per millisecond: several messages stored in the same millisecond make the lookup by
    that time answer whichever of them Java's binary search meets first, not necessarily the first."""
    for _ in range(count):
        await put(store, 1)
        time.sleep(0.003)


async def test_time_lookups(store):
    before = int(time.time() * 1000)
    await put_in_distinct_milliseconds(store, 3)
    time.sleep(0.05)
    middle = int(time.time() * 1000)
    time.sleep(0.05)
    await put_in_distinct_milliseconds(store, 3)
    earliest = store.get_earliest_message_time("T", 0)
    assert before <= earliest <= middle
    assert store.get_offset_in_queue_by_time("T", 0, earliest) == 0
    assert store.get_offset_in_queue_by_time("T", 0, middle) in (2, 3)
    assert store.get_offset_in_queue_by_time("T", 0, middle + 10 ** 6) == 5
    assert store.get_message_store_timestamp("T", 0, 4) >= middle
    assert store.get_earliest_message_time() == earliest
    assert store.get_earliest_message_time("nope", 0) == -1


async def test_a_time_shared_by_several_messages_finds_one_of_them(store):
    # Java's search stops at the first unit it probes whose time equals the one asked for, so with six
    # messages stored at one instant it answers the middle one; we answer the same.
    await put(store, 6)
    times = [store.get_message_store_timestamp("T", 0, offset) for offset in range(6)]
    found = store.get_offset_in_queue_by_time("T", 0, times[0])
    assert times[found] == times[0]
    if len(set(times)) == 1:
        assert found == 2


async def test_lookup_by_offset_and_key(store):
    results = await put(store, 5, KEYS="shared one", UNIQ_KEY="UK")
    offset = results[2].append_result.wrote_offset
    assert store.lookup_message_by_offset(offset).body == b"m2"
    assert store.get_commit_log_offset_in_queue("T", 0, 2) == offset
    assert store.select_one_message_by_offset(offset) == store.get_messages("g", "T", 0, 2, 1).body
    assert store.lookup_message_by_offset(10 ** 9) is None
    shared = store.query_message("T", "shared", 32, 0, 2 ** 62)
    assert sorted(bodies(shared)) == [f"m{i}".encode() for i in range(5)]
    assert shared.index_last_update_phyoffset == results[-1].append_result.wrote_offset
    assert store.query_message("T", "shared", 2, 0, 2 ** 62).buffer_total_size > 0
    assert store.query_message("OtherTopic", "shared", 32, 0, 2 ** 62).buffers == []
    assert store.query_message("T", "shared", 32, 0, 1).buffers == []


async def test_arrival_listener_sees_every_message(store):
    seen = []
    store.add_arrival_listener(seen.extend)
    store.add_arrival_listener(lambda put: 1 / 0)  # a failing listener does not break the put
    results = await put(store, 2, queue_id=3, tags=["X"])
    assert all(r.is_ok for r in results)
    assert [(t, q, offset, tags) for t, q, offset, tags, _ts, _props in seen] == [
        ("T", 3, 1, codec.java_string_hash("X")), ("T", 3, 2, codec.java_string_hash("X"))]
    assert seen[0][5] == "TAGS\x01X"


async def test_offsets_queries_for_unknown_queues(store):
    assert store.get_max_offset_in_queue("nope", 0) == 0
    # Java creates the consume queue on lookup, so an unknown queue reads as an empty one.
    assert store.get_min_offset_in_queue("nope", 0) == 0
    assert store.get_message_total_in_queue("nope", 0) == 0
    assert store.get_commit_log_offset_in_queue("nope", 0, 0) == 0
    assert not store.check_in_disk_by_consume_offset("nope", 0, 0)
    info = store.get_runtime_info()
    assert info["commitLogMaxOffset"] == "0" and "commitLogDiskRatio" in info


async def test_clean_unused_topic(store):
    await put(store, 2, topic="Keep")
    await put(store, 2, topic="Drop")
    assert store.clean_unused_topic({"Keep"}) == 1
    assert store.get_consume_queue("Drop", 0) is None
    assert not (store.config.consume_queue_dir / "Drop").exists()
    assert store.get_max_offset_in_queue("Keep", 0) == 2
    again = await put(store, 1, topic="Drop")
    assert again[0].append_result.logics_offset == 0


def test_a_lazy_consume_queue_read_gives_the_units_of_the_whole_window(tmp_path):
    """A pull reads its ConsumeQueue window chunk by chunk; whatever the chunk, the units are read_units' own."""
    from rocketmq_py.store.consume_queue import UNIT, ConsumeQueue
    from rocketmq_py.store.write_path import put_unit

    queue = ConsumeQueue("T", 0, tmp_path / "cq", file_size=50 * UNIT)
    for index in range(130):  # two full files and part of a third
        assert put_unit(queue, 1000 + index * 7, 7, index % 5, index)
    for start in (0, 1, 31, 49, 50, 64, 99, 100, 129, 130, 200):
        for max_bytes in (UNIT, 5 * UNIT, 16_000):
            expected = queue.read_units(start, max_bytes)
            for chunk in (1, 3, 32, 800):
                lazy = queue.read_units_lazily(start, max_bytes, chunk)
                assert (None if lazy is None else list(lazy)) == expected, (start, max_bytes, chunk)


def test_buffers_cut_a_pull_body_at_each_records_total_size():
    from rocketmq_py.store import GetMessageResult

    one, two = (8).to_bytes(4, "big") + b"abcd", (6).to_bytes(4, "big") + b"xy"
    assert GetMessageResult(GetMessageStatus.FOUND, body=one + two).buffers == [one, two]
    # A size that cannot be a record's (0 here, or past the end) takes the rest, so the cut always ends.
    for tail in (b"\0\0\0\0zz", (99).to_bytes(4, "big") + b"z"):
        assert GetMessageResult(GetMessageStatus.FOUND, body=one + tail).buffers == [one, tail]


def test_a_lazy_read_stops_where_its_file_was_deleted(tmp_path):
    """A file the clean service closes before the first chunk gives no window; closed later, the window ends
    with the units read so far, whether iterated or taken chunk by chunk as the compiled pull does."""
    from rocketmq_py.store.consume_queue import UNIT, ConsumeQueue
    from rocketmq_py.store.write_path import put_unit

    queue = ConsumeQueue("T", 0, tmp_path / "cq", file_size=100 * UNIT)
    for index in range(80):
        assert put_unit(queue, 1000 + index * 7, 7, index % 5, index)
    expected = queue.read_units(0, 16_000)
    iterated = queue.read_units_lazily(0, 16_000, 32)
    chunked = queue.read_units_lazily(0, 16_000, 32)
    first = chunked.next_chunk()
    assert len(first) == 32 * UNIT
    queue.queue.files[0].mm.close()
    assert list(iterated) == expected[:32]
    assert chunked.next_chunk() is None and chunked.next_chunk() is None
    assert queue.read_units_lazily(0, 16_000, 32) is None


async def test_a_pull_that_filters_out_most_units_reads_past_its_first_chunk(tmp_path):
    store = MessageStore(config(tmp_path, mapped_file_size_consume_queue=1000 * 20))
    store.load()
    store.start()
    try:
        await put(store, 200, tags=["A"] * 99 + ["B"])  # one B in every hundred
        result = store.get_messages("g", "T", 0, 0, 32, TagCodeFilter({codec.java_string_hash("B")}))
        assert result.status == GetMessageStatus.FOUND
        assert result.queue_offsets == [99, 199] and result.next_begin_offset == 200
    finally:
        store.shutdown()
