"""The forced clean above 85 % disk use (issue 28, item 2): with the defaults it deletes only CommitLog files
that are expired or whose every message every consumer group of its topic has consumed; the first file that
must stay ends the round, and one log line says why, once per cause. ``cleanUnconsumedFileForciblyEnable``
brings back Java's "delete the oldest regardless".

The disk usage is injected, and the clean service's own thread is stopped so that each round here runs once,
when the test asks for it."""
from __future__ import annotations

import logging
import os
import time

import pytest

from rocketmq_py import codec
from rocketmq_py.broker.config import load_broker_config
from rocketmq_py.store import GetMessageStatus, MessageStore, MessageStoreConfig, StoreMessage
from rocketmq_py.store.consume_queue import ConsumeQueue
from rocketmq_py.store.consumed import ConsumedFileRule

FILE_SIZE = 64 * 1024
BODY = b"x" * 1000
FORCED = 0.88  # over diskMaxUsedSpaceRatio (75 %) and diskSpaceCleanForciblyRatio (85 %), under 90 %


class Disk:
    def __init__(self, used: float) -> None:
        self.used = used

    def __call__(self, path) -> float:
        return self.used


def open_store(tmp_path, progress=None, disk=None, **overrides) -> MessageStore:
    values = dict(store_path_root_dir=str(tmp_path / "store"), mapped_file_size_commit_log=FILE_SIZE,
                  mapped_file_size_consume_queue=20 * 20, max_hash_slot_num=64, max_index_num=64,
                  delete_commit_log_files_interval=0)
    values.update(overrides)
    store = MessageStore(MessageStoreConfig(**values), disk_usage=disk or Disk(FORCED), consumer_progress=progress)
    store.load()
    store.start()
    store.clean_service.shutdown()  # the rounds below run when the test says
    return store


async def put(store, count, topic="T", queue_id=0):
    results = [await store.put_message(StoreMessage(topic, BODY, queue_id=queue_id)) for _ in range(count)]
    assert all(result.is_ok for result in results)
    return results


def last_offset_in(store, file_index, topic="T", queue_id=0) -> int:
    """The queue offset of the last message of ``topic``/``queue_id`` in the CommitLog file ``file_index``."""
    mapped = store.commit_log.queue.files[file_index]
    end = mapped.file_from_offset + mapped.file_size
    return store.get_consume_queue(topic, queue_id).first_offset_at_or_after(end) - 1


def bodies_from(store, topic, queue_id, offset) -> list[bytes]:
    found = []
    while True:
        result = store.get_messages("reader", topic, queue_id, offset, 32)
        if result.status != GetMessageStatus.FOUND:
            return found
        found += [m.body for m in codec.decode_store_records(result.body)]
        offset = result.next_begin_offset


def kept_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "no CommitLog file may be deleted" in r.getMessage()]


async def test_with_the_defaults_unconsumed_files_stay_and_one_line_says_why(tmp_path, caplog):
    store = open_store(tmp_path)
    try:
        await put(store, 200)
        files = list(store.commit_log.queue.files)
        assert len(files) >= 3
        with caplog.at_level(logging.INFO, logger="rocketmq_py.store.clean"):
            for _ in range(3):
                store.clean_service.run_once()
        assert store.commit_log.queue.files == files
        assert all(mapped.path.exists() for mapped in files)
        assert bodies_from(store, "T", 0, 0) == [BODY] * 200
        [line] = kept_lines(caplog)
        assert "88.0 % used" in line and files[0].path.name in line, line
        assert "T queue 0" in line and "no consumer group consumes T" in line, line
        assert "cleanUnconsumedFileForciblyEnable" in line, line
    finally:
        store.shutdown()


