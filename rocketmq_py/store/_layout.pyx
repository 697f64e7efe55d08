# cython: language_level=3
"""Byte layouts of the message store, compiled: the CommitLog record, the ConsumeQueue unit, the IndexFile.

Same functions, results and errors as the pure-Python twin ``_layout_py``
(the specification; see it for the layouts and the Java sources they port).
Buffers are taken once per call with ``PyObject_GetBuffer`` and every field
access is bounds-checked through ``span_at`` from ``_layout.pxd``.
"""
import os

cimport cython

from cpython.buffer cimport PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_FromStringAndSize, PyByteArray_Resize
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.errno cimport EINVAL, errno
from libc.string cimport memchr, memcmp, memcpy, memset

from rocketmq_py.common import sysflag
from rocketmq_py.common.magic_codes import BLANK_MAGIC_CODE, MESSAGE_MAGIC_CODE
from rocketmq_py.common.message import MessageConst
from rocketmq_py.common.topic import RMQ_SYS_SCHEDULE_TOPIC

IMPLEMENTATION = "cython"

END_FILE_MIN_BLANK_LENGTH = 8
CQ_UNIT_SIZE = 20
INDEX_HEADER_SIZE = 40
INDEX_SLOT_SIZE = 4
INDEX_ENTRY_SIZE = 20
QUEUE_OFFSET_POSITION = 20
PHYSICAL_OFFSET_POSITION = 28
SYSFLAG_POSITION = 36
BORN_HOST_POSITION = 48
RECORD_BLANK = 0
RECORD_INVALID = -1
MAX_TOPIC_LENGTH = 127
MAX_PROPERTIES_LENGTH = 32767
INT32_MAX = 0x7FFFFFFF

# C copies of the shared constants, read from their homes (common/magic_codes.py, common/sysflag.py,
# MessageConst, common/topic.py).
cdef int32_t C_MESSAGE_MAGIC = MESSAGE_MAGIC_CODE
cdef int32_t C_BLANK_MAGIC = BLANK_MAGIC_CODE
cdef int32_t C_BORN_V6 = sysflag.BORNHOST_V6_FLAG
cdef int32_t C_STORE_V6 = sysflag.STOREHOSTADDRESS_V6_FLAG
cdef bytes _SCHEDULE_TOPIC = RMQ_SYS_SCHEDULE_TOPIC.encode()
cdef bytes _TAGS = MessageConst.TAGS.encode()
cdef bytes _KEYS = MessageConst.KEYS.encode()
cdef bytes _UNIQ_KEY = MessageConst.UNIQ_CLIENT_MESSAGE_ID_KEYIDX.encode()
cdef bytes _DELAY = MessageConst.DELAY_TIME_LEVEL.encode()

cdef enum:
    C_BLANK_LENGTH = 8
    C_CQ_UNIT = 20
    C_INDEX_HEADER = 40
    C_QUEUE_OFFSET_AT = 20
    C_PHYSICAL_OFFSET_AT = 28
    C_SYSFLAG_AT = 36
    C_BORN_HOST_AT = 48


# Its fields are numbers and strings, so it can be in no reference cycle: untracked by the cyclic GC, the
# thousands a large put holds at once do not set off collections that walk them all (see _write_path).
@cython.no_gc
cdef class RecordInfo:
    """What ``check_record`` learned about the record at a position (see ``_layout_py.RecordInfo``)."""

    def __cinit__(self, Py_ssize_t size=-1):
        self.size = size
        self.topic = ""
        self.keys = None
        self.uniq_key = None
        self.properties = ""

    def as_tuple(self):
        return (self.size, self.topic, self.queue_id, self.physical_offset, self.tags_code, self.store_timestamp,
                self.queue_offset, self.keys, self.uniq_key, self.sys_flag, self.prepared_transaction_offset,
                self.delay_level, self.properties)

    def __repr__(self):
        names = ("size", "topic", "queue_id", "physical_offset", "tags_code", "store_timestamp", "queue_offset",
                 "keys", "uniq_key", "sys_flag", "prepared_transaction_offset", "delay_level", "properties")
        return "RecordInfo(" + ", ".join(f"{n}={v!r}" for n, v in zip(names, self.as_tuple())) + ")"


cdef RecordInfo _invalid():
    return RecordInfo(-1)


# --- buffers --------------------------------------------------------------------------------------


cdef int _acquire(object obj, Py_buffer* view, bint writable) except -1:
    try:
        PyObject_GetBuffer(obj, view, PyBUF_SIMPLE | (PyBUF_WRITABLE if writable else 0))
    except BufferError:
        if writable:
            raise ValueError("the destination buffer is read-only") from None
        raise
    return 0


cdef struct ReadBytes:
    const uint8_t* data
    Py_ssize_t length
    Py_buffer view
    bint held


cdef int _read_bytes(object obj, ReadBytes* out) except -1:
    """The bytes of ``obj``: a ``bytes`` object is read in place, anything else through its buffer (released by
    ``_release_bytes``). A send's topic, properties and hosts are ``bytes``, and a typed memoryview each would cost
    more than the record's own writing."""
    if PyBytes_CheckExact(obj):
        out.data = <const uint8_t*>PyBytes_AS_STRING(obj)
        out.length = PyBytes_GET_SIZE(obj)
        out.held = False
        return 0
    _acquire(obj, &out.view, False)
    out.data = <const uint8_t*>out.view.buf
    out.length = out.view.len
    out.held = True
    return 0


cdef inline void _release_bytes(ReadBytes* bytes_read) noexcept:
    if bytes_read.held:
        bytes_read.held = False
        PyBuffer_Release(&bytes_read.view)


cdef inline Span _span(Py_buffer* view) noexcept:
    cdef Span span
    span.data = <uint8_t*>view.buf
    span.length = view.len
    return span


