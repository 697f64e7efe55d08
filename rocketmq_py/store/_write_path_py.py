"""The store's one write path, in pure Python: the twin of ``_write_path.pyx`` and its specification.

Every record enters the store through a :class:`StoreWriter` (Java's CommitLog.putMessage/putMessages with
DefaultAppendMessageCallback, and DefaultMessageStore.doDispatch with its two CommitLogDispatchers): the
records :class:`~rocketmq_py.store.MessageStore` builds from a message or a batch body, and the records built
elsewhere (the broker's fast send path), always as a buffer of complete CommitLog records of any topics and
queues. :meth:`StoreWriter.put` takes such a buffer through four steps:

1. read every record (topic, queue, sysflag, tags, keys); a buffer with a record that does not read is
   refused as it is, with nothing written;
2. under the write lock, when a file the records go into is missing or full (the CommitLog's, a
   ConsumeQueue's, the index's), have the store make it first, so that a full disk refuses the put before
   anything is written;
3. place the buffer: under the CommitLog's put lock, read the clock once, give each record the next queue
   offset of its topic-queue (prepared and rolled-back transactional records get 0 and take none), its
   physical offset and that store time, and copy the buffer into the last CommitLog file (a buffer that does
   not fit closes the file with the end marker and goes whole into the next);
4. dispatch the records (:meth:`StoreWriter.dispatch`, the one routine, which recovery, the reput at start
   and a slave's replication run too): each record's ConsumeQueue unit (:func:`put_unit`, the only
   ConsumeQueue write), its index entries and the checkpoint's logics time; the arrival notices are told to
   the store's listeners once the lock is released.
"""
from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from rocketmq_py.store import layout
from rocketmq_py.store.index import index_keys
from rocketmq_py.store.mapped_file import StoreDiskFullError
from rocketmq_py.common.sysflag import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    TRANSACTION_TYPE_MASK,
)
from rocketmq_py.store.results import Arrival, PutMessageStatus

if TYPE_CHECKING:
    from rocketmq_py.store.consume_queue import ConsumeQueue
    from rocketmq_py.store.mapped_file import MappedFile
    from rocketmq_py.store.message_store import MessageStore

IMPLEMENTATION = "python"

_log = logging.getLogger("rocketmq_py.store.write_path")

_UNIT = layout.CQ_UNIT_SIZE
_ENQUEUED = (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE)



class PutRecordsResult:
    """What became of a buffer of records: ``status`` and, when it is PUT_OK, where each record went.

    ``physical_offsets[i]`` and ``queue_offsets[i]`` are record ``i``'s CommitLog offset and queue offset
    (0 for a prepared or rolled-back transactional record); all were stored at ``store_timestamp``, and
    ``wrote_bytes`` is the length of the buffer.
    """

    __slots__ = ("status", "physical_offsets", "queue_offsets", "store_timestamp", "wrote_bytes")

    def __init__(self, status: PutMessageStatus, physical_offsets: list[int] | None = None,
                 queue_offsets: list[int] | None = None, store_timestamp: int = 0, wrote_bytes: int = 0) -> None:
        self.status = status
        self.physical_offsets = [] if physical_offsets is None else physical_offsets
        self.queue_offsets = [] if queue_offsets is None else queue_offsets
        self.store_timestamp = store_timestamp
        self.wrote_bytes = wrote_bytes

    def __repr__(self) -> str:
        return (f"PutRecordsResult({self.status.name}, physical_offsets={self.physical_offsets}, "
                f"queue_offsets={self.queue_offsets}, store_timestamp={self.store_timestamp}, "
                f"wrote_bytes={self.wrote_bytes})")


