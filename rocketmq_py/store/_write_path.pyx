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

cimport cython

from libc.stdint cimport int32_t, int64_t, uint32_t

from rocketmq_py.store._layout cimport (
    RecordInfo,
    copy_records,
    index_ends,
    index_slot_of,
    java_hash_char,
    java_hash_on,
    put_cq_unit,
    put_index_entry,
    read_record,
)

from rocketmq_py.store import layout
from rocketmq_py.store.mapped_file import StoreDiskFullError
from rocketmq_py.common.sysflag import (
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


@cython.no_gc  # a status and two lists of numbers: in no reference cycle (see _layout.RecordInfo)
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


cpdef list read_records(records):
    """Read every record of a buffer of complete CommitLog records (see the twin)."""
    cdef list infos = []
    cdef Py_ssize_t position = 0, length = len(records)
    cdef RecordInfo info
    while position < length:
        info = read_record(records, position, length, False)
        if info.size <= 0:
            _log.warning("refusing %d bytes of records: the one at byte %d does not read", length, position)
            return []
        infos.append(info)
        position += info.size
    return infos


cpdef tuple assign_queue_offsets(dict table, list infos):
    """Each record's queue offset and the table's next offsets once they are placed (see the twin)."""
    cdef RecordInfo info
    cdef list queue_offsets = []
    cdef dict next_offsets = {}
    cdef object topic = None
    cdef int32_t queue_id = -1
    cdef int64_t next_offset = 0
    # A run of records of one queue (a batch) looks its queue up once.
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
            next_offset = table.get(key, 0) if known is None else known
        queue_offsets.append(next_offset)
        next_offset += 1
    if topic is not None:
        next_offsets[(topic, queue_id)] = next_offset
    return queue_offsets, next_offsets


cdef PutRecordsResult _refused(status):
    cdef PutRecordsResult result = PutRecordsResult.__new__(PutRecordsResult)
    result.status = status
    result.physical_offsets = []
    result.queue_offsets = []
    return result


cdef class _Units
cdef class _IndexFile


cdef class StoreWriter:
    """The write path of one loaded store (see ``_write_path_py.StoreWriter``)."""

    cdef readonly object lock
    cdef object _store
    cdef object _config
    cdef object _commit_log
    cdef object _log_files
    cdef object _put_lock
    cdef Py_ssize_t _file_size
    cdef _IndexFile _index  # the last index file, as the puts and the dispatch find it
    cdef _Units _units  # the queue a dispatch writes units into, taken again by each dispatch
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
        self._put_lock = store.commit_log.put_lock
        self._file_size = store.commit_log.file_size
        self._consume_queues = store.consume_queue_table
        self._index_service = store.index_service
        self._checkpoint = store.checkpoint
        self._listeners = store.arrival_listeners
        self._index = _IndexFile(store.index_service)
        self._units = _Units()

    # --- put ---------------------------------------------------------------------------------------

    def put(self, records):
        """Place the complete CommitLog records of ``records`` and dispatch them (see the twin)."""
        cdef Py_ssize_t length = len(records)
        cdef list infos = read_records(records)
        cdef PutRecordsResult placed
        if not infos or length + END_MARKER > self._file_size:
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
        files = self._log_files.files
        if not files:
            return False
        mapped = files[len(files) - 1]
        if <Py_ssize_t>mapped.wrote_position >= self._file_size:
            return False
        for info in infos:
            if not _enqueued(info.sys_flag) or (info.queue_id == queue_id and info.topic == topic):
                continue
            topic = info.topic
            queue_id = info.queue_id
            consume_queue = self._queue_if_made(info)
            if consume_queue is None:
                return False
            files = consume_queue.queue.files
            if not files:
                return False
            mapped = files[len(files) - 1]
            if <Py_ssize_t>mapped.wrote_position >= <Py_ssize_t>mapped.file_size:
                return False
        if self._config.message_index_enable and not self._index.ready():
            return False
        return True

    cdef object _queue_if_made(self, RecordInfo info):
        """The ConsumeQueue of the record's topic-queue, None when there is none yet."""
        queues = self._consume_queues.get(info.topic)
        return (<dict>queues).get(info.queue_id) if queues is not None else None

    cdef PutRecordsResult _place(self, records, Py_ssize_t length, list infos):
        """Copy the records into the CommitLog with their offsets and one store time (see the twin)."""
        cdef RecordInfo info
        cdef Py_ssize_t count = len(infos), number, position
        cdef list queue_offsets
        cdef list physical_offsets = []
        cdef dict next_offsets
        cdef int64_t store_timestamp = 0, physical = 0  # set under the lock
        cdef PutRecordsResult result
        commit_log = self._commit_log
        cdef dict table = commit_log.topic_queue_table
        with self._put_lock:
            store_timestamp = commit_log.clock()
            commit_log.begin_time_in_lock = store_timestamp
            try:
                queue_offsets, next_offsets = assign_queue_offsets(table, infos)
                files = self._log_files.files
                mapped = files[len(files) - 1] if files else None
                if mapped is None or <Py_ssize_t>mapped.wrote_position >= self._file_size:
                    mapped = commit_log.writable_file()
                position = mapped.wrote_position
                physical = <int64_t>mapped.file_from_offset + position
                if not copy_records(mapped.mm, position, self._file_size, records, queue_offsets, physical,
                                    store_timestamp):
                    mapped.wrote_position = self._file_size
                    mapped = commit_log.writable_file()
                    position = mapped.wrote_position
                    physical = <int64_t>mapped.file_from_offset + position
                    if not copy_records(mapped.mm, position, self._file_size, records, queue_offsets, physical,
                                        store_timestamp):
                        raise AssertionError("records that fit an empty CommitLog file did not fit the next one")
                mapped.wrote_position = position + length
                mapped.store_timestamp = store_timestamp
                table.update(next_offsets)
            finally:
                commit_log.begin_time_in_lock = 0
        for number in range(count):
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
        time; the arrival notices when the store has listeners (see the twin).

        A run of records of one queue (a batch) writes its units into the queue's last file from C variables,
        and the file and the queue learn where they end once the run is over, as ``put_unit`` would leave
        them; anything else (a file to make, a gap, a unit already there) goes through ``put_unit``."""
        cdef list arrivals = []
        cdef bint notify = len(self._listeners) > 0
        cdef bint indexing = self._config.message_index_enable
        cdef RecordInfo info
        cdef int64_t tags_code, unit_timestamp = 0
        cdef bint unit_put = False
        cdef _Units units = self._units
        cdef _IndexFile index = self._index
        units.queue = None  # the queue's state is read again: a put may have made its next file since
        try:
            for info in infos:
                tags_code = info.tags_code
                if info.delay_level > 0:
                    tags_code = self._store.compute_deliver_timestamp(info.delay_level, info.store_timestamp)
                if _enqueued(info.sys_flag):
                    if units.queue is None or info.queue_id != units.queue_id or info.topic != units.topic:
                        units.take(self._queue_of(info), info)
                    if units.put(info.physical_offset, info.size, tags_code, info.queue_offset):
                        unit_put = True
                        unit_timestamp = info.store_timestamp
                    else:
                        _log.error("[BUG] the ConsumeQueue %s-%d could not take the unit of %d", info.topic,
                                   info.queue_id, info.physical_offset)
                if indexing:
                    try:
                        index.put(info)
                    except StoreDiskFullError as error:
                        _log.error("record at %d is not indexed: %s", info.physical_offset, error)
                if notify:
                    arrivals.append((info.topic, info.queue_id, info.queue_offset + 1, tags_code,
                                     info.store_timestamp, info.properties))
        finally:
            units.release()
        if unit_put:
            self._checkpoint.logics_msg_timestamp = unit_timestamp
        return arrivals

    cdef object _queue_of(self, RecordInfo info):
        consume_queue = self._queue_if_made(info)
        if consume_queue is None:
            consume_queue = self._store.find_consume_queue(info.topic, info.queue_id)
        return consume_queue


cdef class _Units:
    """The ConsumeQueue a run of records writes units into, with its last file held in C variables."""

    cdef object queue
    cdef object topic
    cdef int32_t queue_id
    cdef object mapped  # the queue's last file, None when it has none
    cdef object mm
    cdef Py_ssize_t position, file_size
    cdef int64_t file_from, max_physic_offset
    cdef bint written  # units were written since the file and the queue were last told where they end

    cdef int take(self, consume_queue, RecordInfo info) except -1:
        """Hold the queue of ``info``'s topic-queue."""
        self.release()
        self.queue = consume_queue
        self.topic = info.topic
        self.queue_id = info.queue_id
        self._load()
        return 0

    cdef int _load(self) except -1:
        consume_queue = self.queue
        self.max_physic_offset = consume_queue.max_physic_offset
        self.file_size = consume_queue.file_size
        files = consume_queue.queue.files
        if files:
            self.mapped = files[len(files) - 1]
            self.mm = self.mapped.mm
            self.position = self.mapped.wrote_position
            self.file_from = self.mapped.file_from_offset
        else:
            self.mapped = None
        return 0

    cdef bint put(self, int64_t physical_offset, int32_t size, int64_t tags_code, int64_t queue_offset) except -1:
        """``put_unit``'s answer for this unit: its common case here, the others through it."""
        cdef bint put
        if physical_offset + size <= self.max_physic_offset:
            return True
        if (self.mapped is not None and self.position > 0 and self.position + UNIT <= self.file_size
                and self.file_from + self.position == queue_offset * UNIT):
            put_cq_unit(self.mm, self.position, physical_offset, size, tags_code)
            self.position += UNIT
            self.max_physic_offset = physical_offset + size
            self.written = True
            return True
        self.release()
        put = _put_unit(self.queue, physical_offset, size, tags_code, queue_offset)
        self._load()
        return put

    cdef int release(self) except -1:
        """Tell the file and the queue where the units written from here end."""
        if self.written:
            self.written = False
            self.mapped.wrote_position = self.position
            self.queue.max_physic_offset = self.max_physic_offset
        return 0


cdef class _IndexFile:
    """The index file records go into, with what ``put_index_entry`` needs of it held in C variables (kept from
    put to put: a new last file, or one that a record rolled to, is taken when it is met)."""

    cdef object service
    cdef object index_file
    cdef object mm
    cdef Py_ssize_t hash_slot_num, index_num

    def __cinit__(self, service):
        self.service = service

    cdef int _take(self, index_file) except -1:
        self.index_file = index_file
        self.mm = index_file.mapped.mm
        self.hash_slot_num = index_file.hash_slot_num
        self.index_num = index_file.index_num
        return 0

    cdef bint ready(self) except -1:
        """Whether the service's last index file exists and is not full (so that a put makes none)."""
        cdef int64_t end_phy_offset = 0
        cdef int32_t index_count = 0
        files = self.service.files
        if not files:
            return False
        last = files[len(files) - 1]
        if last is not self.index_file:
            self._take(last)
        index_ends(self.mm, &end_phy_offset, &index_count)
        return index_count < self.index_num

    cdef int put(self, RecordInfo info) except -1:
        """The record's index entries, as the twin's ``_index`` puts them: the keys ``index.index_keys`` names
        (``topic#UNIQ_KEY``, then ``topic#key`` for each KEYS token), hashed without making their strings."""
        cdef int64_t end_phy_offset = 0
        cdef int32_t index_count = 0
        cdef uint32_t prefix, h
        cdef Py_UCS4 ch
        cdef bint in_key = False
        files = self.service.files
        last = files[len(files) - 1] if files else None
        if last is not None:
            if last is not self.index_file:
                self._take(last)
            index_ends(self.mm, &end_phy_offset, &index_count)
        if last is None or index_count >= self.index_num:
            self._take(self.service.writable_file())
            index_ends(self.mm, &end_phy_offset, &index_count)
        if info.physical_offset < end_phy_offset or info.sys_flag & TYPE_MASK == ROLLBACK_TYPE:
            return 0
        prefix = java_hash_char(java_hash_on(0, info.topic), u"#")
        if info.uniq_key:
            self._put_key(index_slot_of(<int32_t>java_hash_on(prefix, info.uniq_key)), info)
        if info.keys:
            h = prefix
            for ch in <str>info.keys:
                if ch == u" ":
                    if in_key:
                        self._put_key(index_slot_of(<int32_t>h), info)
                    h = prefix
                    in_key = False
                else:
                    h = java_hash_char(h, ch)
                    in_key = True
            if in_key:
                self._put_key(index_slot_of(<int32_t>h), info)
        return 0

    cdef int _put_key(self, int32_t key_hash, RecordInfo info) except -1:
        while not put_index_entry(self.mm, self.hash_slot_num, self.index_num, key_hash, info.physical_offset,
                                  info.store_timestamp):
            self._take(self.service.writable_file())
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