cdef int _check_span(const Span* span, Py_ssize_t position, Py_ssize_t limit) except -1:
    if position < 0 or limit < position or limit > span.length:
        raise ValueError(f"span [{position}, {limit}) does not fit a buffer of {span.length} bytes")
    return 0


# The body CRC of every record (zlib's CRC-32, as java.util.zip.CRC32). Java's is a JIT intrinsic that
# multiplies without carries (PCLMULQDQ); zlib's tables take ~4 instructions a byte, the largest single cost of
# a 1 KiB message of a batch. So on x86-64 CPUs that have it, the same folding is done here; elsewhere, and for
# spans under 64 bytes, a byte table does the work. tests/test_store_crc.py holds it to zlib.crc32.
cdef extern from *:
    """
    #include <stdint.h>
    #include <stddef.h>

    static uint32_t rmq_crc_table[256];

    static void rmq_crc_init_table(void) {
        for (uint32_t n = 0; n < 256; n++) {
            uint32_t c = n;
            for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            rmq_crc_table[n] = c;
        }
    }

    /* The reflected CRC register (not inverted) over ``len`` bytes, a byte at a time. */
    static uint32_t rmq_crc_bytes(uint32_t state, const uint8_t *p, size_t len) {
        while (len--) state = rmq_crc_table[(state ^ *p++) & 0xFF] ^ (state >> 8);
        return state;
    }

    #if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    #include <immintrin.h>
    #define RMQ_CRC_FOLDING 1

    /* Folding by carry-less multiplication (Intel's "Fast CRC Computation for Generic Polynomials Using
       PCLMULQDQ"), for the reflected polynomial 0xEDB88320: k1/k2 fold four lanes 512 bits on, k3/k4 one
       lane 128 bits on, k5 folds 64 bits to 32, then P' and the Barrett quotient mu reduce to the remainder
       (the paper's constants for this polynomial). Takes ``len`` >= 64, a multiple of 16. */
    __attribute__((target("pclmul,sse4.1")))
    static uint32_t rmq_crc_fold(uint32_t state, const uint8_t *p, size_t len) {
        const __m128i k1k2 = _mm_set_epi64x(0x1c6e41596LL, 0x154442bd4LL);
        const __m128i k3k4 = _mm_set_epi64x(0x0ccaa009eLL, 0x1751997d0LL);
        const __m128i k5 = _mm_set_epi64x(0, 0x163cd6124LL);
        const __m128i poly = _mm_set_epi64x(0x1F7011641LL, 0x1DB710641LL);
        const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
        __m128i x0 = _mm_loadu_si128((const __m128i *)p);
        __m128i x1 = _mm_loadu_si128((const __m128i *)(p + 16));
        __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 32));
        __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 48));
        __m128i t;
        x0 = _mm_xor_si128(x0, _mm_cvtsi32_si128((int)state));
        p += 64;
        len -= 64;
        #define RMQ_FOLD(x, k, next) \
            (_mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128((x), (k), 0x00), \
                                         _mm_clmulepi64_si128((x), (k), 0x11)), (next)))
        while (len >= 64) {
            x0 = RMQ_FOLD(x0, k1k2, _mm_loadu_si128((const __m128i *)p));
            x1 = RMQ_FOLD(x1, k1k2, _mm_loadu_si128((const __m128i *)(p + 16)));
            x2 = RMQ_FOLD(x2, k1k2, _mm_loadu_si128((const __m128i *)(p + 32)));
            x3 = RMQ_FOLD(x3, k1k2, _mm_loadu_si128((const __m128i *)(p + 48)));
            p += 64;
            len -= 64;
        }
        x0 = RMQ_FOLD(x0, k3k4, x1);
        x0 = RMQ_FOLD(x0, k3k4, x2);
        x0 = RMQ_FOLD(x0, k3k4, x3);
        while (len >= 16) {
            x0 = RMQ_FOLD(x0, k3k4, _mm_loadu_si128((const __m128i *)p));
            p += 16;
            len -= 16;
        }
        #undef RMQ_FOLD
        /* 128 to 64 bits, then 64 to 32 (each also appends the 32 zero bits a CRC multiplies by). */
        t = _mm_clmulepi64_si128(x0, k3k4, 0x10);
        x0 = _mm_xor_si128(_mm_srli_si128(x0, 8), t);
        t = _mm_clmulepi64_si128(_mm_and_si128(x0, mask32), k5, 0x00);
        x0 = _mm_xor_si128(_mm_srli_si128(x0, 4), t);
        /* Barrett reduction to the 32-bit remainder. */
        t = _mm_clmulepi64_si128(_mm_and_si128(x0, mask32), poly, 0x10);
        t = _mm_clmulepi64_si128(_mm_and_si128(t, mask32), poly, 0x00);
        x0 = _mm_xor_si128(x0, t);
        return (uint32_t)_mm_extract_epi32(x0, 1);
    }

    static int rmq_crc_can_fold(void) {
        __builtin_cpu_init();
        return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
    }
    #else
    static int rmq_crc_can_fold(void) { return 0; }
    static uint32_t rmq_crc_fold(uint32_t state, const uint8_t *p, size_t len) { return rmq_crc_bytes(state, p, len); }
    #endif

    static int rmq_crc_folding = 0;

    static void rmq_crc_setup(int allow_folding) {
        rmq_crc_init_table();
        rmq_crc_folding = allow_folding && rmq_crc_can_fold();
    }

    /* zlib.crc32(data, 0): CRC-32 of ``len`` bytes. */
    static uint32_t rmq_crc32(const uint8_t *p, size_t len) {
        uint32_t state = 0xFFFFFFFFu;
        if (rmq_crc_folding && len >= 64) {
            size_t folded = len & ~(size_t)15;
            state = rmq_crc_fold(state, p, folded);
            p += folded;
            len -= folded;
        }
        return rmq_crc_bytes(state, p, len) ^ 0xFFFFFFFFu;
    }
    """
    void rmq_crc_setup(int allow_folding) noexcept
    uint32_t rmq_crc32(const uint8_t* data, size_t length) noexcept nogil
    int rmq_crc_folding


