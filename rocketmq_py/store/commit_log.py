"""The CommitLog (Java's store/CommitLog): every message of every topic, appended in arrival order.

Appending writes the record straight into the last mapped file through
:mod:`rocketmq_py.store.layout`; a record that does not fit (with the 8-byte
blank marker) closes the file with the marker and goes to the next file, as
a whole batch does. The next queue offset of every topic-queue is kept here
and assigned under the put lock; prepared and rolled-back transactional
records get queue offset 0 and do not advance it.

Recovery walks records with ``layout.check_record``: normally from the third
last file, after a crash from the file the checkpoint points to, and cuts the
data at the first record that does not validate (the torn tail).
"""
from __future__ import annotations

import logging
import struct
import threading
import time
import zlib
from typing import Callable

from rocketmq_py.store import layout
from rocketmq_py.store.checkpoint import StoreCheckpoint
from rocketmq_py.store.config import MessageStoreConfig
from rocketmq_py.store.mapped_file import MappedFile, MappedFileQueue
from rocketmq_py.store.message import (
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    TRANSACTION_TYPE_MASK,
    StoreMessage,
    StoreMessageBatch,
    pack_host,
)
from rocketmq_py.store.results import AppendMessageResult, AppendMessageStatus

_log = logging.getLogger(__name__)

_INT64 = struct.Struct(">q")
_NOT_ENQUEUED = (TRANSACTION_PREPARED_TYPE, TRANSACTION_ROLLBACK_TYPE)

#: Called with each valid record found by recovery (the store builds its ConsumeQueue unit and index entries).
Dispatcher = Callable[[layout.RecordInfo], None]