async def test_the_oldest_file_goes_once_every_group_consumed_past_it(tmp_path, caplog):
    offsets: dict = {}
    store = open_store(tmp_path, progress=lambda: offsets)
    try:
        await put(store, 200)
        files = list(store.commit_log.queue.files)
        last = last_offset_in(store, 0)
        offsets["T"] = {"g1": {0: last + 1}, "g2": {0: last}}
        with caplog.at_level(logging.INFO, logger="rocketmq_py.store.clean"):
            store.clean_service.run_once()
            assert store.commit_log.queue.files == files, "g2 has not consumed the file's last message"
            [line] = kept_lines(caplog)
            assert f"queue offsets 0 to {last}" in line and f"consumer group g2 is at {last}" in line, line
            offsets["T"]["g2"] = {0: last + 1}
            store.clean_service.run_once()
        assert store.commit_log.queue.files == files[1:], "consumed by both groups: the oldest goes, the next stays"
        assert not files[0].path.exists()
        assert store.get_min_offset_in_queue("T", 0) == last + 1
        assert bodies_from(store, "T", 0, last + 1) == [BODY] * (200 - last - 1)
        assert any("deleted 1 CommitLog file(s)" in r.getMessage() and "forced: consumed files" in r.getMessage()
                   for r in caplog.records)
    finally:
        store.shutdown()


async def test_every_queue_of_the_file_counts_and_a_queue_without_an_offset_is_unconsumed(tmp_path, caplog):
    offsets: dict = {}
    store = open_store(tmp_path, progress=lambda: offsets)
    try:
        for _ in range(100):
            await put(store, 1, queue_id=0)
            await put(store, 1, queue_id=1)
        files = list(store.commit_log.queue.files)
        beyond = {queue_id: last_offset_in(store, 0, queue_id=queue_id) + 1 for queue_id in (0, 1)}
        offsets["T"] = {"g": {0: beyond[0]}}
        with caplog.at_level(logging.INFO, logger="rocketmq_py.store.clean"):
            store.clean_service.run_once()
        assert store.commit_log.queue.files == files
        [line] = kept_lines(caplog)
        assert "T queue 1" in line and "consumer group g has no offset for that queue" in line, line
        offsets["T"]["g"][1] = beyond[1]
        store.clean_service.run_once()
        assert store.commit_log.queue.files == files[1:]
    finally:
        store.shutdown()


async def test_one_round_deletes_the_consumed_files_and_stops_at_the_first_that_must_stay(tmp_path):
    offsets: dict = {}
    store = open_store(tmp_path, progress=lambda: offsets)
    try:
        await put(store, 300, topic="A")
        await put(store, 10, topic="B")  # nobody consumes B
        await put(store, 150, topic="A")
        files = list(store.commit_log.queue.files)
        first_of_b = store.get_consume_queue("B", 0).unit_at(0)[0]
        b_file = next(i for i, f in enumerate(files) if first_of_b < f.file_from_offset + FILE_SIZE)
        assert b_file >= 2 and b_file + 1 < len(files) - 1
        offsets["A"] = {"g": {0: 10**9}}
        store.clean_service.run_once()
        assert store.commit_log.queue.files == files[b_file:], "the files before B's go; B's and all after it stay"
    finally:
        store.shutdown()


async def test_an_expired_file_goes_consumed_or_not_as_before(tmp_path):
    offsets: dict = {"T": {"g": {0: 0}}}
    store = open_store(tmp_path, progress=lambda: offsets, file_reserved_time=1)
    try:
        await put(store, 200)
        files = list(store.commit_log.queue.files)
        old = time.time() - 2 * 3600
        os.utime(files[0].path, (old, old))
        store.clean_service.run_once()
        assert store.commit_log.queue.files == files[1:]
    finally:
        store.shutdown()


@pytest.mark.parametrize("used", [0.80, 0.5])
async def test_below_the_forced_level_even_a_consumed_file_waits_for_its_time(tmp_path, used):
    store = open_store(tmp_path, progress=lambda: {"T": {"g": {0: 10**9}}}, disk=Disk(used))
    try:
        await put(store, 200)
        files = list(store.commit_log.queue.files)
        store.clean_service.run_once()
        store.clean_service.manual_delete_file_several_times = 1
        store.clean_service.run_once()
        assert store.commit_log.queue.files == files
    finally:
        store.shutdown()


async def test_a_manual_delete_follows_the_same_rule(tmp_path):
    offsets: dict = {}
    store = open_store(tmp_path, progress=lambda: offsets, disk=Disk(0.5))
    try:
        await put(store, 200)
        files = list(store.commit_log.queue.files)
        store.clean_service.disk_usage = Disk(FORCED)
        store.clean_service.manual_delete_file_several_times = 1
        store.clean_service.run_once()
        assert store.commit_log.queue.files == files
        offsets["T"] = {"g": {0: last_offset_in(store, 0) + 1}}
        store.clean_service.manual_delete_file_several_times = 1
        store.clean_service.run_once()
        assert store.commit_log.queue.files == files[1:]
    finally:
        store.shutdown()