# ROCKETMQ_PY_CRC_TABLE=1 keeps the byte table on a CPU that could fold (so that the tests can check both).
rmq_crc_setup(os.environ.get("ROCKETMQ_PY_CRC_TABLE") != "1")
#: "folding" (carry-less multiplication) or "table": how this process computes CRC-32.
CRC_METHOD = "folding" if rmq_crc_folding else "table"


def crc32(data):
    """``zlib.crc32(data)``, computed here (see ``CRC_METHOD``)."""
    return _crc32_of(data)


cdef int64_t _crc32_of(object data) except -1:
    cdef ReadBytes bytes_read
    _read_bytes(data, &bytes_read)
    try:
        return rmq_crc32(bytes_read.data, bytes_read.length)
    finally:
        _release_bytes(&bytes_read)


cdef inline int64_t _crc(const uint8_t* data, Py_ssize_t length) noexcept:
    return rmq_crc32(data, length) & 0x7FFFFFFF


# --- hashes ----------------------------------------------------------------------------------------


cdef inline int32_t _java_string_hash(str text) noexcept:
    """``codec.java_string_hash`` (the Python name's one home) at C level, for the tags code and the index."""
    return <int32_t>java_hash_on(0, text)


cdef uint32_t java_hash_on(uint32_t h, str text) noexcept:
    cdef Py_UCS4 ch
    for ch in text:
        h = java_hash_char(h, ch)
    return h


def index_key_hash(str key):
    """The index slot hash of Java's IndexFile: ``abs(key.hashCode())``, and 0 for ``Integer.MIN_VALUE``."""
    return index_slot_hash(key)


cdef int32_t index_slot_hash(str key) except? -1:
    return index_slot_of(_java_string_hash(key))


cpdef Py_ssize_t record_length(int32_t sys_flag, Py_ssize_t body_length, Py_ssize_t topic_length,
                               Py_ssize_t properties_length) noexcept:
    """The total size of a record (Java's ``CommitLog.calMsgLength``)."""
    cdef Py_ssize_t born = 20 if sys_flag & C_BORN_V6 else 8
    cdef Py_ssize_t store = 20 if sys_flag & C_STORE_V6 else 8
    return (4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + born + 8 + store + 4 + 8
            + 4 + (body_length if body_length > 0 else 0) + 1 + topic_length
            + 2 + (properties_length if properties_length > 0 else 0))


cpdef Py_ssize_t store_timestamp_position(int32_t sys_flag) noexcept:
    """Where STORETIMESTAMP sits in a record with this sysFlag."""
    return C_BORN_HOST_AT + (20 if sys_flag & C_BORN_V6 else 8)


# --- CommitLog append -----------------------------------------------------------------------------


cdef inline void _write_blank(const Span* span, Py_ssize_t position, Py_ssize_t limit) noexcept:
    cdef uint8_t* p
    if limit - position >= C_BLANK_LENGTH:
        p = span_at(span, position, C_BLANK_LENGTH)
        if p != NULL:
            store_i32(p, <int32_t>(limit - position))
            store_i32(p + 4, C_BLANK_MAGIC)


cdef int32_t _host_flags(int32_t sys_flag, Py_ssize_t born_length, Py_ssize_t store_length) except? -1:
    if born_length != 8 and born_length != 20:
        raise ValueError(f"born_host must be a 4- or 16-byte IP plus a 4-byte port, got {born_length} bytes")
    if store_length != 8 and store_length != 20:
        raise ValueError(f"store_host must be a 4- or 16-byte IP plus a 4-byte port, got {store_length} bytes")
    sys_flag &= ~(C_BORN_V6 | C_STORE_V6)
    if born_length == 20:
        sys_flag |= C_BORN_V6
    if store_length == 20:
        sys_flag |= C_STORE_V6
    return sys_flag


cdef Py_ssize_t _encode(uint8_t* p, const uint8_t* topic, Py_ssize_t topic_length, const uint8_t* body,
                        Py_ssize_t body_length, const uint8_t* properties, Py_ssize_t properties_length,
                        int32_t queue_id, int32_t flag, int64_t queue_offset, int64_t physical_offset,
                        int32_t sys_flag, int64_t born_timestamp, const uint8_t* born_host,
                        Py_ssize_t born_length, int64_t store_timestamp, const uint8_t* store_host,
                        Py_ssize_t store_length, int32_t reconsume_times, int64_t prepared_offset,
                        int32_t body_crc, Py_ssize_t size) noexcept:
    """Write a record of ``size`` bytes at ``p``, which the caller checked has room for it."""
    store_i32(p, <int32_t>size)
    store_i32(p + 4, C_MESSAGE_MAGIC)
    store_i32(p + 8, body_crc)
    store_i32(p + 12, queue_id)
    store_i32(p + 16, flag)
    store_i64(p + 20, queue_offset)
    store_i64(p + 28, physical_offset)
    store_i32(p + 36, sys_flag)
    store_i64(p + 40, born_timestamp)
    p += C_BORN_HOST_AT
    memcpy(p, born_host, born_length)
    p += born_length
    store_i64(p, store_timestamp)
    p += 8
    memcpy(p, store_host, store_length)
    p += store_length
    store_i32(p, reconsume_times)
    store_i64(p + 4, prepared_offset)
    store_i32(p + 12, <int32_t>body_length)
    p += 16
    if body_length > 0:
        memcpy(p, body, body_length)
        p += body_length
    p[0] = <uint8_t>topic_length
    memcpy(p + 1, topic, topic_length)
    p += 1 + topic_length
    store_i16(p, <int16_t>properties_length)
    if properties_length > 0:
        memcpy(p + 2, properties, properties_length)
    return size


