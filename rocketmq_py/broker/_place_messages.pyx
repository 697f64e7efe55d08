# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The broker process's per-send work on a front's PLACE message and its PLACED answer, compiled: the twin of
``_place_messages_py``, which says what it does.

The same loops over the same bytes, with the same errors; what the C types buy is the per-send work of a
PLACE message of hundreds of sends (a send head read, its topic looked up, the stats added, two offsets
written) without the interpreter. A send names the topic of the send before it, mostly: its bytes are
compared with that one's before any lookup.
"""
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from libc.stdint cimport int64_t, uint8_t, uint32_t
from libc.string cimport memcmp, memcpy

from rocketmq_py._bytes cimport load_u16, load_u32, store_i64

from rocketmq_py.broker._place_messages_py import SEND_HEAD, TOPIC_NAMES_KEPT

IMPLEMENTATION = "cython"

cdef Py_ssize_t C_SEND_HEAD_SIZE = SEND_HEAD.size  # the layout of SEND_HEAD: uint32, uint32, uint16
cdef Py_ssize_t C_TOPIC_NAMES_KEPT = TOPIC_NAMES_KEPT


def read_sends(payload, Py_ssize_t position, Py_ssize_t sends, dict topic_names):
    """Where the records start, each send's record count, and by topic ``[records, bytes, sends]`` (see the
    twin)."""
    cdef Py_buffer view
    cdef const uint8_t* data
    cdef Py_ssize_t length, index, end, topic_length
    cdef const uint8_t* last_name = NULL
    cdef Py_ssize_t last_length = -1
    cdef uint32_t count, size
    cdef int64_t records = 0, size_total = 0, send_total = 0
    cdef list counts = []
    cdef dict by_topic = {}
    cdef object topic = None, name
    PyObject_GetBuffer(payload, &view, PyBUF_SIMPLE)
    try:
        data = <const uint8_t*>view.buf
        length = view.len
        for index in range(sends):
            if position < 0 or position + C_SEND_HEAD_SIZE > length:
                raise ValueError(f"a PLACE message cut short in its send heads ({length} bytes)")
            count = load_u32(data + position)
            size = load_u32(data + position + 4)
            topic_length = load_u16(data + position + 8)
            position += C_SEND_HEAD_SIZE
            end = position + topic_length
            if end > length:
                raise ValueError(f"a PLACE message cut short in a topic name ({length} bytes)")
            if topic is None or topic_length != last_length or memcmp(data + position, last_name, topic_length):
                if topic is not None:
                    _add(by_topic, topic, records, size_total, send_total)
                    records = size_total = send_total = 0
                name = PyBytes_FromStringAndSize(<const char*>(data + position), topic_length)
                topic = topic_names.get(name)
                if topic is None:
                    if len(topic_names) >= C_TOPIC_NAMES_KEPT:
                        topic_names.clear()
                    topic = (<bytes>name).decode("utf-8")
                    topic_names[name] = topic
                last_name = data + position
                last_length = topic_length
            counts.append(count)
            records += count
            size_total += size
            send_total += 1
            position = end
        if topic is not None:
            _add(by_topic, topic, records, size_total, send_total)
    finally:
        PyBuffer_Release(&view)
    return position, counts, by_topic


cdef int _add(dict by_topic, object topic, int64_t records, int64_t size, int64_t sends) except -1:
    """Add a run of one topic's sends to its totals."""
    cdef list totals = by_topic.get(topic)
    if totals is None:
        by_topic[topic] = [records, size, sends]
    else:
        totals[0] += records
        totals[1] += size
        totals[2] += sends
    return 0


def placed_payload(bytes head, list counts, list physical_offsets, list queue_offsets):
    """``head``, each record's physical offset, then each send's first queue offset, big-endian (see the
    twin)."""
    cdef Py_ssize_t records = len(physical_offsets), sends = len(counts), index, first = 0, total = 0
    cdef Py_ssize_t count
    for index in range(sends):
        count = counts[index]
        if count < 1:
            total = -1
            break
        total += count
    if total != records or len(queue_offsets) != records:
        raise ValueError(f"{sends} sends of {sum(counts)} records for {records} physical offsets and "
                         f"{len(queue_offsets)} queue offsets")
    cdef Py_ssize_t head_length = len(head)
    cdef bytes out = PyBytes_FromStringAndSize(NULL, head_length + 8 * (records + sends))
    cdef uint8_t* p = <uint8_t*>PyBytes_AS_STRING(out)
    memcpy(p, PyBytes_AS_STRING(head), head_length)
    p += head_length
    for index in range(records):
        store_i64(p, <int64_t>physical_offsets[index])
        p += 8
    for index in range(sends):
        store_i64(p, <int64_t>queue_offsets[first])
        p += 8
        first += <Py_ssize_t>counts[index]
    return out
