"""The read side of the message store (Java's DefaultMessageStore.getMessage, the offset queries,
lookups by time, offset and key), kept apart from the write and lifecycle code in ``message_store``.

Pulls read at most one ConsumeQueue file's worth of units per call, filter
by tag code on the unit (and optionally on the record), and stop at
``maxMsgNums`` or the transfer limits (32 messages / 256 KiB in memory, 8 /
64 KiB when the data is likely on disk), as Java does.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Protocol

from rocketmq_py.common.topic import RMQ_SYS_SCHEDULE_TOPIC
from rocketmq_py.store import layout, read_path
from rocketmq_py.store.config import SLAVE
from rocketmq_py.store.consume_queue import MAX_FILTER_BYTES, UNIT
from rocketmq_py.store.results import GetMessageResult, GetMessageStatus, QueryMessageResult

if TYPE_CHECKING:
    from rocketmq_py.store.commit_log import CommitLog
    from rocketmq_py.store.config import MessageStoreConfig
    from rocketmq_py.store.consume_queue import ConsumeQueue, UnitWindow
    from rocketmq_py.store.index import IndexService
    from rocketmq_py.store.schedule import ScheduleMessageService


def _total_physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 << 30


TOTAL_PHYSICAL_MEMORY = _total_physical_memory()
#: Units a pull reads from its ConsumeQueue window at a time (at least its maxMsgNums): enough for an
#: unfiltered pull in one read, without building the whole 800-unit window.
MIN_READ_CHUNK = 32


class MessageFilter(Protocol):
    """Decides which messages a pull returns (Java's MessageFilter)."""

    @property
    def checks_tags(self) -> bool:
        """False when every tags code passes: a pull then does not ask :meth:`is_matched_by_consume_queue`."""

    @property
    def checks_records(self) -> bool:
        """False when every record passes: a pull then does not ask :meth:`is_matched_by_commit_log`."""

    def is_matched_by_consume_queue(self, tags_code: int) -> bool: ...

    def is_matched_by_commit_log(self, record: bytes) -> bool: ...


def record_properties(record: bytes) -> str:
    """The properties of a whole record as stored, what an SQL92 filter reads in ``is_matched_by_commit_log``
    (empty when ``record`` does not read as a record)."""
    return layout.check_record(record, 0, len(record), False).properties


class TagCodeFilter:
    """Matches the messages whose tag hash is one of ``codes`` (all when ``codes`` is None).

    The hash is compared as a Java int, as Java's ExpressionMessageFilter does.
    """

    def __init__(self, codes: set[int] | frozenset[int] | None) -> None:
        self.codes = None if codes is None else frozenset(codes)

    @property
    def checks_tags(self) -> bool:
        return self.codes is not None

    @property
    def checks_records(self) -> bool:
        return False

    def is_matched_by_consume_queue(self, tags_code: int) -> bool:
        if self.codes is None:
            return True
        code = tags_code & 0xFFFFFFFF
        return (code - 0x100000000 if code & 0x80000000 else code) in self.codes

    def is_matched_by_commit_log(self, record: bytes) -> bool:
        return True


class StoreReads:
    config: MessageStoreConfig
    commit_log: CommitLog
    index_service: IndexService | None
    schedule_service: ScheduleMessageService | None

    def get_consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        raise NotImplementedError

    # --- pull --------------------------------------------------------------------------------------

    def _next_offset(self, old: int, new: int) -> int:
        if self.config.broker_role != SLAVE or self.config.offset_check_in_slave:
            return new
        return old

    def get_messages(self, group: str, topic: str, queue_id: int, offset: int, max_msg_nums: int,
                     message_filter: MessageFilter | set[int] | frozenset[int] | None = None, *,
                     in_files: bool = False) -> GetMessageResult:
        """Up to ``max_msg_nums`` records from queue offset ``offset`` that pass ``message_filter``.

        ``message_filter`` is a :class:`MessageFilter`, a set of tag hash codes, or
        None for all. The status and next offset follow Java's GetMessageStatus rules. The records come
        copied into ``body``, or with ``in_files`` as their places in the CommitLog's files (``region``), for
        a reader that takes them from the files itself.
        """
        if isinstance(message_filter, (set, frozenset)):
            message_filter = TagCodeFilter(message_filter)
        consume_queue = self.get_consume_queue(topic, queue_id)
        if consume_queue is None:
            # Java's findConsumeQueue makes the queue it looks for, so its pull of a queue nothing was written
            # to finds an empty queue: never NO_MATCHED_LOGIC_QUEUE, which a consumer would see as the remark.
            return GetMessageResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE, self._next_offset(offset, 0))
        min_offset = consume_queue.min_offset_in_queue
        max_offset = consume_queue.max_offset_in_queue
        result = GetMessageResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE, offset, min_offset, max_offset)
        if max_offset == 0:
            result.next_begin_offset = self._next_offset(offset, 0)
        elif offset < min_offset:
            result.status = GetMessageStatus.OFFSET_TOO_SMALL
            result.next_begin_offset = self._next_offset(offset, min_offset)
        elif offset == max_offset:
            result.status = GetMessageStatus.OFFSET_OVERFLOW_ONE
            result.next_begin_offset = self._next_offset(offset, offset)
        elif offset > max_offset:
            result.status = GetMessageStatus.OFFSET_OVERFLOW_BADLY
            result.next_begin_offset = self._next_offset(offset, max_offset)
        else:
            units = consume_queue.read_units_lazily(offset, max(MAX_FILTER_BYTES, max_msg_nums * UNIT),
                                                    max(max_msg_nums, MIN_READ_CHUNK))
            if units is None:
                result.status = GetMessageStatus.OFFSET_FOUND_NULL
                result.next_begin_offset = self._next_offset(offset, consume_queue.roll_next_file(offset))
            else:
                self._collect(result, units, offset, max_msg_nums, message_filter, in_files)
        return result

    def _collect(self, result: GetMessageResult, units: UnitWindow, offset: int, max_msg_nums: int,
                 message_filter: MessageFilter | None, in_files: bool) -> None:
        memory = TOTAL_PHYSICAL_MEMORY * self.config.access_message_in_memory_max_ratio // 100
        read_path.collect(self, result, units, offset, max_msg_nums, message_filter, memory, in_files)

    # --- offsets -----------------------------------------------------------------------------------

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        consume_queue = self.get_consume_queue(topic, queue_id)
        return consume_queue.max_offset_in_queue if consume_queue is not None else 0

    # A queue nothing was written to yet reads as an empty queue (min 0, max 0, total 0): Java's
    # findConsumeQueue creates the consume queue on first lookup, so it never takes its null branch.
    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        consume_queue = self.get_consume_queue(topic, queue_id)
        return consume_queue.min_offset_in_queue if consume_queue is not None else 0

    def get_message_total_in_queue(self, topic: str, queue_id: int) -> int:
        consume_queue = self.get_consume_queue(topic, queue_id)
        return consume_queue.message_total if consume_queue is not None else 0

    def get_commit_log_offset_in_queue(self, topic: str, queue_id: int, consume_queue_offset: int) -> int:
        consume_queue = self.get_consume_queue(topic, queue_id)
        unit = consume_queue.unit_at(consume_queue_offset) if consume_queue is not None else None
        return unit[0] if unit is not None else 0

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp: int) -> int:
        """The queue offset of the message stored closest to ``timestamp`` (SEARCH_OFFSET_BY_TIMESTAMP)."""
        consume_queue = self.get_consume_queue(topic, queue_id)
        if consume_queue is None:
            return 0
        return consume_queue.get_offset_in_queue_by_time(timestamp, self.commit_log.min_offset,
                                                         self.commit_log.pickup_store_timestamp)

    def get_message_store_timestamp(self, topic: str, queue_id: int, consume_queue_offset: int) -> int:
        consume_queue = self.get_consume_queue(topic, queue_id)
        unit = consume_queue.unit_at(consume_queue_offset) if consume_queue is not None else None
        if unit is None:
            return -1
        return self.commit_log.pickup_store_timestamp(unit[0], unit[1])

    def get_earliest_message_time(self, topic: str | None = None, queue_id: int = 0) -> int:
        """Store time of the first message of a queue (GET_EARLIEST_MSG_STORETIME), or of the whole CommitLog."""
        if topic is None:
            return self.commit_log.pickup_store_timestamp(self.commit_log.first_record_offset,
                                                          self.config.max_message_size * 2)
        consume_queue = self.get_consume_queue(topic, queue_id)
        if consume_queue is None:
            return -1
        return self.get_message_store_timestamp(topic, queue_id, consume_queue.min_offset_in_queue)

    def get_max_phy_offset(self) -> int:
        return self.commit_log.max_offset

    def get_min_phy_offset(self) -> int:
        return self.commit_log.min_offset

    def check_in_disk_by_consume_offset(self, topic: str, queue_id: int, consume_offset: int) -> bool:
        consume_queue = self.get_consume_queue(topic, queue_id)
        unit = consume_queue.unit_at(consume_offset) if consume_queue is not None else None
        if unit is None:
            return False
        memory = TOTAL_PHYSICAL_MEMORY * self.config.access_message_in_memory_max_ratio // 100
        return self.commit_log.max_offset - unit[0] > memory

    # --- lookups ----------------------------------------------------------------------------------

    def select_one_message_by_offset(self, commit_log_offset: int, size: int | None = None) -> bytes | None:
        """The raw record at ``commit_log_offset`` (VIEW_MESSAGE_BY_ID), or None."""
        if size is None:
            return self.commit_log.get_record(commit_log_offset)
        return self.commit_log.get_message(commit_log_offset, size)

    def query_message(self, topic: str, key: str, max_num: int, begin: int, end: int) -> QueryMessageResult:
        """Records whose UNIQ_KEY or a KEYS token is ``key``, stored within [begin, end] (QUERY_MESSAGE)."""
        result = QueryMessageResult()
        if self.index_service is None:
            return result
        last_query_time = end
        for _ in range(3):
            offsets, last_ts, last_phy = self.index_service.query_offset(topic, key, max_num, begin, last_query_time)
            if not offsets:
                break
            offsets.sort()
            result.index_last_update_timestamp = last_ts
            result.index_last_update_phyoffset = last_phy
            for position, offset in enumerate(offsets):
                record = self.commit_log.get_record(offset)
                if record is None:
                    continue
                if position == 0:
                    last_query_time = self.commit_log.pickup_store_timestamp(offset, len(record))
                result.buffers.append(record)
            if result.buffers or last_query_time < begin:
                break
        return result

    def get_runtime_info(self) -> dict[str, str]:
        """The store part of GET_BROKER_RUNTIME_INFO, with Java's key names."""
        from rocketmq_py.store.clean import disk_used_ratio

        commit_log_dir = self.config.commit_log_dir
        commit_log_ratio = disk_used_ratio(commit_log_dir) if commit_log_dir.exists() else -1.0
        info = {
            "commitLogMinOffset": str(self.commit_log.min_offset),
            "commitLogMaxOffset": str(self.commit_log.max_offset),
            # Java gives each CommitLog path its own ratio, and the smallest as the overall one.
            f"commitLogDiskRatio_{commit_log_dir}": str(commit_log_ratio),
            "commitLogDiskRatio": str(commit_log_ratio),
            "consumeQueueDiskRatio": str(disk_used_ratio(self.config.root)),
            "dispatchBehindBytes": "0",
            "earliestMessageTimeStamp": str(self.get_earliest_message_time()),
        }
        schedule = self.schedule_service
        if schedule is not None:
            for level, offset in sorted(schedule.offsets.offset_table.items()):
                info[f"scheduleMessageOffset_{level}"] = \
                    f"{offset},{self.get_max_offset_in_queue(RMQ_SYS_SCHEDULE_TOPIC, level - 1)}"
        return info