def encode_record(topic, body, properties, int32_t queue_id, int32_t flag, int32_t sys_flag,
                  int64_t born_timestamp, born_host, store_host, int32_t reconsume_times,
                  int64_t prepared_transaction_offset):
    """One message as a record, with its body CRC (see ``_layout_py.encode_record``)."""
    cdef ReadBytes parts[5]  # topic, body, properties, born host, store host
    cdef Py_ssize_t size, taken = 0
    cdef bytearray out
    try:
        for value in (topic, body, properties, born_host, store_host):
            _read_bytes(value, &parts[taken])
            taken += 1
        if parts[0].length > MAX_TOPIC_LENGTH:
            raise ValueError(f"a topic of {parts[0].length} bytes is longer than {MAX_TOPIC_LENGTH}")
        if parts[2].length > MAX_PROPERTIES_LENGTH:
            raise ValueError(f"properties of {parts[2].length} bytes are longer than {MAX_PROPERTIES_LENGTH}")
        sys_flag = _host_flags(sys_flag, parts[3].length, parts[4].length)
        size = record_length(sys_flag, parts[1].length, parts[0].length, parts[2].length)
        out = PyByteArray_FromStringAndSize(NULL, size)
        _encode(<uint8_t*>PyByteArray_AS_STRING(out), parts[0].data, parts[0].length, parts[1].data, parts[1].length,
                parts[2].data, parts[2].length, queue_id, flag, 0, 0, sys_flag, born_timestamp, parts[3].data,
                parts[3].length, 0, parts[4].data, parts[4].length, reconsume_times, prepared_transaction_offset,
                <int32_t>_crc(parts[1].data, parts[1].length), size)
        return out
    finally:
        while taken > 0:
            taken -= 1
            _release_bytes(&parts[taken])


def set_queue_id(bytearray records, int32_t queue_id):
    """Write ``queue_id`` into every record of ``records`` (encoded before a random queue was drawn)."""
    cdef Py_ssize_t position = 0, length = len(records), size
    cdef uint8_t* data = <uint8_t*>PyByteArray_AS_STRING(records)
    while position + 16 <= length:
        store_i32(data + position + 12, queue_id)
        size = load_i32(data + position)
        if size <= 0:
            raise ValueError(f"record at byte {position} declares a bad size {size}")
        position += size


def encode_batch(batch_body, const uint8_t[::1] topic, int32_t queue_id, int32_t sys_flag, int64_t born_timestamp,
                 const uint8_t[::1] born_host, int64_t store_timestamp, const uint8_t[::1] store_host,
                 int32_t reconsume_times, const uint8_t[::1] batch_properties):
    """Records for the messages of a SEND_BATCH_MESSAGE body and their count (see ``_layout_py.encode_batch``)."""
    cdef Py_buffer source
    cdef Span span
    cdef Py_ssize_t position = 0, body_length, properties_length, total, size, used = 0, count = 0, capacity
    cdef Py_ssize_t batch_length = batch_properties.shape[0]
    cdef const uint8_t* head
    cdef const uint8_t* body
    cdef const uint8_t* own
    cdef uint8_t* p
    cdef int32_t flag
    cdef bint separator
    cdef bytearray out
    if topic.shape[0] > MAX_TOPIC_LENGTH:
        raise ValueError(f"a topic of {topic.shape[0]} bytes is longer than {MAX_TOPIC_LENGTH}")
    sys_flag = _host_flags(sys_flag, born_host.shape[0], store_host.shape[0])
    _acquire(batch_body, &source, False)
    try:
        span = _span(&source)
        # Grown by doubling and cut to length at the end: resizing to each record's end would copy the
        # records made so far again and again. A record is the item plus ~100 bytes and the topic.
        capacity = span.length + span.length // 4 + 256
        out = PyByteArray_FromStringAndSize(NULL, capacity)
        while position < span.length:
            head = span_at(&span, position, 20)
            if head == NULL:
                raise ValueError(f"batch item at byte {position} ends inside its fixed head")
            flag = load_i32(head + 12)
            body_length = load_i32(head + 16)
            position += 20
            body = span_at(&span, position, body_length + 2) if body_length >= 0 else NULL
            if body == NULL:
                raise ValueError(f"batch item body of {body_length} bytes runs past the end at byte {position}")
            position += body_length
            properties_length = load_i16(body + body_length)
            position += 2
            own = span_at(&span, position, properties_length)
            if own == NULL:
                raise ValueError(f"batch item properties of {properties_length} bytes run past the end")
            position += properties_length
            separator = properties_length > 0 and batch_length > 0 and own[properties_length - 1] != 2
            total = properties_length + batch_length + (1 if separator else 0)
            if total > MAX_PROPERTIES_LENGTH:
                raise ValueError(f"properties of {total} bytes are longer than {MAX_PROPERTIES_LENGTH}")
            size = record_length(sys_flag, body_length, topic.shape[0], total)
            if used + size > capacity:
                capacity = max(2 * capacity, used + size)
                PyByteArray_Resize(out, capacity)
            p = <uint8_t*>PyByteArray_AS_STRING(out) + used
            _encode(p, &topic[0] if topic.shape[0] else NULL, topic.shape[0], body, body_length, NULL, 0,
                    queue_id, flag, 0, 0, sys_flag, born_timestamp, &born_host[0], born_host.shape[0],
                    store_timestamp, &store_host[0], store_host.shape[0], reconsume_times, 0,
                    <int32_t>_crc(body, body_length), size)
            p += size - total - 2
            store_i16(p, <int16_t>total)
            p += 2
            if properties_length > 0:
                memcpy(p, own, properties_length)
                p += properties_length
            if separator:
                p[0] = 2
                p += 1
            if batch_length > 0:
                memcpy(p, &batch_properties[0], batch_length)
            used += size
            count += 1
        PyByteArray_Resize(out, used)
        return out, count
    finally:
        PyBuffer_Release(&source)


def append_records(dst, Py_ssize_t position, Py_ssize_t limit, records, queue_offsets, int64_t physical_offset,
                   int64_t store_timestamp):
    """Copy encoded records to ``position`` and patch their offsets; the count written, or 0 at end of file."""
    return copy_records(dst, position, limit, records, queue_offsets, physical_offset, store_timestamp)


