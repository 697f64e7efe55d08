# cython: language_level=3
"""Contract of the compiled store: big-endian access to buffers by pointer, length and bounds check.

A ``Span`` is a pointer and a length taken from an object's buffer; every
read or write of a field goes through ``span_at``, which hands out a pointer
only when the whole field lies inside the span. The module is compiled with
boundscheck and wraparound off, so these checks are the only protection.
``load_*`` / ``store_*`` are the one place that knows the byte order.
"""
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t


ctypedef struct Span:
    uint8_t* data
    Py_ssize_t length


cdef inline uint8_t* span_at(const Span* span, Py_ssize_t position, Py_ssize_t count) noexcept nogil:
    """``count`` bytes at ``position``, or NULL when any of them is outside the span."""
    if position < 0 or count < 0 or position > span.length or span.length - position < count:
        return NULL
    return span.data + position


cdef inline uint32_t load_u32(const uint8_t* p) noexcept nogil:
    return ((<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16)
            | (<uint32_t>p[2] << 8) | <uint32_t>p[3])


cdef inline int16_t load_i16(const uint8_t* p) noexcept nogil:
    return <int16_t>((<uint16_t>p[0] << 8) | p[1])


cdef inline int32_t load_i32(const uint8_t* p) noexcept nogil:
    return <int32_t>load_u32(p)


cdef inline int64_t load_i64(const uint8_t* p) noexcept nogil:
    return <int64_t>((<uint64_t>load_u32(p) << 32) | load_u32(p + 4))


cdef inline void store_i16(uint8_t* p, int16_t v) noexcept nogil:
    p[0] = <uint8_t>(<uint16_t>v >> 8)
    p[1] = <uint8_t>v


cdef inline void store_i32(uint8_t* p, int32_t v) noexcept nogil:
    cdef uint32_t u = <uint32_t>v
    p[0] = <uint8_t>(u >> 24)
    p[1] = <uint8_t>(u >> 16)
    p[2] = <uint8_t>(u >> 8)
    p[3] = <uint8_t>u


cdef inline void store_i64(uint8_t* p, int64_t v) noexcept nogil:
    cdef uint64_t u = <uint64_t>v
    store_i32(p, <int32_t>(u >> 32))
    store_i32(p + 4, <int32_t>u)


cdef class RecordInfo:
    cdef readonly Py_ssize_t size
    cdef readonly object topic
    cdef readonly int32_t queue_id
    cdef readonly int64_t physical_offset
    cdef readonly int64_t tags_code
    cdef readonly int64_t store_timestamp
    cdef readonly int64_t queue_offset
    cdef readonly object keys
    cdef readonly object uniq_key
    cdef readonly int32_t sys_flag
    cdef readonly int64_t prepared_transaction_offset
    cdef readonly int32_t delay_level
    cdef readonly object properties
