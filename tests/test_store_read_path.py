"""The store's compiled read path against its pure-Python twin, called side by side on one store.

The pull's ``collect`` of the compiled module and of the twin read the same store with the same arguments,
over CommitLog files that roll, with tag and record filters, transfer limits, deleted files and odd offsets.
"""
from __future__ import annotations

import os
import random
import zlib

import pytest

from rocketmq_py import codec
from rocketmq_py.store import GetMessageResult, GetMessageStatus, MessageStore, MessageStoreConfig, StoreMessage
from rocketmq_py.store import read_path
from rocketmq_py.store.reads import TOTAL_PHYSICAL_MEMORY, TagCodeFilter


def test_the_expected_implementation_runs(expected_implementation):
    assert read_path.IMPLEMENTATION == expected_implementation("rocketmq_py.store._read_path")


@pytest.fixture
async def store(tmp_path):
    # Small files, so pulls cross CommitLog files, and small transfer limits, so both of them bind.
    config = MessageStoreConfig(
        store_path_root_dir=str(tmp_path / "store"), mapped_file_size_commit_log=16 * 1024,
        mapped_file_size_consume_queue=40 * 20, max_hash_slot_num=64, max_index_num=2048,
        max_transfer_bytes_on_message_in_memory=6000, max_transfer_count_on_message_in_memory=20,
        max_transfer_bytes_on_message_in_disk=3000, max_transfer_count_on_message_in_disk=6)
    store = MessageStore(config)
    store.load()
    store.start()
    rng = random.Random(5)
    for number in range(400):
        tags = rng.choice(["A", "B", "C"])
        body = os.urandom(rng.choice([10, 200, 700]))
        await store.put_message(StoreMessage("T", body, queue_id=number % 3, properties={"TAGS": tags}))
    yield store
    store.shutdown()


class HalfTheRecords:
    """A filter that reads each record, as SQL92's does: it keeps about half of them (by their CRC)."""

    checks_tags = False
    checks_records = True

    def is_matched_by_consume_queue(self, tags_code: int) -> bool:
        return True

    def is_matched_by_commit_log(self, record: bytes) -> bool:
        return zlib.crc32(record) % 2 == 0


def _collect(module, store: MessageStore, queue_id: int, offset: int, max_msg_nums: int, codes, memory: int,
             in_files: bool = False):
    result = GetMessageResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE, offset)
    units = store.get_consume_queue("T", queue_id).read_units_lazily(offset, 16000, max(max_msg_nums, 32))
    if codes is False:
        message_filter = None
    elif isinstance(codes, HalfTheRecords):
        message_filter = codes
    else:
        message_filter = TagCodeFilter(codes)
    module.collect(store, result, units, offset, max_msg_nums, message_filter, memory, in_files)
    region = result.region
    places = None if region is None else ([file.file_name for file in region.files], region.ranges, region.size)
    body = result.body if region is None else region.copy()
    return (result.status, result.next_begin_offset, body, result.queue_offsets, result.suggest_pulling_from_slave,
            places)


@pytest.mark.parametrize("in_files", [False, True])
async def test_compiled_and_twin_collect_the_same_records(store, twins, in_files):
    read_paths = twins("rocketmq_py.store._read_path")
    codes_of = {"A": codec.java_string_hash("A"), "B": codec.java_string_hash("B")}
    rng = random.Random(11)
    found = 0
    for _ in range(300):
        queue_id = rng.randrange(3)
        offset = rng.randrange(0, 130)
        max_msg_nums = rng.choice([1, 5, 32, 64])
        codes = rng.choice([False, None, {codes_of["A"]}, {codes_of["A"], codes_of["B"]}, {12345}, HalfTheRecords()])
        memory = rng.choice([TOTAL_PHYSICAL_MEMORY, 0, 3000])
        expected = _collect(read_paths.twin, store, queue_id, offset, max_msg_nums, codes, memory, in_files)
        assert _collect(read_paths.compiled, store, queue_id, offset, max_msg_nums, codes, memory,
                        in_files) == expected
        found += expected[0] == GetMessageStatus.FOUND
    assert found > 150


async def test_the_places_of_the_records_make_the_body_the_copy_makes(store):
    """``in_files`` gives the records' places instead of a copy: ranges of the CommitLog files that make the same
    body, with the records that follow each other in a file in one range, and the same everything else."""
    codes_of = {"A": codec.java_string_hash("A"), "B": codec.java_string_hash("B")}
    rng = random.Random(12)
    files_crossed = 0
    for _ in range(200):
        queue_id = rng.randrange(3)
        offset = rng.randrange(0, 130)
        max_msg_nums = rng.choice([1, 5, 32, 64])
        codes = rng.choice([False, None, {codes_of["A"]}, HalfTheRecords()])
        copied = _collect(read_path, store, queue_id, offset, max_msg_nums, codes, TOTAL_PHYSICAL_MEMORY)
        placed = _collect(read_path, store, queue_id, offset, max_msg_nums, codes, TOTAL_PHYSICAL_MEMORY, True)
        assert placed[:5] == copied[:5]
        assert (placed[5] is None) == (copied[0] != GetMessageStatus.FOUND)
        if placed[5] is not None:
            names, ranges, size = placed[5]
            assert size == len(copied[2])
            files_crossed += len(names) > 1
    assert files_crossed
    # The fixture's queues take turns; records of one queue stored one after another make one range a file.
    for _ in range(10):
        await store.put_message(StoreMessage("Adjacent", b"x" * 100, queue_id=0))
    region = store.get_messages("g", "Adjacent", 0, 0, 32, in_files=True).region
    assert region is not None and len(region.ranges) // 12 == len(region.files)
    assert region.copy() == store.get_messages("g", "Adjacent", 0, 0, 32).body


async def test_a_region_keeps_the_bytes_of_a_file_closed_after_it_was_made(store):
    """The clean service may close a file between the pull that named its records and the answer's write: the
    region's views keep the mapping, so its bytes are still there to copy."""
    expected = store.get_messages("g", "T", 0, 0, 32).body
    region = store.get_messages("g", "T", 0, 0, 32, in_files=True).region
    assert region is not None
    first = region.files[0]
    first.close()
    assert not first.available and first.open_for_reading() is None
    assert region.copy() == expected


async def test_compiled_and_twin_agree_when_the_first_files_are_deleted(store, twins):
    read_paths = twins("rocketmq_py.store._read_path")
    first = store.commit_log.queue.files[0]
    first.mm.close()  # as the clean service leaves a deleted file to a reader that still holds it
    for offset in (0, 1, 5, 20):
        for in_files in (False, True):
            expected = _collect(read_paths.twin, store, 0, offset, 32, None, TOTAL_PHYSICAL_MEMORY, in_files)
            assert _collect(read_paths.compiled, store, 0, offset, 32, None, TOTAL_PHYSICAL_MEMORY,
                            in_files) == expected
    # The records of the closed file are skipped: the pull goes on in the next file.
    status, _, _, queue_offsets, _, _ = _collect(read_paths.twin, store, 0, 0, 32, None, TOTAL_PHYSICAL_MEMORY)
    assert status == GetMessageStatus.FOUND and queue_offsets[0] > 0