class StoreWriter:
    """The write path of one loaded store: made by ``MessageStore.load``, used by its puts and its dispatches."""

    def __init__(self, store: MessageStore) -> None:
        assert store.checkpoint is not None and store.index_service is not None, "the store is not loaded"
        #: Placing and dispatching happen under this lock, so units are built in CommitLog order whichever
        #: thread writes (the event loop, the schedule thread, a slave's replication).
        self.lock = threading.RLock()
        self._store = store
        self._config = store.config
        self._commit_log = store.commit_log
        self._consume_queues = store.consume_queue_table
        self._index_service = store.index_service
        self._checkpoint = store.checkpoint
        self._listeners = store.arrival_listeners

    # --- put ---------------------------------------------------------------------------------------

    def put(self, records: bytes | bytearray | memoryview) -> PutRecordsResult:
        """Place the complete CommitLog records of ``records`` and dispatch them; PUT_OK, or a refusal
        (MESSAGE_ILLEGAL) with nothing written. A full disk raises :class:`StoreDiskFullError`, also with
        nothing written."""
        infos = read_records(records)
        if not infos or len(records) + layout.END_FILE_MIN_BLANK_LENGTH > self._commit_log.file_size:
            return PutRecordsResult(PutMessageStatus.MESSAGE_ILLEGAL)
        with self.lock:
            if not self._files_ready(infos):
                refused = self._store._make_room(_queues_of(infos))
                if refused is not None:
                    return PutRecordsResult(refused)
            placed = self._place(records, infos)
            arrivals = self.dispatch(infos)
        if arrivals:
            self._store.tell_arrivals(arrivals)
        return placed

    def _files_ready(self, infos: list[layout.RecordInfo]) -> bool:
        """True when every file the records go into exists and is not full, so that the store's ``_make_room``
        would make none (it is then not called: the common case, without a Python call per file)."""
        log_files = self._commit_log.queue.files
        if not log_files or log_files[-1].is_full:
            return False
        for info in infos:
            if info.sys_flag & TRANSACTION_TYPE_MASK in _ENQUEUED:
                consume_queue = self._consume_queues.get(info.topic, {}).get(info.queue_id)
                if consume_queue is None:
                    return False
                cq_files = consume_queue.queue.files
                if not cq_files or cq_files[-1].is_full:
                    return False
        if self._config.message_index_enable:
            index_files = self._index_service.files
            if not index_files or index_files[-1].is_write_full:
                return False
        return True

    def _place(self, records: bytes | bytearray | memoryview, infos: list[layout.RecordInfo]) -> PutRecordsResult:
        """Copy the records into the CommitLog with their offsets and one store time (the caller holds the
        write lock and has made the files)."""
        commit_log = self._commit_log
        table = commit_log.topic_queue_table
        with commit_log.put_lock:
            store_timestamp = commit_log.begin_time_in_lock = commit_log.clock()
            try:
                queue_offsets, next_offsets = assign_queue_offsets(table, infos)
                mapped, physical = self._append(records, queue_offsets, store_timestamp)
                mapped.wrote_position += len(records)
                mapped.store_timestamp = store_timestamp
                table.update(next_offsets)
            finally:
                commit_log.begin_time_in_lock = 0
        physical_offsets = []
        for info, queue_offset in zip(infos, queue_offsets):
            physical_offsets.append(physical)
            info.physical_offset = physical
            info.queue_offset = queue_offset
            info.store_timestamp = store_timestamp
            physical += info.size
        return PutRecordsResult(PutMessageStatus.PUT_OK, physical_offsets, queue_offsets, store_timestamp,
                                len(records))

    def _append(self, records: bytes | bytearray | memoryview, queue_offsets: list[int],
                store_timestamp: int) -> tuple[MappedFile, int]:
        """Write the records at the end of the last CommitLog file, or of the next when they do not fit (the
        last is then closed with the end marker): ``(that file, the physical offset of the first record)``."""
        commit_log = self._commit_log
        for _ in range(2):
            mapped = commit_log.writable_file()
            position = mapped.wrote_position
            physical = mapped.file_from_offset + position
            if layout.append_records(mapped.mm, position, commit_log.file_size, records, queue_offsets, physical,
                                     store_timestamp):
                return mapped, physical
            mapped.wrote_position = commit_log.file_size
        raise AssertionError("records that fit an empty CommitLog file did not fit the next one")

    # --- dispatch ----------------------------------------------------------------------------------

    def dispatch(self, infos: list[layout.RecordInfo]) -> list[Arrival]:
        """Build the ConsumeQueue unit and the index entries of each written record and advance the
        checkpoint's logics time (Java's doDispatch); return the arrival notices when the store has
        listeners (the caller tells them once it has let go of the write lock)."""
        arrivals: list[Arrival] = []
        notify = bool(self._listeners)
        indexing = self._config.message_index_enable
        unit_timestamp = None
        for info in infos:
            tags_code = info.tags_code
            if info.delay_level > 0:
                tags_code = self._store.compute_deliver_timestamp(info.delay_level, info.store_timestamp)
            if info.sys_flag & TRANSACTION_TYPE_MASK in _ENQUEUED:
                consume_queue = self._consume_queues.get(info.topic, {}).get(info.queue_id)
                if consume_queue is None:
                    consume_queue = self._store.find_consume_queue(info.topic, info.queue_id)
                if put_unit(consume_queue, info.physical_offset, info.size, tags_code, info.queue_offset):
                    unit_timestamp = info.store_timestamp
                else:
                    _log.error("[BUG] the ConsumeQueue %s-%d could not take the unit of %d", info.topic,
                               info.queue_id, info.physical_offset)
            if indexing:
                try:
                    self._index(info)
                except StoreDiskFullError as error:
                    # Only a record whose keys overflow the index file gets here: it stays readable, unindexed.
                    _log.error("record at %d is not indexed: %s", info.physical_offset, error)
            if notify:
                arrivals.append((info.topic, info.queue_id, info.queue_offset + 1, tags_code, info.store_timestamp,
                                 info.properties))
        if unit_timestamp is not None:
            # The store time of the last record with a unit: the ConsumeQueues hold everything up to it.
            self._checkpoint.logics_msg_timestamp = unit_timestamp
        return arrivals

    def _index(self, info: layout.RecordInfo) -> None:
        """Put the record's index entries (Java's IndexService.buildIndex), rolling to a new file when one fills."""
        service = self._index_service
        index_files = service.files
        index_file = index_files[-1] if index_files else None
        if index_file is None or index_file.is_write_full:
            index_file = service.writable_file()
        if info.physical_offset < index_file.end_phy_offset:
            return
        if info.sys_flag & TRANSACTION_TYPE_MASK == TRANSACTION_ROLLBACK_TYPE:
            return
        for key in index_keys(info.topic, info.keys, info.uniq_key):
            key_hash = layout.index_key_hash(key)
            while not layout.index_put(index_file.mapped.mm, index_file.hash_slot_num, index_file.index_num,
                                       key_hash, info.physical_offset, info.store_timestamp):
                index_file = service.writable_file()