async def test_unknown_offsets_keep_every_file(tmp_path, caplog):
    store = open_store(tmp_path, progress=lambda: None)
    try:
        await put(store, 200)
        files = list(store.commit_log.queue.files)
        with caplog.at_level(logging.INFO, logger="rocketmq_py.store.clean"):
            store.clean_service.run_once()
        assert store.commit_log.queue.files == files
        [line] = kept_lines(caplog)
        assert "consumer offsets are not known yet" in line, line
    finally:
        store.shutdown()


async def test_the_explicit_key_restores_javas_forced_clean(tmp_path):
    store = open_store(tmp_path, clean_unconsumed_file_forcibly_enable=True)
    try:
        await put(store, 200)
        files = list(store.commit_log.queue.files)
        assert len(files) >= 3
        store.clean_service.run_once()
        assert store.commit_log.queue.files == files[-1:], "Java deletes every file but the last, consumed or not"
        assert store.get_messages("g", "T", 0, 0, 1).status == GetMessageStatus.OFFSET_TOO_SMALL
    finally:
        store.shutdown()


async def test_forced_cleaning_off_keeps_unexpired_files_and_says_so(tmp_path, caplog):
    store = open_store(tmp_path, progress=lambda: {"T": {"g": {0: 10**9}}}, clean_file_forcibly_enable=False,
                       clean_unconsumed_file_forcibly_enable=True)
    try:
        await put(store, 200)
        files = list(store.commit_log.queue.files)
        with caplog.at_level(logging.INFO, logger="rocketmq_py.store.clean"):
            store.clean_service.run_once()
        assert store.commit_log.queue.files == files
        [line] = kept_lines(caplog)
        assert "cleanFileForciblyEnable is false" in line, line
    finally:
        store.shutdown()


async def test_the_cause_is_logged_again_after_the_disk_recovered(tmp_path, caplog):
    disk = Disk(FORCED)
    store = open_store(tmp_path, disk=disk)
    try:
        await put(store, 200)
        with caplog.at_level(logging.INFO, logger="rocketmq_py.store.clean"):
            store.clean_service.run_once()
            store.clean_service.run_once()
            disk.used = 0.5
            store.clean_service.run_once()
            disk.used = FORCED
            store.clean_service.run_once()
        assert len(kept_lines(caplog)) == 2
    finally:
        store.shutdown()


def test_the_key_is_read_from_broker_conf(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("cleanUnconsumedFileForciblyEnable=true\n")
    _, store_config = load_broker_config(conf)
    assert store_config.clean_unconsumed_file_forcibly_enable is True
    assert MessageStoreConfig().clean_unconsumed_file_forcibly_enable is False
    assert MessageStoreConfig().clean_file_forcibly_enable is True


def test_a_file_the_consume_queues_do_not_reach_past_stays(tmp_path):
    class File:
        file_from_offset, file_size = 0, FILE_SIZE
        path = tmp_path / "00000000000000000000"

    rule = ConsumedFileRule([], {})
    assert not rule.may_delete(File())
    assert rule.kept is not None and "do not reach past it" in rule.kept.why


async def test_first_offset_at_or_after_finds_each_unit_across_consume_queue_files(tmp_path):
    store = open_store(tmp_path, disk=Disk(0.1))
    try:
        results = await put(store, 90)
        consume_queue: ConsumeQueue = store.get_consume_queue("T", 0)
        assert len(consume_queue.queue.files) > 3
        physical = [r.append_result.wrote_offset for r in results]
        for index, offset in enumerate(physical):
            assert consume_queue.first_offset_at_or_after(offset) == index
            assert consume_queue.first_offset_at_or_after(offset + 1) == index + 1
        assert consume_queue.first_offset_at_or_after(0) == 0
        assert consume_queue.first_offset_at_or_after(10**12) == 90
    finally:
        store.shutdown()
