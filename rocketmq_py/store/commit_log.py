"""The CommitLog (Java's store/CommitLog): every message of every topic, appended in arrival order.

This class keeps the files, the next queue offset of every topic-queue, the
put lock and the clock; the store's write path
(:mod:`rocketmq_py.store.write_path`) appends the records under that lock:
records that do not fit (with the 8-byte blank marker) close the file with
the marker and go to the next file together. A slave appends the master's
bytes as they come (:meth:`CommitLog.append_data`).

Recovery walks records with ``layout.check_record``: normally from the third
last file, after a crash from the file the checkpoint points to, and cuts the
data at the first record that does not validate (the torn tail).
"""
from __future__ import annotations

import logging
import struct
import threading
from typing import Callable

from rocketmq_py.common.clock import now_ms
from rocketmq_py.store import layout
from rocketmq_py.store.checkpoint import StoreCheckpoint
from rocketmq_py.store.config import MessageStoreConfig
from rocketmq_py.store.mapped_file import MappedFile, MappedFileQueue

_log = logging.getLogger(__name__)

_INT64 = struct.Struct(">q")

#: Called with each valid record found by recovery (the store builds its ConsumeQueue unit and index entries).
Dispatcher = Callable[[layout.RecordInfo], None]


def offset_msg_id(store_host: bytes, physical_offset: int) -> str:
    """The offset message id: the packed store host and the CommitLog offset, in upper-case hex."""
    return (store_host + _INT64.pack(physical_offset)).hex().upper()