def read_records(records: bytes | bytearray | memoryview) -> list[layout.RecordInfo]:
    """Read every record of a buffer of complete CommitLog records (step 1); an empty list when one does not
    read (logged) or there is none."""
    infos = []
    position = 0
    while position < len(records):
        info = layout.check_record(records, position, len(records), False)
        if info.size <= 0:
            _log.warning("refusing %d bytes of records: the one at byte %d does not read", len(records), position)
            return []
        infos.append(info)
        position += info.size
    return infos


def assign_queue_offsets(table: dict[tuple[str, int], int], infos: list[layout.RecordInfo]
                         ) -> tuple[list[int], dict[tuple[str, int], int]]:
    """Each record's queue offset, the next of its topic-queue in ``table`` (the CommitLog's topic queue table;
    prepared and rolled-back transactional records get 0 and take none), and the table's next offsets once the
    records are placed (the caller updates the table then, under the same put lock)."""
    next_offsets: dict[tuple[str, int], int] = {}
    queue_offsets = []
    for info in infos:
        if info.sys_flag & TRANSACTION_TYPE_MASK in _ENQUEUED:
            key = (info.topic, info.queue_id)
            queue_offset = next_offsets.get(key, table.get(key, 0))
            next_offsets[key] = queue_offset + 1
        else:
            queue_offset = 0
        queue_offsets.append(queue_offset)
    return queue_offsets, next_offsets


def _queues_of(infos: list[layout.RecordInfo]) -> list[tuple[str, int]]:
    """The topic-queues the records take units in, each once, in the order they come."""
    queues: dict[tuple[str, int], None] = {}
    for info in infos:
        if info.sys_flag & TRANSACTION_TYPE_MASK in _ENQUEUED:
            queues[(info.topic, info.queue_id)] = None
    return list(queues)


def put_unit(consume_queue: ConsumeQueue, physical_offset: int, size: int, tags_code: int, queue_offset: int) -> bool:
    """Write the unit of ``queue_offset`` (Java's ConsumeQueue.putMessagePositionInfo): the one place a
    ConsumeQueue unit is written. True also when the unit is there already; False when no file takes it.

    A queue whose first file starts above 0 gets the file's head filled with blank units, as Java does.
    """
    if physical_offset + size <= consume_queue.max_physic_offset:
        return True
    expected = queue_offset * _UNIT
    mapped = consume_queue.queue.get_last_mapped_file(expected)
    if mapped is None:
        return False
    if mapped.first_create_in_queue and queue_offset != 0 and mapped.wrote_position == 0:
        consume_queue.min_logic_offset = expected
        consume_queue.queue.flushed_where = expected
        blank_until = expected % consume_queue.file_size
        layout.cq_fill_blank(mapped.mm, 0, blank_until)
        mapped.wrote_position = blank_until
    if queue_offset != 0:
        current = mapped.file_from_offset + mapped.wrote_position
        if expected < current:
            _log.debug("%s-%d: unit %d is already built", consume_queue.topic, consume_queue.queue_id, queue_offset)
            return True
        if expected != current:
            _log.warning("%s-%d: queue offset %d expected at byte %d but the queue ends at %d",
                         consume_queue.topic, consume_queue.queue_id, queue_offset, expected, current)
    position = mapped.wrote_position
    if position + _UNIT > consume_queue.file_size:
        return False
    layout.cq_put_unit(mapped.mm, position, physical_offset, size, tags_code)
    mapped.wrote_position = position + _UNIT
    consume_queue.max_physic_offset = physical_offset + size
    return True
