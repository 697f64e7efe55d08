"""The store's read path in pure Python: the twin of ``_read_path.pyx`` and its specification.

``collect`` walks a pull's ConsumeQueue units and gathers the records that pass the filter, within Java's
transfer limits (Java's DefaultMessageStore.getMessage loop).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from rocketmq_py.remoting.file_region import RANGE
from rocketmq_py.store.results import GetMessageStatus, RecordRegion

if TYPE_CHECKING:
    from rocketmq_py.store.consume_queue import UnitWindow
    from rocketmq_py.store.mapped_file import MappedFile
    from rocketmq_py.store.reads import MessageFilter, StoreReads
    from rocketmq_py.store.results import GetMessageResult

IMPLEMENTATION = "python"


class _Region:
    """The places of the records a pull gathers in ``in_files`` mode: each file with its mapping, and the ranges
    (records that follow each other in one file make one)."""

    def __init__(self) -> None:
        self.files: list[MappedFile] = []
        self.views: list[memoryview] = []
        self.ranges: list[list[int]] = []
        self.size = 0

    def add(self, mapped: MappedFile, position: int, size: int) -> memoryview | None:
        """Add the record at ``position`` of ``mapped``; a view of its bytes (not a copy: these records are not
        copied in this process), or None where ``mapped.read`` gives None."""
        if position < 0 or size < 0 or position + size > mapped.wrote_position:
            return None
        if not self.files or self.files[-1] is not mapped:
            try:
                view = memoryview(mapped.mm)
            except ValueError:  # the mapping was closed by the clean service
                return None
            self.files.append(mapped)
            self.views.append(view)
        index = len(self.files) - 1
        view = self.views[index]
        if position + size > len(view):
            return None
        last = self.ranges[-1] if self.ranges else None
        if last is not None and last[0] == index and last[1] + last[2] == position:
            last[2] += size
        else:
            self.ranges.append([index, position, size])
        self.size += size
        return view[position:position + size]

    def drop_last(self, size: int) -> None:
        """Take the last ``size`` bytes added back out (a record the filter refused)."""
        last = self.ranges[-1]
        last[2] -= size
        if not last[2]:
            self.ranges.pop()
        self.size -= size

    def region(self) -> RecordRegion:
        return RecordRegion(self.files, self.views, b"".join(RANGE.pack(*entry) for entry in self.ranges),
                            self.size)


def collect(reads: StoreReads, result: GetMessageResult, units: UnitWindow, offset: int,
            max_msg_nums: int, message_filter: MessageFilter | None, memory: int, in_files: bool = False) -> None:
    """Fill ``result`` with the records of ``units`` (read from queue offset ``offset``) that pass
    ``message_filter``, until ``max_msg_nums`` or the transfer limits; ``memory`` is the byte distance
    behind the CommitLog's end past which data is taken to be on disk (the smaller limits apply).
    The records go into ``result.body`` back to back, or with ``in_files`` their places into ``result.region``
    (when any is found)."""
    result.status = GetMessageStatus.NO_MATCHED_MESSAGE
    commit_log = reads.commit_log
    config = reads.config
    max_physical = commit_log.max_offset
    next_file_start = None
    last_physical = 0
    total_size = 0
    read = 0
    records: list[bytes | memoryview] = []
    region = _Region() if in_files else None
    # A filter that passes everything (a subscription to "*") is not asked about each message.
    check_tags = message_filter is not None and message_filter.checks_tags
    check_records = message_filter is not None and message_filter.checks_records
    for physical, size, tags_code in units:
        last_physical = physical
        if next_file_start is not None and physical < next_file_start:
            read += 1
            continue
        count = len(records)
        if count:
            if max_msg_nums <= count:
                break
            if max_physical - physical > memory:
                if (total_size + size > config.max_transfer_bytes_on_message_in_disk
                        or count > config.max_transfer_count_on_message_in_disk - 1):
                    break
            elif (total_size + size > config.max_transfer_bytes_on_message_in_memory
                  or count > config.max_transfer_count_on_message_in_memory - 1):
                break
        read += 1
        if check_tags and not message_filter.is_matched_by_consume_queue(tags_code):  # type: ignore[union-attr]
            continue
        record: bytes | memoryview | None
        if region is None:
            record = commit_log.get_message(physical, size)
        else:
            mapped = commit_log.file_at(physical)
            record = None if mapped is None else region.add(mapped, physical % commit_log.file_size, size)
        if record is None:
            if not records:
                result.status = GetMessageStatus.MESSAGE_WAS_REMOVING
            next_file_start = commit_log.roll_next_file(physical)
            continue
        # A record filter reads a copy of a placed record (``bytes`` of a copy already is that copy).
        if check_records and not message_filter.is_matched_by_commit_log(bytes(record)):  # type: ignore[union-attr]
            if region is not None:
                region.drop_last(size)
            continue
        records.append(record)
        result.queue_offsets.append(offset + read - 1)
        total_size += size
        result.status = GetMessageStatus.FOUND
        next_file_start = None
    if region is None:
        result.body = b"".join(records)
    elif records:
        result.region = region.region()
    result.next_begin_offset = offset + read
    result.suggest_pulling_from_slave = max_physical - last_physical > memory
