# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The store's read path, compiled: the twin of ``_read_path_py``, which says what ``collect`` does.

The same checks in the same order and the same reads, so that both give the
same pull results; the C types take the interpreter out of the loop over
the units, and the records are copied straight into the pull's body.
"""
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.mem cimport PyMem_Free, PyMem_Realloc
from cpython.ref cimport PyObject, Py_XDECREF
from libc.stdint cimport int64_t, uint8_t, uint32_t
from libc.string cimport memcpy

from rocketmq_py._bytes cimport load_i32, load_i64, store_u32

from rocketmq_py.store.results import GetMessageStatus, RecordRegion

IMPLEMENTATION = "cython"

cdef int CQ_UNIT = 20

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


cdef struct Placed:
    uint8_t* ranges  # file_region.RANGE entries (file index, position, size; big-endian u32 each)
    Py_ssize_t count  # entries written
    Py_ssize_t capacity  # entries the buffer holds
    Py_ssize_t size  # the bytes of all ranges
    uint32_t last_index
    uint32_t last_end  # where the last range ends in its file


cdef int RANGE = 12


cdef int _place(Placed* into, list files, list views, object mapped, Py_ssize_t position,
                Py_ssize_t size) except -1:
    """Add the record of ``size`` bytes at ``position`` of ``mapped`` to ``into`` (merged into the last range
    when it follows it in the same file): 1, or 0 where ``mapped.read(position, size)`` would give None."""
    cdef Py_ssize_t index, capacity
    cdef uint8_t* entry
    cdef uint8_t* grown
    if position < 0 or size < 0 or position + size > <Py_ssize_t>mapped.wrote_position:
        return 0
    index = len(files) - 1
    if index < 0 or files[index] is not mapped:
        try:
            view = memoryview(mapped.mm)
        except ValueError:  # the mapping was closed by the clean service
            return 0
        files.append(mapped)
        views.append(view)
        index += 1
    if position + size > len(<object>views[index]):
        return 0
    if into.count and into.last_index == <uint32_t>index and into.last_end == <uint32_t>position:
        entry = into.ranges + (into.count - 1) * RANGE
        store_u32(entry + 8, <uint32_t>(load_i32(entry + 8) + size))
    else:
        if into.count == into.capacity:
            capacity = max(2 * into.capacity, 16)
            grown = <uint8_t*>PyMem_Realloc(into.ranges, capacity * RANGE)
            if grown == NULL:
                raise MemoryError()
            into.ranges = grown
            into.capacity = capacity
        entry = into.ranges + into.count * RANGE
        store_u32(entry, <uint32_t>index)
        store_u32(entry + 4, <uint32_t>position)
        store_u32(entry + 8, <uint32_t>size)
        into.count += 1
        into.last_index = <uint32_t>index
    into.last_end = <uint32_t>(position + size)
    into.size += size
    return 1


cdef void _unplace(Placed* placed, Py_ssize_t size) noexcept:
    """Take the last ``size`` bytes placed back out (a record the filter refused)."""
    cdef uint8_t* entry = placed.ranges + (placed.count - 1) * RANGE
    cdef uint32_t left = <uint32_t>load_i32(entry + 8) - <uint32_t>size
    placed.size -= size
    placed.last_end -= <uint32_t>size
    if left:
        store_u32(entry + 8, left)
    else:
        placed.count -= 1
        if placed.count:
            entry -= RANGE
            placed.last_index = <uint32_t>load_i32(entry)
            placed.last_end = <uint32_t>(load_i32(entry + 4) + load_i32(entry + 8))


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


def collect(reads, result, units, int64_t offset, int64_t max_msg_nums, message_filter, int64_t memory,
            bint in_files=False):
    """Fill ``result`` with the records of ``units`` (read from queue offset ``offset``) that pass
    ``message_filter``, until ``max_msg_nums`` or the transfer limits; the records are copied from the
    CommitLog's mappings straight into ``result.body``, or with ``in_files`` their places go into
    ``result.region``."""
    cdef int64_t physical, last_physical = 0, total_size = 0, next_file_start = -1, read = 0, size, tags_code
    cdef int64_t file_from = 0, file_size, max_physical, count = 0
    cdef const uint8_t* unit
    cdef Py_ssize_t unit_at = 0, units_end = 0
    cdef bytes chunk = None
    cdef int64_t bytes_in_disk, count_in_disk, bytes_in_memory, count_in_memory
    cdef list queue_offsets = result.queue_offsets
    cdef Gathered gathered
    cdef Placed placed
    cdef list files = None, views = None
    cdef bint found
    # A filter that passes everything (a subscription to "*") is not asked about each message.
    cdef bint check_tags = message_filter is not None and message_filter.checks_tags
    cdef bint check_records = message_filter is not None and message_filter.checks_records
    gathered.body = NULL
    gathered.length = 0
    gathered.capacity = 0
    gathered.expected_records = min(max_msg_nums, 32)
    placed.ranges = NULL
    placed.count = placed.capacity = placed.size = 0
    placed.last_index = placed.last_end = 0
    if in_files:
        files = []
        views = []
    result.status = NO_MATCHED_MESSAGE
    commit_log = reads.commit_log
    config = reads.config
    bytes_in_disk = config.max_transfer_bytes_on_message_in_disk
    count_in_disk = config.max_transfer_count_on_message_in_disk
    bytes_in_memory = config.max_transfer_bytes_on_message_in_memory
    count_in_memory = config.max_transfer_count_on_message_in_memory
    max_physical = commit_log.max_offset
    file_size = commit_log.file_size
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
                    mapped = commit_log.file_at(physical)
                    if mapped is not None:
                        file_from = mapped.file_from_offset
                if mapped is not None:
                    if in_files:
                        found = _place(&placed, files, views, mapped, physical % file_size, size) == 1
                    else:
                        found = _gather(&gathered, mapped, physical % file_size, size) == 1
            if not found:
                if not count:
                    result.status = MESSAGE_WAS_REMOVING
                next_file_start = physical + file_size - physical % file_size if physical >= 0 else \
                    commit_log.roll_next_file(physical)
                continue
            if check_records:
                if in_files:
                    view = views[len(views) - 1]
                    record = bytes(view[physical % file_size:physical % file_size + size])
                else:
                    record = PyBytes_FromStringAndSize(_bytes_data(gathered.body) + gathered.length - size, size)
                if not message_filter.is_matched_by_commit_log(record):
                    if in_files:
                        _unplace(&placed, size)
                    else:
                        gathered.length -= size
                    continue
            queue_offsets.append(offset + read - 1)
            count += 1
            total_size += size
            result.status = FOUND
            next_file_start = -1
        if not in_files:
            result.body = _gathered_body(&gathered)
        elif count:
            result.region = RecordRegion(files, views, PyBytes_FromStringAndSize(<const char*>placed.ranges,
                                                                                 placed.count * RANGE), placed.size)
    finally:
        Py_XDECREF(gathered.body)
        PyMem_Free(placed.ranges)
    result.next_begin_offset = offset + read
    result.suggest_pulling_from_slave = max_physical - last_physical > memory