cdef Py_ssize_t copy_records(object dst, Py_ssize_t position, Py_ssize_t limit, object records, object queue_offsets,
                             int64_t physical_offset, int64_t store_timestamp) except -1:
    cdef Py_buffer out, source
    cdef Span span, input_span
    cdef Py_ssize_t offset = 0, size, count = 0
    cdef const uint8_t* head
    cdef uint8_t* p
    cdef int32_t sys_flag
    cdef int64_t queue_offset
    _acquire(dst, &out, True)
    try:
        span = _span(&out)
        _check_span(&span, position, limit)
        _acquire(records, &source, False)
        try:
            input_span = _span(&source)
            while offset < input_span.length:
                head = span_at(&input_span, offset, C_BORN_HOST_AT)
                if head == NULL:
                    raise ValueError(f"record at byte {offset} of the input ends inside its fixed head")
                size = load_i32(head)
                sys_flag = load_i32(head + C_SYSFLAG_AT)
                if size < store_timestamp_position(sys_flag) + 8 or size > input_span.length - offset:
                    raise ValueError(f"record at byte {offset} of the input declares a bad size {size}")
                offset += size
                count += 1
            if len(queue_offsets) != count:
                raise ValueError(f"{len(queue_offsets)} queue offsets for {count} records")
            for value in queue_offsets:
                queue_offset = value  # the twin's OverflowError for an offset out of range, before any write
            if input_span.length + C_BLANK_LENGTH > limit - position:
                _write_blank(&span, position, limit)
                return 0
            p = span_at(&span, position, input_span.length)
            if p == NULL or input_span.length <= 0:
                return 0
            memcpy(p, input_span.data, <size_t>input_span.length)
            offset = 0
            for value in queue_offsets:
                sys_flag = load_i32(p + offset + C_SYSFLAG_AT)
                queue_offset = value
                store_i64(p + offset + C_QUEUE_OFFSET_AT, queue_offset)
                store_i64(p + offset + C_PHYSICAL_OFFSET_AT, <int64_t>(<uint64_t>physical_offset + <uint64_t>offset))
                store_i64(p + offset + store_timestamp_position(sys_flag), store_timestamp)
                offset += load_i32(p + offset)
            return count
        finally:
            PyBuffer_Release(&source)
    finally:
        PyBuffer_Release(&out)


# --- CommitLog scan -------------------------------------------------------------------------------


cdef object _text(const uint8_t* data, Py_ssize_t length):
    return PyUnicode_DecodeUTF8(<const char*>data, length, "replace")


cdef bint _name_is(const uint8_t* data, Py_ssize_t length, bytes name) noexcept:
    """Whether the ``length`` bytes at ``data`` spell ``name`` (one of the module's names, never None)."""
    return length == PyBytes_GET_SIZE(name) and memcmp(data, PyBytes_AS_STRING(name), length) == 0


cdef int _parse_java_int(const uint8_t* data, Py_ssize_t length, int32_t* out) noexcept:
    """``Integer.parseInt`` over ASCII: 1 with the value in ``out``, or 0 where Java would throw."""
    cdef Py_ssize_t i = 0
    cdef bint negative = False
    cdef int64_t value = 0
    if length > 0 and (data[0] == 43 or data[0] == 45):
        negative = data[0] == 45
        i = 1
    if i == length:
        return 0
    while i < length:
        if data[i] < 48 or data[i] > 57:
            return 0
        value = value * 10 + (data[i] - 48)
        if value > 2147483648:
            return 0
        i += 1
    if negative:
        value = -value
    if value > 2147483647 or value < -2147483648:
        return 0
    out[0] = <int32_t>value
    return 1


cdef int _read_properties(RecordInfo info, const uint8_t* data, Py_ssize_t length, bint schedule) except -1:
    """Fill keys, uniq_key, tags_code and delay_level from the properties; -2 when DELAY is not a number."""
    cdef Py_ssize_t start = 0, end, split, value_length
    cdef const uint8_t* tags = NULL
    cdef const uint8_t* delay = NULL
    cdef Py_ssize_t tags_length = 0, delay_length = 0
    cdef int32_t level = 0
    cdef const uint8_t* found
    info.properties = _text(data, length)
    while start < length:
        # memchr, not a byte loop: the properties (~100-200 bytes) are read for every record a put places; a
        # 1 KiB record with 138 bytes of them read in 449 ns with the loop, 385 with memchr.
        found = <const uint8_t*>memchr(data + start, 2, length - start)
        end = length if found == NULL else found - data
        found = <const uint8_t*>memchr(data + start, 1, end - start)
        split = end if found == NULL else found - data
        if start < split < end - 1:
            value_length = end - split - 1
            if _name_is(data + start, split - start, _TAGS):
                tags, tags_length = data + split + 1, value_length
            elif _name_is(data + start, split - start, _KEYS):
                info.keys = _text(data + split + 1, value_length)
            elif _name_is(data + start, split - start, _UNIQ_KEY):
                info.uniq_key = _text(data + split + 1, value_length)
            elif _name_is(data + start, split - start, _DELAY):
                delay, delay_length = data + split + 1, value_length
        start = end + 1
    if tags != NULL:
        info.tags_code = _java_string_hash(_text(tags, tags_length))
    if schedule and delay != NULL:
        if not _parse_java_int(delay, delay_length, &level):
            return -2
        info.delay_level = level
    return 0