def now_ms() -> int:
    return time.time_ns() // 1_000_000


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
        #: The store timestamp of each append, in ms (a test gives two stores one clock to compare their files).
        self.clock: Callable[[], int] = now_ms
        #: When the put lock was taken (0 when free), to tell a stuck store from a busy one.
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

    def _writable_file(self) -> MappedFile:
        mapped = self.queue.get_last_mapped_file(0)
        if mapped is None:
            raise OSError("could not create a CommitLog file")
        return mapped

    def append_message(self, msg: StoreMessage) -> AppendMessageResult:
        """Append one message; the caller has checked its size and the store state."""
        store_host = pack_host(msg.store_host)
        placed = self.append_parts(msg.topic, msg.topic.encode("utf-8"), msg.body, msg.encoded_properties(),
                                   msg.queue_id, msg.flag, msg.sys_flag, msg.born_timestamp, pack_host(msg.born_host),
                                   store_host, msg.reconsume_times, msg.prepared_transaction_offset)
        if isinstance(placed, AppendMessageStatus):
            return AppendMessageResult(placed)
        physical, written, queue_offset, store_timestamp = placed
        return AppendMessageResult(AppendMessageStatus.PUT_OK, physical, written, offset_msg_id(store_host, physical),
                                   store_timestamp, queue_offset, 1, [physical])

    def append_parts(self, topic: str, topic_bytes: bytes, body: bytes, properties: bytes, queue_id: int, flag: int,
                     sys_flag: int, born_timestamp: int, born_host: bytes, store_host: bytes, reconsume_times: int,
                     prepared_transaction_offset: int = 0) -> tuple[int, int, int, int] | AppendMessageStatus:
        """Append one record from its encoded parts (hosts packed, properties as stored).

        Returns ``(physical offset, size, queue offset, store timestamp)``, or the status of a record that
        was not written. The slow path (:meth:`append_message`) and the broker's fast send share it.
        """
        body_crc = zlib.crc32(body) & 0x7FFFFFFF
        record_size = layout.record_length(_host_flags(sys_flag, born_host, store_host), len(body),
                                           len(topic_bytes), len(properties))
        if record_size + layout.END_FILE_MIN_BLANK_LENGTH > self.file_size:
            return AppendMessageStatus.MESSAGE_SIZE_EXCEEDED
        key = (topic, queue_id)
        enqueued = sys_flag & TRANSACTION_TYPE_MASK not in _NOT_ENQUEUED
        with self.put_lock:
            store_timestamp = self.begin_time_in_lock = self.clock()
            try:
                queue_offset = self.topic_queue_table.get(key, 0) if enqueued else 0
                for _ in range(2):
                    mapped = self._writable_file()
                    position = mapped.wrote_position
                    physical = mapped.file_from_offset + position
                    written = layout.append_message(
                        mapped.mm, position, self.file_size, topic_bytes, body, properties, queue_id, flag,
                        queue_offset, physical, sys_flag, born_timestamp, born_host, store_timestamp,
                        store_host, reconsume_times, prepared_transaction_offset, body_crc,
                    )
                    if written:
                        break
                    mapped.wrote_position = self.file_size
                else:
                    return AppendMessageStatus.UNKNOWN_ERROR
                mapped.wrote_position = position + written
                mapped.store_timestamp = store_timestamp
                if enqueued:
                    self.topic_queue_table[key] = queue_offset + 1
            finally:
                self.begin_time_in_lock = 0
        return physical, written, queue_offset, store_timestamp

    def append_messages(self, batch: StoreMessageBatch, properties: bytes) -> AppendMessageResult:
        """Append every message of a batch body as its own record, with consecutive queue offsets."""
        store_host = pack_host(batch.store_host)
        records, count = layout.encode_batch(batch.body, batch.topic.encode("utf-8"), batch.queue_id, batch.sys_flag,
                                             batch.born_timestamp, pack_host(batch.born_host), 0, store_host,
                                             batch.reconsume_times, properties)
        placed = self.append_records(batch.topic, batch.queue_id, records, count)
        if isinstance(placed, AppendMessageStatus):
            return AppendMessageResult(placed)
        physical, queue_offset, store_timestamp = placed
        offsets = record_offsets(records, physical)
        msg_id = ",".join(offset_msg_id(store_host, offset) for offset in offsets)
        return AppendMessageResult(AppendMessageStatus.PUT_OK, physical, len(records), msg_id, store_timestamp,
                                   queue_offset, count, offsets)

    def append_records(self, topic: str, queue_id: int, records: bytes | bytearray,
                       count: int) -> tuple[int, int, int] | AppendMessageStatus:
        """Append ``count`` records encoded by ``layout.encode_batch`` for ``topic``/``queue_id``.

        Returns ``(physical offset, first queue offset, store timestamp)``, or the status of records that
        were not written. The batch put and the broker's fast batch send share it.
        """
        if count == 0 or len(records) + layout.END_FILE_MIN_BLANK_LENGTH > self.file_size:
            return AppendMessageStatus.MESSAGE_SIZE_EXCEEDED
        key = (topic, queue_id)
        with self.put_lock:
            store_timestamp = self.begin_time_in_lock = self.clock()
            try:
                queue_offset = self.topic_queue_table.get(key, 0)
                for _ in range(2):
                    mapped = self._writable_file()
                    position = mapped.wrote_position
                    physical = mapped.file_from_offset + position
                    if layout.append_records(mapped.mm, position, self.file_size, records, queue_offset, physical,
                                             store_timestamp):
                        break
                    mapped.wrote_position = self.file_size
                else:
                    return AppendMessageStatus.UNKNOWN_ERROR
                mapped.wrote_position = position + len(records)
                mapped.store_timestamp = store_timestamp
                self.topic_queue_table[key] = queue_offset + count
            finally:
                self.begin_time_in_lock = 0
        return physical, queue_offset, store_timestamp

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

    def get_message(self, offset: int, size: int) -> bytes | None:
        """``size`` bytes at CommitLog ``offset`` (one record, when ``size`` is its size)."""
        mapped = self.queue.find_mapped_file_by_offset(offset)
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
        mapped = self.queue.find_mapped_file_by_offset(offset)
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


def _host_flags(sys_flag: int, born_host: bytes, store_host: bytes) -> int:
    sys_flag &= ~0x30
    if len(born_host) == 20:
        sys_flag |= 0x10
    if len(store_host) == 20:
        sys_flag |= 0x20
    return sys_flag


def record_offsets(records: bytes | bytearray, first: int) -> list[int]:
    """The CommitLog offset of each record of ``records``, the first written at ``first``."""
    offsets = []
    position = 0
    while position < len(records):
        offsets.append(first + position)
        position += int.from_bytes(records[position:position + 4], "big")
    return offsets
