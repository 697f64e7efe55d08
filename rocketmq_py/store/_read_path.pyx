# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The store's hot paths, compiled: the twin of ``_hot_paths_py``, which says what each one does.

The same checks in the same order and the same writes and reads, through
the same layout functions (``rocketmq_py._store``), so that both give the
store files and the pull results of the general code; the C types take the
interpreter out of the control flow around them. Compiled without
wraparound, so a list's last item is named by its index.
"""
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytearray cimport PyByteArray_AS_STRING
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.ref cimport PyObject, Py_XDECREF
from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.string cimport memcpy

from rocketmq_py._bytes cimport load_i32, load_i64, store_i32
from rocketmq_py.store._layout cimport (
    RecordInfo,
    body_crc,
    index_slot_hash,
    put_cq_unit,
    put_index_entry,
    read_record,
    record_length,
)

from rocketmq_py.store import layout
from rocketmq_py.store.results import GetMessageStatus

IMPLEMENTATION = "cython"

cdef int CQ_UNIT = 20
# Where a record holds its queue id (after its size, magic code and body CRC).
cdef Py_ssize_t QUEUE_ID_AT = 12
cdef Py_ssize_t IPV4_HOST = 8
cdef Py_ssize_t END_FILE_MIN_BLANK_LENGTH = layout.END_FILE_MIN_BLANK_LENGTH
cdef object _append_message = layout.append_message
cdef object _index_header = layout.index_header
cdef object _append_records = layout.append_records


cpdef list index_keys(str topic, keys, uniq_key):
    """The index keys of a message, in the order they are put (``topic#UNIQ_KEY`` first): the one list the
    index service and the puts in place both use."""
    cdef list found = []
    if uniq_key:
        found.append(f"{topic}#{uniq_key}")
    if keys:
        for key in (<str>keys).split(" "):
            if key:
                found.append(f"{topic}#{key}")
    return found


cdef tuple _room(store, consume_queue, str topic, int32_t queue_id, Py_ssize_t length, Py_ssize_t units,
                 Py_ssize_t first_size, Py_ssize_t entry_count):
    """Where a put goes when every file has room in its last file, else None (see the twin)."""
    cdef Py_ssize_t position, cq_position
    cdef int64_t queue_offset, physical, end_phy_offset = 0, index_count
    commit_log = store.commit_log
    log_files = commit_log.queue.files
    cq_files = consume_queue.queue.files
    if not log_files or not cq_files:
        return None
    log_file = log_files[len(log_files) - 1]
    cq_file = cq_files[len(cq_files) - 1]
    position = log_file.wrote_position
    if position + length + END_FILE_MIN_BLANK_LENGTH > <Py_ssize_t>commit_log.file_size:
        return None
    queue_offset = commit_log.topic_queue_table.get((topic, queue_id), 0)
    cq_position = cq_file.wrote_position
    physical = <int64_t>log_file.file_from_offset + position
    if (cq_position == 0 or cq_position + units * CQ_UNIT > <Py_ssize_t>consume_queue.file_size
            or <int64_t>cq_file.file_from_offset + cq_position != queue_offset * CQ_UNIT
            or physical + first_size <= <int64_t>consume_queue.max_physic_offset):
        return None
    index_file = None
    if entry_count:
        index_files = store.index_service.files
        if not index_files:
            return None
        index_file = index_files[len(index_files) - 1]
        header = _index_header(index_file.mapped.mm)
        end_phy_offset = header[3]
        index_count = header[5]
        if index_count + entry_count > <int64_t>index_file.index_num:
            return None
    return log_file, position, physical, queue_offset, cq_file, cq_position, index_file, end_phy_offset


def append_in_place(store, str topic, bytes topic_bytes, int32_t queue_id, body, bytes properties,
                    str properties_text, int32_t flag, int32_t sys_flag, int64_t born_timestamp, bytes born_host,
                    bytes store_host, int32_t reconsume_times, int64_t tags_code, keys, uniq_key):
    """Append, dispatch and announce a plain message whose files all have room: ``(physical offset, size,
    queue offset, store timestamp)``, or None, having changed nothing, for the general way."""
    # written and store_timestamp are set under the put lock; gcc cannot see that through the lock's exit path.
    cdef Py_ssize_t record_size, position, cq_position, file_size, written = 0
    cdef int64_t queue_offset, physical, end_phy_offset = 0, store_timestamp = 0
    cdef list entries
    if len(born_host) != IPV4_HOST or len(store_host) != IPV4_HOST:
        return None
    consume_queue = store.get_consume_queue(topic, queue_id)
    if consume_queue is None:
        return None
    commit_log = store.commit_log
    config = store.config
    cdef bint indexing = config.message_index_enable and store.index_service is not None
    entries = index_keys(topic, keys, uniq_key) if indexing else []
    record_size = record_length(sys_flag & ~0x30, len(body), len(topic_bytes), len(properties))
    cdef int64_t crc = body_crc(body)
    with store._write_lock:
        room = _room(store, consume_queue, topic, queue_id, record_size, 1, record_size, len(entries))
        if room is None:
            return None
        log_file, position, physical, queue_offset, cq_file, cq_position, index_file, end_phy_offset = room
        file_size = commit_log.file_size
        key = (topic, queue_id)
        table = commit_log.topic_queue_table
        put_lock = commit_log.put_lock
        with put_lock:
            store_timestamp = commit_log.clock()
            commit_log.begin_time_in_lock = store_timestamp
            try:
                written = _append_message(
                    log_file.mm, position, file_size, topic_bytes, body, properties, queue_id, flag, queue_offset,
                    physical, sys_flag, born_timestamp, born_host, store_timestamp, store_host, reconsume_times, 0,
                    crc,
                )
                log_file.wrote_position = position + written
                log_file.store_timestamp = store_timestamp
                table[key] = queue_offset + 1
            finally:
                commit_log.begin_time_in_lock = 0
        put_cq_unit(cq_file.mm, cq_position, physical, written, tags_code)
        cq_file.wrote_position = cq_position + CQ_UNIT
        consume_queue.max_physic_offset = physical + written
        store.checkpoint.logics_msg_timestamp = store_timestamp
        if index_file is not None and physical >= end_phy_offset:
            mm = index_file.mapped.mm
            slots = index_file.hash_slot_num
            number = index_file.index_num
            for entry in entries:
                put_index_entry(mm, slots, number, index_slot_hash(entry), physical, store_timestamp)
    if store.arrival_listeners:
        store.tell_arrivals([(topic, queue_id, queue_offset + 1, tags_code, store_timestamp, properties_text)])
    store.wake_flush()
    return physical, written, queue_offset, store_timestamp


def set_queue_id(bytearray records, int32_t queue_id):
    """Write ``queue_id`` into every record of ``records`` (encoded before a random queue was drawn)."""
    cdef Py_ssize_t position = 0, length = len(records), size
    cdef uint8_t* data = <uint8_t*>PyByteArray_AS_STRING(records)
    while position + QUEUE_ID_AT + 4 <= length:
        store_i32(data + position + QUEUE_ID_AT, queue_id)
        size = load_i32(data + position)
        if size <= 0:
            raise ValueError(f"record at byte {position} declares a bad size {size}")
        position += size


def append_batch_in_place(store, str topic, int32_t queue_id, bytearray records, Py_ssize_t count):
    """Append, dispatch and announce the ``count`` encoded records of a batch whose files all have room:
    ``(physical offset, bytes, first queue offset, store timestamp, each record's offset)``, or None."""
    cdef Py_ssize_t position, cq_position, file_size, length = len(records), number, entry_count = 0
    cdef int64_t queue_offset, physical, end_phy_offset = 0, store_timestamp = 0, offset  # see append_in_place
    cdef list infos = []
    cdef list entries = []
    cdef list offsets
    consume_queue = store.get_consume_queue(topic, queue_id)
    if consume_queue is None:
        return None
    commit_log = store.commit_log
    config = store.config
    cdef bint indexing = config.message_index_enable and store.index_service is not None
    position = 0
    while position < length:
        info = read_record(records, position, length, False)
        if info.size <= 0:
            return None
        infos.append(info)
        keys = index_keys(topic, info.keys, info.uniq_key) if indexing else []
        entry_count += len(keys)
        entries.append(keys)
        position += <Py_ssize_t>info.size
    if len(infos) != count:
        return None
    with store._write_lock:
        room = _room(store, consume_queue, topic, queue_id, length, count, infos[0].size, entry_count)
        if room is None:
            return None
        log_file, position, physical, queue_offset, cq_file, cq_position, index_file, end_phy_offset = room
        file_size = commit_log.file_size
        key = (topic, queue_id)
        table = commit_log.topic_queue_table
        with commit_log.put_lock:
            store_timestamp = commit_log.clock()
            commit_log.begin_time_in_lock = store_timestamp
            try:
                _append_records(log_file.mm, position, file_size, records, queue_offset, physical, store_timestamp)
                log_file.wrote_position = position + length
                log_file.store_timestamp = store_timestamp
                table[key] = queue_offset + count
            finally:
                commit_log.begin_time_in_lock = 0
        offsets = []
        offset = physical
        cq_mm = cq_file.mm
        if index_file is not None:
            index_mm = index_file.mapped.mm
            slots = index_file.hash_slot_num
            slot_count = index_file.index_num
        for number in range(count):
            info = infos[number]
            offsets.append(offset)
            put_cq_unit(cq_mm, cq_position + number * CQ_UNIT, offset, info.size, info.tags_code)
            keys = entries[number]
            if index_file is not None and offset >= end_phy_offset and keys:
                for entry in keys:
                    put_index_entry(index_mm, slots, slot_count, index_slot_hash(entry), offset, store_timestamp)
                end_phy_offset = offset
            offset += <int64_t>info.size
        cq_file.wrote_position = cq_position + count * CQ_UNIT
        consume_queue.max_physic_offset = offset
        store.checkpoint.logics_msg_timestamp = store_timestamp
    if store.arrival_listeners:
        store.tell_arrivals([(topic, queue_id, queue_offset + number + 1, infos[number].tags_code, store_timestamp,
                              infos[number].properties) for number in range(count)])
    store.wake_flush()
    return physical, length, queue_offset, store_timestamp, offsets


cdef object NO_MATCHED_MESSAGE = GetMessageStatus.NO_MATCHED_MESSAGE
cdef object MESSAGE_WAS_REMOVING = GetMessageStatus.MESSAGE_WAS_REMOVING
cdef object FOUND = GetMessageStatus.FOUND


cdef extern from "Python.h":
    # The body a pull gathers is grown in place, so these take and give the bytes object by pointer.
    PyObject* _new_bytes "PyBytes_FromStringAndSize"(const char* data, Py_ssize_t size) except NULL
    int _PyBytes_Resize(PyObject** data, Py_ssize_t size) except -1
    char* _bytes_data "PyBytes_AS_STRING"(PyObject* data) noexcept


cdef struct Gathered:
    PyObject* body  # a bytes object of ``capacity`` bytes, owned here until it is handed out
    Py_ssize_t length
    Py_ssize_t capacity
    Py_ssize_t expected_records  # the first record's size times this is the first capacity (up to FIRST_CAPACITY)


# Java's maxTransferBytesOnMessageInMemory: a pull's body seldom outgrows it, and a big first record does not
# reserve room for many more of its size.
cdef Py_ssize_t FIRST_CAPACITY = 256 * 1024


cdef int _gather(Gathered* into, object mapped, Py_ssize_t position, Py_ssize_t size) except -1:
    """Copy the ``size`` bytes at ``position`` of ``mapped`` onto the end of ``into``: 1, or 0 where
    ``mapped.read(position, size)`` would give None (not written yet, or the mapping closed)."""
    cdef Py_buffer view
    cdef Py_ssize_t capacity
    if position < 0 or size < 0 or position + size > <Py_ssize_t>mapped.wrote_position:
        return 0
    try:
        PyObject_GetBuffer(mapped.mm, &view, PyBUF_SIMPLE)
    except ValueError:  # the mapping was closed by the clean service
        return 0
    try:
        if position + size > view.len:
            return 0
        if into.length + size > into.capacity:
            capacity = max(2 * into.capacity, into.length + size,
                           min(size * into.expected_records, FIRST_CAPACITY))
            if into.body == NULL:
                into.body = _new_bytes(NULL, capacity)
            else:
                _PyBytes_Resize(&into.body, capacity)
            into.capacity = capacity
        memcpy(_bytes_data(into.body) + into.length, <const char*>view.buf + position, size)
        into.length += size
    finally:
        PyBuffer_Release(&view)
    return 1


cdef object _gathered_body(Gathered* gathered):
    """The gathered bytes as one bytes object (cut to their length), which the caller now owns."""
    if gathered.body == NULL:
        return b""
    if gathered.length < gathered.capacity:
        _PyBytes_Resize(&gathered.body, gathered.length)
    body = <object>gathered.body  # a new reference; the one taken over from ``gathered`` is dropped below
    Py_XDECREF(gathered.body)
    gathered.body = NULL
    return body


def collect(reads, result, units, int64_t offset, int64_t max_msg_nums, message_filter, int64_t memory):
    """Fill ``result`` with the records of ``units`` (read from queue offset ``offset``) that pass
    ``message_filter``, until ``max_msg_nums`` or the transfer limits; the records are copied from the
    CommitLog's mappings straight into ``result.body``."""
    cdef int64_t physical, last_physical = 0, total_size = 0, next_file_start = -1, read = 0, size, tags_code
    cdef int64_t file_from = 0, file_size, max_physical, count = 0
    cdef const uint8_t* unit
    cdef Py_ssize_t unit_at = 0, units_end = 0
    cdef bytes chunk = None
    cdef int64_t bytes_in_disk, count_in_disk, bytes_in_memory, count_in_memory
    cdef list queue_offsets = result.queue_offsets
    cdef Gathered gathered
    cdef bint found
    # A filter that passes everything (a subscription to "*") is not asked about each message.
    cdef bint check_tags = message_filter is not None and message_filter.checks_tags
    cdef bint check_records = message_filter is not None and message_filter.checks_records
    gathered.body = NULL
    gathered.length = 0
    gathered.capacity = 0
    gathered.expected_records = min(max_msg_nums, 32)
    result.status = NO_MATCHED_MESSAGE
    commit_log = reads.commit_log
    config = reads.config
    bytes_in_disk = config.max_transfer_bytes_on_message_in_disk
    count_in_disk = config.max_transfer_count_on_message_in_disk
    bytes_in_memory = config.max_transfer_bytes_on_message_in_memory
    count_in_memory = config.max_transfer_count_on_message_in_memory
    max_physical = commit_log.max_offset
    file_size = commit_log.file_size
    files = commit_log.queue
    mapped = None
    try:
        while True:
            # The units are read out of the ConsumeQueue's raw chunks, as ``units`` would unpack them.
            if unit_at == units_end:
                chunk = units.next_chunk()
                if chunk is None:
                    break
                unit_at = 0
                units_end = len(chunk) // CQ_UNIT * CQ_UNIT
            unit = <const uint8_t*>PyBytes_AS_STRING(chunk) + unit_at
            unit_at += CQ_UNIT
            physical = load_i64(unit)
            size = load_i32(unit + 8)
            tags_code = load_i64(unit + 12)
            last_physical = physical
            if next_file_start >= 0 and physical < next_file_start:
                read += 1
                continue
            if count:
                if max_msg_nums <= count:
                    break
                if max_physical - physical > memory:
                    if total_size + size > bytes_in_disk or count > count_in_disk - 1:
                        break
                elif total_size + size > bytes_in_memory or count > count_in_memory - 1:
                    break
            read += 1
            if check_tags and not message_filter.is_matched_by_consume_queue(tags_code):
                continue
            # What commit_log.get_message(physical, size) reads, with the file looked up once per file.
            found = False
            if physical >= 0:
                if mapped is None or physical < file_from or physical >= file_from + file_size:
                    mapped = files.find_mapped_file_by_offset(physical)
                    if mapped is not None:
                        file_from = mapped.file_from_offset
                if mapped is not None:
                    found = _gather(&gathered, mapped, physical % file_size, size) == 1
            if not found:
                if not count:
                    result.status = MESSAGE_WAS_REMOVING
                next_file_start = physical + file_size - physical % file_size if physical >= 0 else \
                    commit_log.roll_next_file(physical)
                continue
            if check_records and not message_filter.is_matched_by_commit_log(
                    PyBytes_FromStringAndSize(_bytes_data(gathered.body) + gathered.length - size, size)):
                gathered.length -= size
                continue
            queue_offsets.append(offset + read - 1)
            count += 1
            total_size += size
            result.status = FOUND
            next_file_start = -1
        result.body = _gathered_body(&gathered)
    finally:
        Py_XDECREF(gathered.body)
    result.next_begin_offset = offset + read
    result.suggest_pulling_from_slave = max_physical - last_physical > memory
