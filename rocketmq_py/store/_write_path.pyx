# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The store's one write path, compiled: the twin of ``_write_path_py``, which says what it does, in which order.

The same steps, checks and writes, through the same layout functions (called at C level through
``_layout.pxd``), so that both leave the same store files. The C types take the interpreter out of the
control flow; the writer keeps its collaborators in typed fields, and takes the common case of each file
(the last one, with room) without a Python call. Compiled without wraparound, so a list's last item is
named by its index.
"""
import logging
import threading

from libc.stdint cimport int32_t, int64_t

from rocketmq_py.store._layout cimport (
    RecordInfo,
    copy_records,
    index_ends,
    index_slot_hash,
    put_cq_unit,
    put_index_entry,
    read_record,
)

from rocketmq_py.store import layout
from rocketmq_py.store.index import index_keys
from rocketmq_py.store.mapped_file import StoreDiskFullError
from rocketmq_py.store.message import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    TRANSACTION_TYPE_MASK,
)
from rocketmq_py.store.results import PutMessageStatus

IMPLEMENTATION = "cython"

cdef object _log = logging.getLogger("rocketmq_py.store.write_path")

cdef Py_ssize_t UNIT = layout.CQ_UNIT_SIZE
cdef Py_ssize_t END_MARKER = layout.END_FILE_MIN_BLANK_LENGTH
cdef int32_t TYPE_MASK = TRANSACTION_TYPE_MASK
cdef int32_t NOT_TYPE = TRANSACTION_NOT_TYPE
cdef int32_t COMMIT_TYPE = TRANSACTION_COMMIT_TYPE
cdef int32_t ROLLBACK_TYPE = TRANSACTION_ROLLBACK_TYPE
cdef object PUT_OK = PutMessageStatus.PUT_OK
cdef object MESSAGE_ILLEGAL = PutMessageStatus.MESSAGE_ILLEGAL
cdef object _fill_blank = layout.cq_fill_blank


cdef inline bint _enqueued(int32_t sys_flag) noexcept:
    """Whether a record gets a ConsumeQueue unit and a queue offset (not a prepared or rolled-back one)."""
    cdef int32_t kind = sys_flag & TYPE_MASK
    return kind == NOT_TYPE or kind == COMMIT_TYPE


cdef class PutRecordsResult:
    """What became of a buffer of records (see ``_write_path_py.PutRecordsResult``)."""

    cdef public object status
    cdef public list physical_offsets
    cdef public list queue_offsets
    cdef public int64_t store_timestamp
    cdef public int64_t wrote_bytes

    def __init__(self, status, physical_offsets=None, queue_offsets=None, int64_t store_timestamp=0,
                 int64_t wrote_bytes=0):
        self.status = status
        self.physical_offsets = [] if physical_offsets is None else physical_offsets
        self.queue_offsets = [] if queue_offsets is None else queue_offsets
        self.store_timestamp = store_timestamp
        self.wrote_bytes = wrote_bytes

    def __repr__(self):
        return (f"PutRecordsResult({self.status.name}, physical_offsets={self.physical_offsets}, "
                f"queue_offsets={self.queue_offsets}, store_timestamp={self.store_timestamp}, "
                f"wrote_bytes={self.wrote_bytes})")


cdef PutRecordsResult _refused(status):
    cdef PutRecordsResult result = PutRecordsResult.__new__(PutRecordsResult)
    result.status = status
    result.physical_offsets = []
    result.queue_offsets = []
    return result


cdef class StoreWriter:
    """The write path of one loaded store (see ``_write_path_py.StoreWriter``)."""

    cdef readonly object lock
    cdef object _store
    cdef object _config
    cdef object _commit_log
    cdef object _log_files
    cdef dict _consume_queues
    cdef object _index_service
    cdef object _checkpoint
    cdef list _listeners

    def __init__(self, store):
        assert store.checkpoint is not None and store.index_service is not None, "the store is not loaded"
        self.lock = threading.RLock()
        self._store = store
        self._config = store.config
        self._commit_log = store.commit_log
        self._log_files = store.commit_log.queue
        self._consume_queues = store.consume_queue_table
        self._index_service = store.index_service
        self._checkpoint = store.checkpoint
        self._listeners = store.arrival_listeners

    # --- put ---------------------------------------------------------------------------------------

    def put(self, records):
        """Place the complete CommitLog records of ``records`` and dispatch them (see the twin)."""
        cdef list infos = []
        cdef Py_ssize_t position = 0, length = len(records)
        cdef RecordInfo info
        cdef PutRecordsResult placed
        while position < length:
            info = read_record(records, position, length, False)
            if info.size <= 0:
                _log.warning("refusing %d bytes of records: the one at byte %d does not read", length, position)
                return _refused(MESSAGE_ILLEGAL)
            infos.append(info)
            position += info.size
        if not infos or length + END_MARKER > <Py_ssize_t>self._commit_log.file_size:
            return _refused(MESSAGE_ILLEGAL)
        with self.lock:
            if not self._files_ready(infos):
                refused = self._store._make_room(_queues_of(infos))
                if refused is not None:
                    return _refused(refused)
            placed = self._place(records, length, infos)
            arrivals = self.dispatch(infos)
        if arrivals:
            self._store.tell_arrivals(arrivals)
        return placed

    cdef bint _files_ready(self, list infos) except -1:
        """True when every file the records go into exists and is not full (see the twin)."""
        cdef RecordInfo info
        cdef object topic = None
        cdef int32_t queue_id = -1
        cdef int64_t end_phy_offset
        cdef int32_t index_count
        files = self._log_files.files
        if not files:
            return False
        mapped = files[len(files) - 1]
        if <Py_ssize_t>mapped.wrote_position >= <Py_ssize_t>mapped.file_size:
            return False
        for info in infos:
            if not _enqueued(info.sys_flag) or (info.queue_id == queue_id and info.topic == topic):
                continue
            topic = info.topic
            queue_id = info.queue_id
            queues = self._consume_queues.get(topic)
            if queues is None:
                return False
            consume_queue = (<dict>queues).get(queue_id)
            if consume_queue is None:
                return False
            files = consume_queue.queue.files
            if not files:
                return False
            mapped = files[len(files) - 1]
            if <Py_ssize_t>mapped.wrote_position >= <Py_ssize_t>mapped.file_size:
                return False
        if self._config.message_index_enable:
            files = self._index_service.files
            if not files:
                return False
            index_file = files[len(files) - 1]
            index_ends(index_file.mapped.mm, &end_phy_offset, &index_count)
            if index_count >= <int32_t>index_file.index_num:
                return False
        return True

    cdef PutRecordsResult _place(self, records, Py_ssize_t length, list infos):
        """Copy the records into the CommitLog with their offsets and one store time (see the twin)."""
        cdef RecordInfo info
        cdef list queue_offsets = []
        cdef list physical_offsets = []
        cdef dict next_offsets = {}
        cdef object topic = None
        cdef int32_t queue_id = -1
        cdef int64_t next_offset = 0, store_timestamp = 0, physical = 0  # set under the lock
        cdef Py_ssize_t position, file_size
        cdef PutRecordsResult result
        commit_log = self._commit_log
        table = commit_log.topic_queue_table
        with commit_log.put_lock:
            store_timestamp = commit_log.clock()
            commit_log.begin_time_in_lock = store_timestamp
            try:
                # Each record takes the next offset of its topic-queue; a run of records of one queue (a batch)
                # looks its queue up once.
                for info in infos:
                    if not _enqueued(info.sys_flag):
                        queue_offsets.append(0)
                        continue
                    if info.queue_id != queue_id or info.topic != topic:
                        if topic is not None:
                            next_offsets[(topic, queue_id)] = next_offset
                        topic = info.topic
                        queue_id = info.queue_id
                        key = (topic, queue_id)
                        known = next_offsets.get(key)
                        next_offset = (table.get(key, 0) if known is None else known)
                    queue_offsets.append(next_offset)
                    next_offset += 1
                if topic is not None:
                    next_offsets[(topic, queue_id)] = next_offset
                file_size = commit_log.file_size
                files = self._log_files.files
                mapped = files[len(files) - 1] if files else None
                if mapped is None or <Py_ssize_t>mapped.wrote_position >= <Py_ssize_t>mapped.file_size:
                    mapped = commit_log.writable_file()
                position = mapped.wrote_position
                physical = <int64_t>mapped.file_from_offset + position
                if not copy_records(mapped.mm, position, file_size, records, queue_offsets, physical,
                                    store_timestamp):
                    mapped.wrote_position = file_size
                    mapped = commit_log.writable_file()
                    position = mapped.wrote_position
                    physical = <int64_t>mapped.file_from_offset + position
                    if not copy_records(mapped.mm, position, file_size, records, queue_offsets, physical,
                                        store_timestamp):
                        raise AssertionError("records that fit an empty CommitLog file did not fit the next one")
                mapped.wrote_position = position + length
                mapped.store_timestamp = store_timestamp
                table.update(next_offsets)
            finally:
                commit_log.begin_time_in_lock = 0
        for number in range(len(infos)):
            info = infos[number]
            physical_offsets.append(physical)
            info.physical_offset = physical
            info.queue_offset = queue_offsets[number]
            info.store_timestamp = store_timestamp
            physical += info.size
        result = PutRecordsResult.__new__(PutRecordsResult)
        result.status = PUT_OK
        result.physical_offsets = physical_offsets
        result.queue_offsets = queue_offsets
        result.store_timestamp = store_timestamp
        result.wrote_bytes = length
        return result

    # --- dispatch ----------------------------------------------------------------------------------

    cpdef list dispatch(self, list infos):
        """Build each written record's ConsumeQueue unit and index entries and advance the checkpoint's logics
        time; the arrival notices when the store has listeners (see the twin)."""
        cdef list arrivals = []
        cdef bint notify = len(self._listeners) > 0
        cdef bint indexing = self._config.message_index_enable
        cdef RecordInfo info
        cdef int64_t tags_code, unit_timestamp = 0
        cdef bint unit_put = False
        for info in infos:
            tags_code = info.tags_code
            if info.delay_level > 0:
                tags_code = self._store.compute_deliver_timestamp(info.delay_level, info.store_timestamp)
            if _enqueued(info.sys_flag):
                queues = self._consume_queues.get(info.topic)
                consume_queue = (<dict>queues).get(info.queue_id) if queues is not None else None
                if consume_queue is None:
                    consume_queue = self._store.find_consume_queue(info.topic, info.queue_id)
                if _put_unit(consume_queue, info.physical_offset, info.size, tags_code, info.queue_offset):
                    unit_put = True
                    unit_timestamp = info.store_timestamp
                else:
                    _log.error("[BUG] the ConsumeQueue %s-%d could not take the unit of %d", info.topic,
                               info.queue_id, info.physical_offset)
            if indexing:
                try:
                    self._index(info)
                except StoreDiskFullError as error:
                    _log.error("record at %d is not indexed: %s", info.physical_offset, error)
            if notify:
                arrivals.append((info.topic, info.queue_id, info.queue_offset + 1, tags_code, info.store_timestamp,
                                 info.properties))
        if unit_put:
            self._checkpoint.logics_msg_timestamp = unit_timestamp
        return arrivals

    cdef int _index(self, RecordInfo info) except -1:
        """Put the record's index entries, rolling to a new file when one fills (see the twin)."""
        cdef int64_t end_phy_offset = 0
        cdef int32_t index_count = 0
        cdef int32_t key_hash
        service = self._index_service
        files = service.files
        index_file = files[len(files) - 1] if files else None
        if index_file is not None:
            index_ends(index_file.mapped.mm, &end_phy_offset, &index_count)
            if index_count >= <int32_t>index_file.index_num:
                index_file = None
        if index_file is None:
            index_file = service.writable_file()
            index_ends(index_file.mapped.mm, &end_phy_offset, &index_count)
        if info.physical_offset < end_phy_offset or info.sys_flag & TYPE_MASK == ROLLBACK_TYPE:
            return 0
        mm = index_file.mapped.mm
        for key in index_keys(info.topic, info.keys, info.uniq_key):
            key_hash = index_slot_hash(key)
            while not put_index_entry(mm, index_file.hash_slot_num, index_file.index_num, key_hash,
                                      info.physical_offset, info.store_timestamp):
                index_file = service.writable_file()
                mm = index_file.mapped.mm
        return 0