class CommitLog:
    def __init__(self, config: MessageStoreConfig) -> None:
        self.config = config
        self.file_size = config.mapped_file_size_commit_log
        self.queue = MappedFileQueue(config.commit_log_dir, self.file_size)
        #: (topic, queue id) -> the queue offset the next message gets.
        self.topic_queue_table: dict[tuple[str, int], int] = {}
        self.put_lock = threading.Lock()
        #: The store timestamp of each put, in ms, read once per put (a test gives two stores one clock to
        #: compare their files).
        self.clock: Callable[[], int] = now_ms
        #: When the put lock was taken for a put (0 when free), to tell a stuck store from a busy one.
        self.begin_time_in_lock = 0

    def load(self) -> None:
        self.queue.load()
        _log.info("loaded %d CommitLog files from %s", len(self.queue.files), self.config.commit_log_dir)

    # --- offsets -------------------------------------------------------------------------------

    @property
    def min_offset(self) -> int:
        first = self.queue.first_file()
        if first is None:
            return -1
        return first.file_from_offset if first.available else self.roll_next_file(first.file_from_offset)

    @property
    def max_offset(self) -> int:
        return self.queue.max_offset

    def roll_next_file(self, offset: int) -> int:
        return offset + self.file_size - offset % self.file_size

    # --- append ----------------------------------------------------------------------------------

    def writable_file(self) -> MappedFile:
        """The last file, or a new one when it is full (or there is none); raises StoreDiskFullError."""
        mapped = self.queue.get_last_mapped_file(0)
        if mapped is None:
            raise OSError("could not create a CommitLog file")
        return mapped

    def append_data(self, start_offset: int, data: bytes) -> bool:
        """Append raw CommitLog bytes received from the master at exactly ``start_offset`` (a slave's write).

        False when ``start_offset`` is not where this CommitLog ends or the bytes would cross a file end:
        the master never sends a frame across files, so either means the two stores disagree.
        """
        with self.put_lock:
            mapped = self.queue.get_last_mapped_file(start_offset)
            if mapped is None or mapped.file_from_offset + mapped.wrote_position != start_offset:
                return False
            return mapped.append(data)

    def read_for_transfer(self, offset: int, max_size: int) -> bytes | None:
        """Up to ``max_size`` bytes from ``offset`` to the end of what its file holds (a master's HA read).

        The end of a full file includes its blank tail, so a slave's files end up byte-identical.
        """
        mapped = self.queue.find_mapped_file_by_offset(offset, offset == 0)
        if mapped is None:
            return None
        position = offset % self.file_size
        end = min(mapped.wrote_position, position + max_size)
        if position >= end:
            return None
        try:
            return mapped.mm[position:end]
        except ValueError:  # the clean service closed the file meanwhile
            return None

    # --- read --------------------------------------------------------------------------------------

    def file_at(self, offset: int) -> MappedFile | None:
        """The file that holds CommitLog ``offset``, or None: every read of a record finds its file here (a
        DLedger CommitLog keeps the records above its divided offset in the DLedger data files)."""
        return self.queue.find_mapped_file_by_offset(offset)

    @property
    def first_record_offset(self) -> int:
        """Where the first record starts (-1 without files): the CommitLog's first byte here, the first entry's
        body in a DLedger CommitLog."""
        return self.min_offset

    def get_message(self, offset: int, size: int) -> bytes | None:
        """``size`` bytes at CommitLog ``offset`` (one record, when ``size`` is its size)."""
        mapped = self.file_at(offset)
        if mapped is None:
            return None
        return mapped.read(offset % self.file_size, size)

    def get_record(self, offset: int) -> bytes | None:
        """The whole record starting at ``offset``, or None when there is none."""
        head = self.get_message(offset, 4)
        if head is None:
            return None
        size = int.from_bytes(head, "big", signed=True)
        return self.get_message(offset, size) if size > 0 else None

    def check_at(self, offset: int, check_crc: bool = False) -> layout.RecordInfo | None:
        """``layout.check_record`` on the record at ``offset``; ``None`` when no file holds it."""
        mapped = self.queue.find_mapped_file_by_offset(offset)
        if mapped is None:
            return None
        try:
            return layout.check_record(mapped.mm, offset - mapped.file_from_offset, mapped.wrote_position, check_crc)
        except ValueError:  # the file was deleted meanwhile
            return None

    def pickup_store_timestamp(self, offset: int, size: int) -> int:
        if offset < self.min_offset:
            return -1
        mapped = self.file_at(offset)
        if mapped is None:
            return -1
        position = offset % self.file_size
        try:
            return layout.read_store_timestamp(mapped.mm, position, min(position + size, mapped.wrote_position))
        except ValueError:
            return -1

    # --- recovery -----------------------------------------------------------------------------------

    def recover_normally(self) -> int:
        """After a clean shutdown: validate the last three files; return where the data ends."""
        files = self.queue.files
        if not files:
            self.queue.flushed_where = 0
            return 0
        index = max(len(files) - 3, 0)
        check_crc = self.config.check_crc_on_recover
        while True:
            mapped = files[index]
            end, blank = layout.scan_valid_end(mapped.mm, 0, self.file_size, check_crc)
            if blank and index + 1 < len(files):
                index += 1
                continue
            process_offset = mapped.file_from_offset + end
            break
        self._cut(process_offset)
        return process_offset

    def recover_abnormally(self, checkpoint: StoreCheckpoint, dispatch: Dispatcher) -> int:
        """After a crash: from the file the checkpoint trusts, validate and re-dispatch every record."""
        files = self.queue.files
        if not files:
            self.queue.flushed_where = 0
            return 0
        if self.config.message_index_enable and self.config.message_index_safe:
            trusted = checkpoint.min_timestamp_index
        else:
            trusted = checkpoint.min_timestamp
        index = len(files) - 1
        while index >= 0 and not self._starts_before(files[index], trusted):
            index -= 1
        index = max(index, 0)
        _log.info("abnormal recovery starts from CommitLog file %s", files[index].file_name)
        check_crc = self.config.check_crc_on_recover
        position = 0
        while True:
            mapped = files[index]
            info = layout.check_record(mapped.mm, position, self.file_size, check_crc)
            if info.size > 0:
                dispatch(info)
                position += info.size
            elif info.size == layout.RECORD_BLANK and index + 1 < len(files):
                index += 1
                position = 0
            else:
                break
        process_offset = files[index].file_from_offset + position
        self._cut(process_offset)
        return process_offset

    def _starts_before(self, mapped: MappedFile, trusted: int) -> bool:
        info = layout.check_record(mapped.mm, 0, self.file_size, False)
        return info.size > 0 and 0 < info.store_timestamp <= trusted

    def _cut(self, process_offset: int) -> None:
        _log.info("CommitLog data ends at offset %d", process_offset)
        self.queue.flushed_where = process_offset
        self.queue.truncate_dirty_files(process_offset)
        last = self.queue.last_file()
        if last is not None and last.wrote_position < self.file_size:
            # Bytes after the end are garbage from the torn write: clear them so a later scan stops there.
            tail = last.wrote_position
            last.mm[tail:min(tail + 8, self.file_size)] = bytes(min(8, self.file_size - tail))

    def remove_queue(self, topic: str, queue_id: int) -> None:
        with self.put_lock:
            self.topic_queue_table.pop((topic, queue_id), None)

    def shutdown(self) -> None:
        self.queue.shutdown()

