"""Flushing (SYNC_FLUSH group commit, ASYNC_FLUSH), expired-file cleaning and the disk-full guard."""
from __future__ import annotations

import asyncio
import os
import time

import pytest

from rocketmq_py import codec
from rocketmq_py.store import GetMessageStatus, MessageStore, MessageStoreConfig, PutMessageStatus, StoreMessage
from rocketmq_py.store.checkpoint import StoreCheckpoint
from rocketmq_py.store.clean import is_it_time_to_do
from rocketmq_py.store.flush import GroupCommitService
from rocketmq_py.store.mapped_file import MappedFileQueue

FILE_SIZE = 64 * 1024


def open_store(tmp_path, disk_usage=None, **overrides) -> MessageStore:
    values = dict(store_path_root_dir=str(tmp_path / "store"), mapped_file_size_commit_log=FILE_SIZE,
                  mapped_file_size_consume_queue=20 * 20, max_hash_slot_num=64, max_index_num=64)
    values.update(overrides)
    kwargs = {"disk_usage": disk_usage} if disk_usage else {}
    store = MessageStore(MessageStoreConfig(**values), **kwargs)
    store.load()
    store.start()
    return store


async def put(store, count=1, body=b"x" * 1000, **properties):
    return [await store.put_message(StoreMessage("T", body, properties=dict(properties))) for _ in range(count)]


async def test_sync_flush_returns_after_the_record_is_flushed(tmp_path):
    store = open_store(tmp_path, flush_disk_type="SYNC_FLUSH")
    try:
        for result in await put(store, 20):
            assert result.status == PutMessageStatus.PUT_OK
            end = result.append_result.wrote_offset + result.append_result.wrote_bytes
            assert store.commit_log.queue.flushed_where >= end
        assert store.checkpoint.physic_msg_timestamp > 0
    finally:
        store.shutdown()


async def test_sync_flush_group_commits_concurrent_puts(tmp_path):
    store = open_store(tmp_path, flush_disk_type="SYNC_FLUSH")
    flushes = []
    original = store.commit_log.queue.flush
    store.commit_log.queue.flush = lambda least: (flushes.append(least), original(least))[1]
    try:
        results = await asyncio.gather(*(store.put_message(StoreMessage("T", b"m%d" % i)) for i in range(50)))
        assert {r.status for r in results} == {PutMessageStatus.PUT_OK}
        assert len(flushes) < 50, "one flush serves many waiting puts"
    finally:
        store.shutdown()


async def test_sync_flush_without_wait_does_not_wait(tmp_path):
    store = open_store(tmp_path, flush_disk_type="SYNC_FLUSH")
    try:
        [result] = await put(store, WAIT="false")
        assert result.status == PutMessageStatus.PUT_OK
        end = result.append_result.wrote_offset + result.append_result.wrote_bytes
        for _ in range(100):
            if store.commit_log.queue.flushed_where >= end:
                break
            await asyncio.sleep(0.01)
        assert store.commit_log.queue.flushed_where >= end
    finally:
        store.shutdown()


async def test_slow_flush_answers_flush_disk_timeout_but_keeps_the_message(tmp_path):
    store = open_store(tmp_path, flush_disk_type="SYNC_FLUSH", sync_flush_timeout=100)
    original = store.commit_log.queue.flush

    def slow(least):
        time.sleep(0.4)
        return original(least)

    store.commit_log.queue.flush = slow
    try:
        [result] = await put(store)
        assert result.status == PutMessageStatus.FLUSH_DISK_TIMEOUT and result.is_ok
        assert store.get_messages("g", "T", 0, 0, 1).status == GetMessageStatus.FOUND
    finally:
        store.shutdown()