cdef list _queues_of(list infos):
    """The topic-queues the records take units in, each once, in the order they come."""
    cdef RecordInfo info
    cdef dict queues = {}
    for info in infos:
        if _enqueued(info.sys_flag):
            queues[(info.topic, info.queue_id)] = None
    return list(queues)


def put_unit(consume_queue, int64_t physical_offset, int32_t size, int64_t tags_code, int64_t queue_offset):
    """Write the unit of ``queue_offset``: the one place a ConsumeQueue unit is written (see the twin)."""
    return _put_unit(consume_queue, physical_offset, size, tags_code, queue_offset)


cdef bint _put_unit(consume_queue, int64_t physical_offset, int32_t size, int64_t tags_code,
                    int64_t queue_offset) except -1:
    cdef int64_t expected = queue_offset * UNIT, current
    cdef Py_ssize_t position, blank_until
    if physical_offset + size <= <int64_t>consume_queue.max_physic_offset:
        return True
    # The common case first: the unit follows the end of the last file, which has room for it.
    files = consume_queue.queue.files
    if files:
        mapped = files[len(files) - 1]
        position = mapped.wrote_position
        if (position > 0 and position + UNIT <= <Py_ssize_t>consume_queue.file_size
                and <int64_t>mapped.file_from_offset + position == expected):
            put_cq_unit(mapped.mm, position, physical_offset, size, tags_code)
            mapped.wrote_position = position + UNIT
            consume_queue.max_physic_offset = physical_offset + size
            return True
    mapped = consume_queue.queue.get_last_mapped_file(expected)
    if mapped is None:
        return False
    if mapped.first_create_in_queue and queue_offset != 0 and mapped.wrote_position == 0:
        consume_queue.min_logic_offset = expected
        consume_queue.queue.flushed_where = expected
        blank_until = expected % <int64_t>consume_queue.file_size
        _fill_blank(mapped.mm, 0, blank_until)
        mapped.wrote_position = blank_until
    if queue_offset != 0:
        current = <int64_t>mapped.file_from_offset + <int64_t>mapped.wrote_position
        if expected < current:
            _log.debug("%s-%d: unit %d is already built", consume_queue.topic, consume_queue.queue_id, queue_offset)
            return True
        if expected != current:
            _log.warning("%s-%d: queue offset %d expected at byte %d but the queue ends at %d",
                         consume_queue.topic, consume_queue.queue_id, queue_offset, expected, current)
    position = mapped.wrote_position
    if position + UNIT > <Py_ssize_t>consume_queue.file_size:
        return False
    put_cq_unit(mapped.mm, position, physical_offset, size, tags_code)
    mapped.wrote_position = position + UNIT
    consume_queue.max_physic_offset = physical_offset + size
    return True
