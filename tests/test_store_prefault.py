"""Faulting the CommitLog's next pages in ahead of the writes (``rocketmq_py.store.prefault``).

The layout function runs in the form the suite runs (compiled, or the twin with ROCKETMQ_PY_NO_EXTENSIONS=1).
That pages were faulted in shows in the minor page faults a thread takes writing to them afterwards.
"""
from __future__ import annotations

import logging
import mmap
import os
import resource
import shutil
import tempfile
from pathlib import Path

import pytest

from rocketmq_py.store import MessageStore, MessageStoreConfig, StoreMessage, layout
from rocketmq_py.store.mapped_file import MappedFile
from rocketmq_py.store.prefault import CommitLogPrefaultService

PAGE = mmap.PAGESIZE


#: Faults a populated span may still show: the count is the thread's, and the interpreter may touch a fresh page
#: of its own between the two readings (they failed at 3 with 2 allowed, in CI, before the positions were built
#: ahead of the first reading). An unpopulated span takes one per page.
NOT_THE_SPANS_FAULTS = 4


def _faults_writing_each_page(mm: mmap.mmap, start: int, end: int) -> int:
    """Minor faults this thread takes writing a zero (what the page holds) to each page of the span."""
    positions = list(range(start, end, PAGE))  # made before the first reading: the loop allocates nothing
    before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    for position in positions:
        mm[position] = 0
    return resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before


@pytest.fixture
def memory_path():
    """A folder on tmpfs, for the tests that count page faults. On a disk's file system the kernel's writeback
    of dirty pages write-protects their mappings again, so the next write to a populated page takes a fault; when
    writeback runs depends on the machine's other writes (it made these counts fail under load). tmpfs has none."""
    path = Path(tempfile.mkdtemp(prefix="rocketmq-py-prefault-", dir="/dev/shm"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_populated_pages_take_no_fault_when_written_and_keep_their_bytes(memory_path):
    mapped = MappedFile(memory_path / "00000000000000000000", 64 * PAGE * 4)
    try:
        assert layout.populate_for_writing(mapped.mm, 5, 64 * PAGE - 5) is True
        assert mapped.mm[:64 * PAGE] == bytes(64 * PAGE)  # nothing was written
        assert _faults_writing_each_page(mapped.mm, 0, 64 * PAGE) <= NOT_THE_SPANS_FAULTS
        # The pages after the populated span still fault when first written.
        assert _faults_writing_each_page(mapped.mm, 64 * PAGE, 128 * PAGE) >= 32
    finally:
        mapped.close()


def test_populate_checks_its_span(tmp_path):
    mapped = MappedFile(tmp_path / "00000000000000000000", 4 * PAGE)
    try:
        assert layout.populate_for_writing(mapped.mm, 4 * PAGE, 0) is True
        for position, length in ((0, 4 * PAGE + 1), (-1, 10), (PAGE, -1)):
            with pytest.raises(ValueError):
                layout.populate_for_writing(mapped.mm, position, length)
    finally:
        mapped.close()


def test_a_closed_file_is_left_alone(tmp_path):
    mapped = MappedFile(tmp_path / "00000000000000000000", 4 * PAGE)
    mapped.close()
    assert mapped.prefault(0, PAGE) is True


def _store(tmp_path, ahead: int) -> MessageStore:
    # Small ConsumeQueue and index files: every store file gets its blocks (tmpfs: its memory) when made.
    config = MessageStoreConfig(store_path_root_dir=str(tmp_path), mapped_file_size_commit_log=256 * PAGE,
                                mapped_file_size_consume_queue=1000 * 20, max_hash_slot_num=1000, max_index_num=4000,
                                commit_log_prefault_bytes=ahead)
    store = MessageStore(config)
    store.load()
    return store


def _put(store: MessageStore, size: int = 3000) -> None:
    message = StoreMessage(topic="T", body=os.urandom(size), queue_id=0, born_host="127.0.0.1:1",
                           store_host="127.0.0.1:2", born_timestamp=1)
    assert store.append_message(message).is_ok


def test_the_store_runs_the_service_when_asked(tmp_path):
    for ahead in (0, 16 * PAGE):
        store = _store(tmp_path / str(ahead), ahead)
        store.start()
        service = store.prefault_service
        try:
            _put(store)
            assert (service is None) if ahead == 0 else (service.started and not service.stopped)  # type: ignore[union-attr]
        finally:
            store.shutdown()
        assert service is None or service.stopped


def test_the_window_after_the_write_position_is_faulted_in_and_moves_with_it(memory_path):
    store = _store(memory_path, ahead=0)  # the service is driven by hand here
    store.start()
    try:
        queue = store.commit_log.queue
        service = CommitLogPrefaultService(queue, 16 * PAGE)
        _put(store)
        last = queue.last_file()
        assert last is not None
        assert service.prefault_ahead() == 16 * PAGE
        assert service.prefaulted_to == last.wrote_position + 16 * PAGE
        assert service.prefault_ahead() == 0  # nothing new
        assert last.mm[last.wrote_position:service.prefaulted_to] == bytes(16 * PAGE)  # nothing was written
        assert _faults_writing_each_page(last.mm, last.wrote_position + PAGE, service.prefaulted_to) <= NOT_THE_SPANS_FAULTS
        first_end = last.wrote_position
        _put(store)  # one record (3000 bytes and its head) more: the window moves by as much
        assert service.prefault_ahead() == queue.last_file().wrote_position - first_end  # type: ignore[union-attr]
        # To the next file when the CommitLog rolls.
        while queue.last_file() is last:
            _put(store)
        assert service.prefault_ahead() > 0
        following = queue.last_file()
        assert following is not None and service.prefaulted_to == following.wrote_position + 16 * PAGE
    finally:
        store.shutdown()


def test_a_kernel_that_cannot_stops_the_service_and_the_store_writes_on(tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.INFO, logger="rocketmq_py.store.prefault")
    store = _store(tmp_path, ahead=0)
    store.start()
    monkeypatch.setattr(layout, "populate_for_writing", lambda dst, position, length: False)
    try:
        service = CommitLogPrefaultService(store.commit_log.queue, 16 * PAGE)
        _put(store)
        assert service.prefault_ahead() == 0 and service.unsupported
        assert "cannot fault pages in ahead" in caplog.text
        assert service.prefault_ahead() == 0
        _put(store)
    finally:
        store.shutdown()


@pytest.fixture(params=["twin", "compiled"])
def layout_side(request, twins):
    return twins("rocketmq_py.store._layout").side(request.param)


def test_write_back_writes_the_pages_under_its_length(tmp_path, layout_side):
    # A file on a disk's file system: written back, a page is made read-only again, so that the next write to it
    # takes a fault (its minor-fault count). The kernel's own writeback can only add faults, never take one away.
    mapped = MappedFile(tmp_path / "00000000000000000000", 64 * PAGE)
    try:
        for position in range(0, 64 * PAGE, PAGE):
            mapped.mm[position] = 1
        layout_side.write_back(mapped.mm, 32 * PAGE - 5)  # rounded up to whole pages: 32 of them
        assert _faults_writing_each_page(mapped.mm, 0, 32 * PAGE) >= 32
    finally:
        mapped.close()


def test_write_back_checks_its_length(tmp_path, layout_side):
    mapped = MappedFile(tmp_path / "00000000000000000000", 4 * PAGE)
    try:
        layout_side.write_back(mapped.mm, 0)
        layout_side.write_back(mapped.mm, 4 * PAGE)
        for length in (-1, 4 * PAGE + 1):
            with pytest.raises(ValueError):
                layout_side.write_back(mapped.mm, length)
    finally:
        mapped.close()