cdef RecordInfo _check(const Span* span, Py_ssize_t position, Py_ssize_t limit, bint check_crc):
    cdef Span record
    cdef const uint8_t* p
    cdef Py_ssize_t size, cursor, store_host_length, topic_length
    cdef int32_t magic, body_length, sys_flag
    cdef int16_t properties_length
    cdef RecordInfo info
    p = span_at(span, position, 8)
    if p == NULL or limit - position < 8:
        return _invalid()
    size = load_i32(p)
    magic = load_i32(p + 4)
    if magic == C_BLANK_MAGIC:
        return RecordInfo(0)
    if magic != C_MESSAGE_MAGIC or size < C_BORN_HOST_AT or size > limit - position:
        return _invalid()
    record.data = span.data + position
    record.length = size
    sys_flag = load_i32(record.data + C_SYSFLAG_AT)
    cursor = store_timestamp_position(sys_flag)
    store_host_length = 20 if sys_flag & C_STORE_V6 else 8
    p = span_at(&record, cursor, 8 + store_host_length + 4 + 8 + 4)
    if p == NULL:
        return _invalid()
    info = RecordInfo(size)
    info.store_timestamp = load_i64(p)
    info.prepared_transaction_offset = load_i64(p + 8 + store_host_length + 4)
    body_length = load_i32(p + 8 + store_host_length + 12)
    cursor += 8 + store_host_length + 16
    if body_length > 0:
        p = span_at(&record, cursor, body_length)
        if p == NULL:
            return _invalid()
        if check_crc and _crc(p, body_length) != load_i32(record.data + 8):
            return _invalid()
        cursor += body_length
    p = span_at(&record, cursor, 1)
    if p == NULL:
        return _invalid()
    topic_length = p[0]
    cursor += 1
    if topic_length > MAX_TOPIC_LENGTH:
        return _invalid()
    p = span_at(&record, cursor, topic_length + 2)
    if p == NULL:
        return _invalid()
    info.topic = _text(p, topic_length)
    properties_length = load_i16(p + topic_length)
    cursor += topic_length + 2
    if properties_length > size - cursor:
        return _invalid()
    if record_length(sys_flag, body_length, topic_length, properties_length) != size:
        return _invalid()
    info.queue_id = load_i32(record.data + 12)
    info.queue_offset = load_i64(record.data + C_QUEUE_OFFSET_AT)
    info.physical_offset = load_i64(record.data + C_PHYSICAL_OFFSET_AT)
    info.sys_flag = sys_flag
    if properties_length > 0:
        schedule = _name_is(record.data + cursor - topic_length - 2, topic_length, _SCHEDULE_TOPIC)
        if _read_properties(info, record.data + cursor, properties_length, schedule) == -2:
            return _invalid()
    return info


def check_record(buffer, Py_ssize_t position, Py_ssize_t limit, bint check_crc=True):
    """Validate the record at ``position`` (Java's ``checkMessageAndReturnSize``); see the twin."""
    return read_record(buffer, position, limit, check_crc)


cdef RecordInfo read_record(object buffer, Py_ssize_t position, Py_ssize_t limit, bint check_crc):
    cdef Py_buffer view
    cdef Span span
    _acquire(buffer, &view, False)
    try:
        span = _span(&view)
        _check_span(&span, position, limit)
        return _check(&span, position, limit, check_crc)
    finally:
        PyBuffer_Release(&view)


def scan_valid_end(buffer, Py_ssize_t position, Py_ssize_t limit, bint check_crc=True):
    """Walk valid records from ``position``: ``(end of the last valid one, whether a blank marker follows)``."""
    cdef Py_buffer view
    cdef Span span
    cdef RecordInfo info
    _acquire(buffer, &view, False)
    try:
        span = _span(&view)
        _check_span(&span, position, limit)
        while True:
            info = _check(&span, position, limit, check_crc)
            if info.size > 0:
                position += info.size
                continue
            return position, info.size == 0
    finally:
        PyBuffer_Release(&view)


def read_store_timestamp(buffer, Py_ssize_t position, Py_ssize_t limit):
    """The STORETIMESTAMP of the record at ``position``, or -1 when no record header is there."""
    cdef Py_buffer view
    cdef Span span
    cdef const uint8_t* p
    cdef Py_ssize_t at
    _acquire(buffer, &view, False)
    try:
        span = _span(&view)
        _check_span(&span, position, limit)
        if limit - position < C_SYSFLAG_AT + 4:
            return -1
        p = span.data + position
        at = position + store_timestamp_position(load_i32(p + C_SYSFLAG_AT))
        if load_i32(p + 4) != C_MESSAGE_MAGIC or at + 8 > limit:
            return -1
        return load_i64(span.data + at)
    finally:
        PyBuffer_Release(&view)


# --- faulting pages in ahead of their writes ----------------------------------------------------------

cdef extern from *:
    """
    #include <sys/mman.h>
    #include <unistd.h>
    #ifndef MADV_POPULATE_WRITE
    #define MADV_POPULATE_WRITE 23  /* Linux 5.14; older headers do not name it */
    #endif
    """
    int MADV_POPULATE_WRITE
    int MS_SYNC
    int madvise(void* addr, size_t length, int advice) nogil
    int msync(void* addr, size_t length, int flags) nogil
    long sysconf(int name) nogil
    int _SC_PAGESIZE

cdef Py_ssize_t PAGE_SIZE = sysconf(_SC_PAGESIZE)


def populate_for_writing(dst, Py_ssize_t position, Py_ssize_t length):
    """Fault in, writable, the pages of the mapping ``dst`` under ``[position, position + length)`` without
    writing to them (Linux's MADV_POPULATE_WRITE), not holding the GIL meanwhile. True when done; False when
    the kernel cannot (before 5.14), having changed nothing. See ``rocketmq_py.store.prefault``."""
    cdef Py_buffer out
    cdef Span span
    cdef size_t start, end
    cdef int result, error = 0
    _acquire(dst, &out, True)
    try:
        span = _span(&out)
        if length < 0:
            raise ValueError(f"a length of {length} bytes")
        _check_span(&span, position, position + length)
        if length == 0:
            return True
        # madvise takes whole pages; a mapping starts on a page, so rounding down stays inside it.
        start = <size_t>(span.data + position) & ~(<size_t>PAGE_SIZE - 1)
        end = <size_t>(span.data + position + length)
        with nogil:
            result = madvise(<void*>start, end - start, MADV_POPULATE_WRITE)
            if result != 0:
                error = errno
        if result == 0:
            return True
        if error == EINVAL:
            return False
        raise OSError(error, os.strerror(error))
    finally:
        PyBuffer_Release(&out)


