# cython: language_level=3
"""Contract of the compiled store: big-endian access to buffers by pointer, length and bounds check.

A ``Span`` is a pointer and a length taken from an object's buffer; every
read or write of a field goes through ``span_at``, which hands out a pointer
only when the whole field lies inside the span. The module is compiled with
boundscheck and wraparound off, so these checks are the only protection.
The byte-order helpers come from ``_bytes.pxd``, shared with ``_codec``.
"""
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t

from rocketmq_py._bytes cimport load_u32, load_i16, load_i32, load_i64, store_i16, store_i32, store_i64


ctypedef struct Span:
    uint8_t* data
    Py_ssize_t length


cdef inline uint8_t* span_at(const Span* span, Py_ssize_t position, Py_ssize_t count) noexcept nogil:
    """``count`` bytes at ``position``, or NULL when any of them is outside the span."""
    if position < 0 or count < 0 or position > span.length or span.length - position < count:
        return NULL
    return span.data + position


# The store's write path sets the three offsets it assigns (physical and queue offset, store time) on the
# RecordInfo of a record it read from a buffer before placing it; the other fields are the record's own.
cdef class RecordInfo:
    cdef readonly Py_ssize_t size
    cdef readonly object topic
    cdef readonly int32_t queue_id
    cdef public int64_t physical_offset
    cdef readonly int64_t tags_code
    cdef public int64_t store_timestamp
    cdef public int64_t queue_offset
    cdef readonly object keys
    cdef readonly object uniq_key
    cdef readonly int32_t sys_flag
    cdef readonly int64_t prepared_transaction_offset
    cdef readonly int32_t delay_level
    cdef readonly object properties


# The layout functions the store's compiled write path (store/_write_path.pyx) calls at C level, without a
# Python call each; the module's ``def`` functions of the same job wrap them.
cpdef Py_ssize_t record_length(int32_t sys_flag, Py_ssize_t body_length, Py_ssize_t topic_length,
                               Py_ssize_t properties_length) noexcept
cdef int32_t index_slot_hash(str key) except? -1
# Java's String.hashCode() of a text that continues one whose hash is ``h`` (0 for none): the hash of
# "topic#key" is java_hash_on(java_hash_on(0, "topic#"), key), without making that string.
cdef uint32_t java_hash_on(uint32_t h, str text) noexcept


cdef inline uint32_t java_hash_char(uint32_t h, Py_UCS4 ch) noexcept:
    """``h`` continued by one character, as its UTF-16 code units (two for a character past U+FFFF)."""
    if ch > 0xFFFF:
        h = 31 * h + (0xD800 + ((<uint32_t>ch - 0x10000) >> 10))
        return 31 * h + (0xDC00 + ((<uint32_t>ch - 0x10000) & 0x3FF))
    return 31 * h + <uint32_t>ch


cdef inline int32_t index_slot_of(int32_t key_hash) noexcept:
    """The index slot hash of Java's IndexFile for a key's hashCode: its absolute value, 0 for Integer.MIN_VALUE."""
    if key_hash == -2147483648:
        return 0
    return -key_hash if key_hash < 0 else key_hash
cdef RecordInfo read_record(object buffer, Py_ssize_t position, Py_ssize_t limit, bint check_crc)
# ``append_records``: the count of records written, or 0 after writing the end-of-file marker.
cdef Py_ssize_t copy_records(object dst, Py_ssize_t position, Py_ssize_t limit, object records, object queue_offsets,
                             int64_t physical_offset, int64_t store_timestamp) except -1
cdef int put_cq_unit(object dst, Py_ssize_t position, int64_t physical_offset, int32_t size,
                     int64_t tags_code) except -1
# 1 when the entry was put, 0 when the file is full.
cdef int put_index_entry(object dst, Py_ssize_t hash_slot_num, Py_ssize_t index_num, int64_t key_hash,
                         int64_t physical_offset, int64_t store_timestamp) except -1
# An index file's end physical offset and entry count, as ``index_header`` reads them.
cdef int index_ends(object buffer, int64_t* end_phy_offset, int32_t* index_count) except -1
