"""Restarting the store: clean restarts, crashes (the abort file stays), torn and garbage tails,
lost or lagging ConsumeQueues, and a real kill -9 of a process in the middle of SYNC_FLUSH sends."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from support.child import child_env

from rocketmq_py import codec
from rocketmq_py.store import MessageStore, MessageStoreConfig, StoreError, StoreMessage

FILE_SIZE = 64 * 1024


def config(root: Path, **overrides) -> MessageStoreConfig:
    values = dict(store_path_root_dir=str(root), mapped_file_size_commit_log=FILE_SIZE,
                  mapped_file_size_consume_queue=100 * 20, max_hash_slot_num=64, max_index_num=512)
    values.update(overrides)
    return MessageStoreConfig(**values)


def open_store(root: Path, **overrides) -> MessageStore:
    store = MessageStore(config(root, **overrides))
    store.load()
    store.start()
    return store


async def fill(store: MessageStore, count: int, body_size: int = 900) -> list:
    results = []
    for i in range(count):
        body = (f"msg-{i}-".encode() * body_size)[:body_size]
        results.append(await store.put_message(StoreMessage("T", body, queue_id=i % 3,
                                                            properties={"KEYS": f"k{i}", "TAGS": "t"})))
    return results


def crash(store: MessageStore) -> None:
    """Stop without the shutdown steps: the files stay as the page cache has them and abort stays."""
    for service in (store.clean_service, store._flush_service, store._flush_cq_service):
        service.shutdown()
    store._running = False
    store.commit_log.queue.shutdown()
    for consume_queue in store.consume_queues():
        consume_queue.shutdown()
    store.store_lock.release()


def all_bodies(store: MessageStore) -> list[bytes]:
    found = []
    for queue_id in range(3):
        offset = 0
        while True:
            result = store.get_messages("g", "T", queue_id, offset, 32)
            if result.status.name != "FOUND":
                break
            found += [m.body for m in codec.decode_store_records(result.body)]
            offset = result.next_begin_offset
    return found


async def test_clean_restart_keeps_everything(tmp_path):
    store = open_store(tmp_path)
    results = await fill(store, 150)
    store.shutdown()
    assert not (tmp_path / "abort").exists()
    again = open_store(tmp_path)
    try:
        assert again.last_exit_ok
        assert len(all_bodies(again)) == 150
        last = results[-1].append_result
        assert again.commit_log.max_offset == last.wrote_offset + last.wrote_bytes
        next_put = (await fill(again, 1))[0]
        assert next_put.append_result.logics_offset == 50
        assert again.query_message("T", "k149", 32, 0, 2 ** 62).buffers
    finally:
        again.shutdown()


async def test_crash_recovery_keeps_every_complete_record(tmp_path):
    store = open_store(tmp_path)
    await fill(store, 150)
    crash(store)
    assert (tmp_path / "abort").exists()
    again = open_store(tmp_path)
    try:
        assert not again.last_exit_ok
        assert len(all_bodies(again)) == 150
        assert (await fill(again, 1))[0].append_result.logics_offset == 50
    finally:
        again.shutdown()


@pytest.mark.parametrize("damage", ["truncated", "garbage_after", "bad_crc"])
async def test_crash_with_a_torn_tail_cuts_it_and_its_units(tmp_path, damage):
    store = open_store(tmp_path)
    results = await fill(store, 100)
    last = results[-1].append_result
    crash(store)
    path = tmp_path / "commitlog" / f"{(last.wrote_offset // FILE_SIZE) * FILE_SIZE:020d}"
    position = last.wrote_offset % FILE_SIZE
    with open(path, "r+b") as handle:
        if damage == "truncated":
            handle.seek(position + last.wrote_bytes // 2)
            handle.write(b"\x00" * (last.wrote_bytes // 2))
        elif damage == "garbage_after":
            handle.seek(position + last.wrote_bytes)
            handle.write(os.urandom(3000))
        else:
            handle.seek(position + last.wrote_bytes - 400)
            handle.write(b"\xff\xfe")
    again = open_store(tmp_path)
    try:
        kept = all_bodies(again)
        expected = 100 if damage == "garbage_after" else 99
        assert len(kept) == expected
        assert again.commit_log.max_offset == last.wrote_offset + (last.wrote_bytes if expected == 100 else 0)
        assert again.get_max_offset_in_queue("T", 0) == (34 if expected == 100 else 33)
        follow = (await fill(again, 1))[0].append_result
        assert follow.wrote_offset == again.commit_log.max_offset - follow.wrote_bytes
        assert len(all_bodies(again)) == expected + 1
    finally:
        again.shutdown()
    assert len(all_bodies_after_restart(tmp_path)) == expected + 1


def all_bodies_after_restart(root: Path) -> list[bytes]:
    store = open_store(root)
    try:
        return all_bodies(store)
    finally:
        store.shutdown()


async def test_lost_consume_queues_are_rebuilt(tmp_path):
    store = open_store(tmp_path)
    await fill(store, 120)
    store.shutdown()
    shutil.rmtree(tmp_path / "consumequeue")
    again = open_store(tmp_path)
    try:
        assert len(all_bodies(again)) == 120
    finally:
        again.shutdown()


async def test_consume_queue_units_beyond_the_commit_log_are_dropped(tmp_path):
    store = open_store(tmp_path)
    results = await fill(store, 120)
    store.shutdown()
    cut = results[90].append_result.wrote_offset
    commit_log = tmp_path / "commitlog"
    files = sorted(commit_log.iterdir())
    for path in files:
        start = int(path.name)
        if start >= cut - cut % FILE_SIZE + FILE_SIZE:
            path.unlink()
        elif start <= cut < start + FILE_SIZE:
            with open(path, "r+b") as handle:
                handle.seek(cut - start)
                handle.write(b"\x00" * (FILE_SIZE - (cut - start)))
    again = open_store(tmp_path)
    try:
        assert len(all_bodies(again)) == 90
        assert again.get_max_offset_in_queue("T", 0) == 30
        assert (await fill(again, 1))[0].append_result.logics_offset == 30
    finally:
        again.shutdown()


def test_file_size_mismatch_is_a_clear_error(tmp_path):
    (tmp_path / "commitlog").mkdir(parents=True)
    (tmp_path / "commitlog" / "00000000000000000000").write_bytes(b"\x00" * 1000)
    with pytest.raises(StoreError, match="mappedFileSize"):
        MessageStore(config(tmp_path)).load()


async def test_files_are_named_and_sized_like_java(tmp_path):
    store = open_store(tmp_path)
    await fill(store, 150)
    store.shutdown()
    commit_logs = sorted(p.name for p in (tmp_path / "commitlog").iterdir())
    assert commit_logs[:2] == ["00000000000000000000", f"{FILE_SIZE:020d}"]
    assert {p.stat().st_size for p in (tmp_path / "commitlog").iterdir()} == {FILE_SIZE}
    queue_files = sorted(p.name for p in (tmp_path / "consumequeue" / "T" / "0").iterdir())
    assert queue_files == ["00000000000000000000"]
    assert (tmp_path / "consumequeue" / "T" / "0" / "00000000000000000000").stat().st_size == 2000
    [index] = list((tmp_path / "index").iterdir())
    assert len(index.name) == 17 and index.stat().st_size == 40 + 64 * 4 + 512 * 20
    assert (tmp_path / "checkpoint").stat().st_size == 4096
    assert (tmp_path / "lock").exists()


CHILD = textwrap.dedent("""
    import asyncio, sys
    from rocketmq_py.store import MessageStore, MessageStoreConfig, StoreMessage
    config = MessageStoreConfig(store_path_root_dir=sys.argv[1], mapped_file_size_commit_log=256 * 1024,
                                mapped_file_size_consume_queue=1000 * 20, max_hash_slot_num=64,
                                max_index_num=4096, flush_disk_type="SYNC_FLUSH")
    store = MessageStore(config)
    store.load()
    store.start()

    async def main():
        i = 0
        while True:
            result = await store.put_message(StoreMessage("T", b"acked-%d" % i, queue_id=i % 3))
            assert result.status.name == "PUT_OK", result
            print(i, result.append_result.wrote_offset, result.append_result.wrote_bytes, flush=True)
            i += 1

    asyncio.run(main())
""")


def test_kill_minus_nine_during_sync_flush_sends_keeps_every_acked_message(tmp_path):
    root = tmp_path / "store"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(root)], stdout=subprocess.PIPE, text=True,
                             env=child_env())
    acked = []
    try:
        for line in child.stdout:
            acked.append(tuple(int(x) for x in line.split()))
            if len(acked) >= 400:
                break
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    assert len(acked) >= 400, "the child did not get far enough"
    assert (root / "abort").exists()
    store = open_store(root, mapped_file_size_commit_log=256 * 1024, mapped_file_size_consume_queue=1000 * 20,
                       max_index_num=4096)
    try:
        assert not store.last_exit_ok
        stored = set(all_bodies(store))
        assert {b"acked-%d" % i for i, _, _ in acked} <= stored
        end = max(offset + size for _, offset, size in acked)
        assert store.commit_log.max_offset >= end
    finally:
        store.shutdown()