def write_back(dst, Py_ssize_t length):
    """Write back the changed pages of the mapping ``dst`` under its first ``length`` bytes and wait for them
    (msync MS_SYNC: for a file, its data and what reading it needs, as fdatasync), not holding the GIL
    meanwhile. The pages after them are left alone: see the twin."""
    cdef Py_buffer out
    cdef Span span
    cdef int result, error = 0
    cdef size_t end
    _acquire(dst, &out, True)
    try:
        span = _span(&out)
        if length < 0:
            raise ValueError(f"a length of {length} bytes")
        _check_span(&span, 0, length)
        if length == 0:
            return
        # msync takes whole pages; the mapping is whole pages, so rounding the end up stays inside it.
        end = (<size_t>length + <size_t>PAGE_SIZE - 1) & ~(<size_t>PAGE_SIZE - 1)
        with nogil:
            result = msync(<void*>span.data, end, MS_SYNC)
            if result != 0:
                error = errno
        if result != 0:
            raise OSError(error, os.strerror(error))
    finally:
        PyBuffer_Release(&out)


# --- ConsumeQueue ---------------------------------------------------------------------------------


def cq_put_unit(dst, Py_ssize_t position, int64_t physical_offset, int32_t size, int64_t tags_code):
    """Write one unit: ``int64 commitLogOffset, int32 size, int64 tagsCode``."""
    put_cq_unit(dst, position, physical_offset, size, tags_code)


cdef int put_cq_unit(object dst, Py_ssize_t position, int64_t physical_offset, int32_t size,
                     int64_t tags_code) except -1:
    cdef Py_buffer out
    cdef Span span
    cdef uint8_t* p
    _acquire(dst, &out, True)
    try:
        span = _span(&out)
        _check_span(&span, position, position + C_CQ_UNIT)
        p = span.data + position
        store_i64(p, physical_offset)
        store_i32(p + 8, size)
        store_i64(p + 12, tags_code)
    finally:
        PyBuffer_Release(&out)
    return 0


def cq_fill_blank(dst, Py_ssize_t position, Py_ssize_t limit):
    """Fill whole units from ``position`` to ``limit`` with the padding unit ``(0, Integer.MAX_VALUE, 0)``."""
    cdef Py_buffer out
    cdef Span span
    cdef uint8_t* p
    _acquire(dst, &out, True)
    try:
        span = _span(&out)
        _check_span(&span, position, limit)
        while limit - position >= C_CQ_UNIT:
            p = span.data + position
            memset(p, 0, C_CQ_UNIT)
            store_i32(p + 8, 0x7FFFFFFF)
            position += C_CQ_UNIT
    finally:
        PyBuffer_Release(&out)


def cq_read_units(buffer, Py_ssize_t position, Py_ssize_t limit, Py_ssize_t max_units):
    """Up to ``max_units`` whole units from ``position`` as ``(offset, size, tags_code)``, as stored."""
    cdef Py_buffer view
    cdef Span span
    cdef const uint8_t* p
    cdef Py_ssize_t count, i
    cdef list units = []
    _acquire(buffer, &view, False)
    try:
        span = _span(&view)
        _check_span(&span, position, limit)
        count = (limit - position) // C_CQ_UNIT
        if max_units < count:
            count = max_units if max_units > 0 else 0
        for i in range(count):
            p = span.data + position + i * C_CQ_UNIT
            units.append((load_i64(p), load_i32(p + 8), load_i64(p + 12)))
        return units
    finally:
        PyBuffer_Release(&view)


def cq_valid_end(buffer, Py_ssize_t position, Py_ssize_t limit):
    """Walk units while ``offset >= 0 and size > 0``: ``(end of the last valid unit, its offset + size or -1)``."""
    cdef Py_buffer view
    cdef Span span
    cdef const uint8_t* p
    cdef int64_t offset, max_physical = -1
    cdef int32_t size
    _acquire(buffer, &view, False)
    try:
        span = _span(&view)
        _check_span(&span, position, limit)
        while limit - position >= C_CQ_UNIT:
            p = span.data + position
            offset = load_i64(p)
            size = load_i32(p + 8)
            if offset < 0 or size <= 0:
                break
            max_physical = <int64_t>(<uint64_t>offset + <uint64_t>size)
            position += C_CQ_UNIT
        return position, max_physical
    finally:
        PyBuffer_Release(&view)


# --- IndexFile ------------------------------------------------------------------------------------


def index_file_size(Py_ssize_t hash_slot_num, Py_ssize_t index_num):
    return C_INDEX_HEADER + hash_slot_num * 4 + index_num * 20


cdef int _check_index(const Span* span, Py_ssize_t hash_slot_num, Py_ssize_t index_num,
                      int64_t key_hash) except -1:
    if key_hash < 0 or key_hash > 0x7FFFFFFF:
        raise ValueError(f"an index key hash is a non-negative int32, got {key_hash}")
    if hash_slot_num <= 0 or index_num <= 0 or span.length < C_INDEX_HEADER + hash_slot_num * 4 + index_num * 20:
        raise ValueError(f"an index of {hash_slot_num} slots and {index_num} entries needs "
                         f"{C_INDEX_HEADER + hash_slot_num * 4 + index_num * 20} bytes, "
                         f"the buffer has {span.length}")
    return 0


cdef inline int32_t _index_count(const uint8_t* header) noexcept:
    cdef int32_t count = load_i32(header + 36)
    return count if count > 0 else 1