async def test_async_flush_runs_periodically(tmp_path):
    store = open_store(tmp_path, flush_interval_commit_log=20, flush_commit_log_least_pages=0,
                       flush_interval_consume_queue=20, flush_consume_queue_least_pages=0)
    try:
        results = await put(store, 10)
        end = results[-1].append_result.wrote_offset + results[-1].append_result.wrote_bytes
        consume_queue = store.get_consume_queue("T", 0).queue

        def flushed() -> bool:
            return store.commit_log.queue.flushed_where >= end and consume_queue.flushed_where > 0

        # The two flush services run on their own 20 ms timers; on a loaded machine either may lag.
        deadline = time.monotonic() + 10
        while not flushed() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert store.commit_log.queue.flushed_where >= end
        assert consume_queue.flushed_where > 0
    finally:
        store.shutdown()


async def test_expired_commit_log_files_and_their_units_are_deleted(tmp_path):
    store = open_store(tmp_path, file_reserved_time=1, delete_commit_log_files_interval=0)
    try:
        results = await put(store, 200)
        files = store.commit_log.queue.files
        assert len(files) >= 3
        old = time.time() - 2 * 3600
        for mapped in files[:2]:
            os.utime(mapped.path, (old, old))
        store.clean_service.manual_delete_file_several_times = 1
        store.clean_service.run_once()
        assert store.commit_log.min_offset == 2 * FILE_SIZE
        assert not files[0].path.exists() and files[2].path.exists()
        minimum = store.get_min_offset_in_queue("T", 0)
        assert minimum > 0
        assert store.get_messages("g", "T", 0, 0, 8).status == GetMessageStatus.OFFSET_TOO_SMALL
        first = store.get_messages("g", "T", 0, minimum, 1)
        [message] = codec.decode_store_records(first.body)
        assert message.commit_log_offset >= 2 * FILE_SIZE
        assert store.lookup_message_by_offset(results[0].append_result.wrote_offset) is None
    finally:
        store.shutdown()


async def test_nothing_is_deleted_before_its_time(tmp_path):
    store = open_store(tmp_path)
    try:
        await put(store, 200)
        count = len(store.commit_log.queue.files)
        store.clean_service.manual_delete_file_several_times = 1
        store.clean_service.run_once()
        assert len(store.commit_log.queue.files) == count
    finally:
        store.shutdown()


async def test_full_disk_refuses_puts_until_space_returns(tmp_path):
    usage = {"ratio": 0.5}
    store = open_store(tmp_path, disk_usage=lambda path: usage["ratio"])
    try:
        assert (await put(store))[0].is_ok
        usage["ratio"] = 0.95
        assert store.clean_service.is_space_full()
        assert (await put(store))[0].status == PutMessageStatus.SERVICE_NOT_AVAILABLE
        usage["ratio"] = 0.6
        assert not store.clean_service.is_space_full()
        assert (await put(store))[0].is_ok
    finally:
        store.shutdown()


@pytest.mark.parametrize("when,hour,expected", [
    ("04", 4, True), ("04", 5, False), ("04;16", 16, True), ("x;3", 3, True),
])
def test_delete_when(when, hour, expected):
    assert is_it_time_to_do(when, hour) is expected


async def test_a_group_commit_answers_put_ok_to_waiters_in_three_files(tmp_path):
    """Java's doCommit gives each waiter, in order, two flushes of one file each; a group commit whose waiters'
    records sit in three files (sends that rolled the CommitLog twice while the last commit ran) flushes all
    three and answers each PUT_OK."""
    queue = MappedFileQueue(tmp_path / "commitlog", 4096)
    checkpoint = StoreCheckpoint(tmp_path / "checkpoint")
    ends = []
    for _ in range(3):
        assert queue.get_last_mapped_file().append(bytes(4096))
        ends.append(queue.max_offset)
    service = GroupCommitService(queue, checkpoint)
    answers = [service.put_request(end) for end in ends]
    try:
        service._do_commit()
        assert [await answer for answer in answers] == [PutMessageStatus.PUT_OK] * 3
        assert queue.flushed_where == ends[-1]
    finally:
        queue.shutdown()
        checkpoint.shutdown()
