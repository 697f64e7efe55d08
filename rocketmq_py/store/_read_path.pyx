# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The store's read path, compiled: the twin of ``_read_path_py``, which says what ``collect`` does.

The same checks in the same order and the same reads, so that both give the
same pull results; the C types take the interpreter out of the loop over
the units, and the records are copied straight into the pull's body.
"""
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.ref cimport PyObject, Py_XDECREF
from libc.stdint cimport int64_t, uint8_t
from libc.string cimport memcpy

from rocketmq_py._bytes cimport load_i32, load_i64

from rocketmq_py.store.results import GetMessageStatus

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