def index_header(buffer):
    """``(beginTimestamp, endTimestamp, beginPhyOffset, endPhyOffset, hashSlotCount, indexCount)``."""
    cdef Py_buffer view
    cdef const uint8_t* p
    _acquire(buffer, &view, False)
    try:
        if view.len < C_INDEX_HEADER:
            raise ValueError("an index header needs 40 bytes")
        p = <const uint8_t*>view.buf
        return (load_i64(p), load_i64(p + 8), load_i64(p + 16), load_i64(p + 24), load_i32(p + 32),
                _index_count(p))
    finally:
        PyBuffer_Release(&view)


cdef int index_ends(object buffer, int64_t* end_phy_offset, int32_t* index_count) except -1:
    """The header's ``endPhyOffset`` and ``indexCount`` (as ``index_header`` reads them), without a tuple."""
    cdef Py_buffer view
    cdef const uint8_t* p
    _acquire(buffer, &view, False)
    try:
        if view.len < C_INDEX_HEADER:
            raise ValueError("an index header needs 40 bytes")
        p = <const uint8_t*>view.buf
        end_phy_offset[0] = load_i64(p + 24)
        index_count[0] = _index_count(p)
    finally:
        PyBuffer_Release(&view)
    return 0


def index_start(dst, int64_t end_phy_offset, int64_t end_timestamp):
    """Begin a new index file where the previous one ended (Java's IndexFile constructor)."""
    cdef Py_buffer out
    cdef uint8_t* p
    _acquire(dst, &out, True)
    try:
        if out.len < C_INDEX_HEADER:
            raise ValueError("an index header needs 40 bytes")
        p = <uint8_t*>out.buf
        if end_phy_offset > 0:
            store_i64(p + 16, end_phy_offset)
            store_i64(p + 24, end_phy_offset)
        if end_timestamp > 0:
            store_i64(p, end_timestamp)
            store_i64(p + 8, end_timestamp)
    finally:
        PyBuffer_Release(&out)


def index_put(dst, Py_ssize_t hash_slot_num, Py_ssize_t index_num, int64_t key_hash, int64_t physical_offset,
              int64_t store_timestamp):
    """Add an entry for ``key_hash`` (see ``index_key_hash``); False when the file is full."""
    return put_index_entry(dst, hash_slot_num, index_num, key_hash, physical_offset, store_timestamp) == 1


cdef int put_index_entry(object dst, Py_ssize_t hash_slot_num, Py_ssize_t index_num, int64_t key_hash,
                         int64_t physical_offset, int64_t store_timestamp) except -1:
    cdef Py_buffer out
    cdef Span span
    cdef uint8_t* p
    cdef uint8_t* entry
    cdef int32_t index_count, slot_value
    cdef int64_t begin_ts, time_diff
    cdef Py_ssize_t slot_position
    _acquire(dst, &out, True)
    try:
        span = _span(&out)
        _check_index(&span, hash_slot_num, index_num, key_hash)
        p = span.data
        index_count = _index_count(p)
        if index_count >= index_num:
            return 0
        begin_ts = load_i64(p)
        slot_position = C_INDEX_HEADER + (key_hash % hash_slot_num) * 4
        slot_value = load_i32(p + slot_position)
        if slot_value <= 0 or slot_value > index_count:
            slot_value = 0
        if begin_ts <= 0 or store_timestamp < begin_ts:
            time_diff = 0
        else:
            time_diff = (store_timestamp - begin_ts) // 1000
            if time_diff > 0x7FFFFFFF:
                time_diff = 0x7FFFFFFF
        entry = p + C_INDEX_HEADER + hash_slot_num * 4 + <Py_ssize_t>index_count * 20
        store_i32(entry, <int32_t>key_hash)
        store_i64(entry + 4, physical_offset)
        store_i32(entry + 12, <int32_t>time_diff)
        store_i32(entry + 16, slot_value)
        store_i32(p + slot_position, index_count)
        if index_count <= 1:
            store_i64(p + 16, physical_offset)
            store_i64(p, store_timestamp)
        if slot_value == 0:
            store_i32(p + 32, load_i32(p + 32) + 1)
        store_i32(p + 36, index_count + 1)
        store_i64(p + 24, physical_offset)
        store_i64(p + 8, store_timestamp)
        return 1
    finally:
        PyBuffer_Release(&out)


def index_select(buffer, Py_ssize_t hash_slot_num, Py_ssize_t index_num, int64_t key_hash, Py_ssize_t max_num,
                 int64_t begin, int64_t end):
    """Physical offsets of entries for ``key_hash`` stored within ``[begin, end]`` ms, newest first."""
    cdef Py_buffer view
    cdef Span span
    cdef const uint8_t* p
    cdef const uint8_t* entry
    cdef int32_t index_count, slot_value, next_index, prev_index, time_diff
    cdef int64_t begin_ts, time_read
    cdef list result = []
    _acquire(buffer, &view, False)
    try:
        span = _span(&view)
        _check_index(&span, hash_slot_num, index_num, key_hash)
        p = span.data
        begin_ts = load_i64(p)
        index_count = _index_count(p)
        slot_value = load_i32(p + C_INDEX_HEADER + (key_hash % hash_slot_num) * 4)
        if slot_value <= 0 or slot_value > index_count or index_count <= 1:
            return result
        next_index = slot_value
        while len(result) < max_num:
            if next_index >= index_num:
                break
            entry = p + C_INDEX_HEADER + hash_slot_num * 4 + <Py_ssize_t>next_index * 20
            time_diff = load_i32(entry + 12)
            prev_index = load_i32(entry + 16)
            if time_diff < 0:
                break
            time_read = <int64_t>(<uint64_t>begin_ts + <uint64_t>time_diff * 1000)
            if load_i32(entry) == key_hash and begin <= time_read <= end:
                result.append(load_i64(entry + 4))
            if prev_index <= 0 or prev_index > index_count or prev_index == next_index or time_read < begin:
                break
            next_index = prev_index
        return result
    finally:
        PyBuffer_Release(&view)
