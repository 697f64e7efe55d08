# cython: language_level=3
"""Contract of the compiled codec: bounds-checked big-endian byte access.

Every compiled module that reads RocketMQ bytes (``_codec``, ``_store``)
goes through ``ByteReader``: ``reader_take`` hands out a pointer only when
the bytes are there, so a malformed length can never read past the end.
The modules are compiled with boundscheck and wraparound off, so these
checks are the only protection. The ``load_*`` / ``store_*`` helpers are
the one place that knows the byte order (big-endian, as Java's ByteBuffer).
"""
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t


cdef inline uint16_t load_u16(const uint8_t* p) noexcept nogil:
    return <uint16_t>((<uint16_t>p[0] << 8) | p[1])


cdef inline int16_t load_i16(const uint8_t* p) noexcept nogil:
    return <int16_t>load_u16(p)


cdef inline uint32_t load_u32(const uint8_t* p) noexcept nogil:
    return ((<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16)
            | (<uint32_t>p[2] << 8) | <uint32_t>p[3])


cdef inline int32_t load_i32(const uint8_t* p) noexcept nogil:
    return <int32_t>load_u32(p)


cdef inline int64_t load_i64(const uint8_t* p) noexcept nogil:
    return <int64_t>((<uint64_t>load_u32(p) << 32) | load_u32(p + 4))


cdef inline void store_u16(uint8_t* p, uint16_t v) noexcept nogil:
    p[0] = <uint8_t>(v >> 8)
    p[1] = <uint8_t>v


cdef inline void store_u32(uint8_t* p, uint32_t v) noexcept nogil:
    p[0] = <uint8_t>(v >> 24)
    p[1] = <uint8_t>(v >> 16)
    p[2] = <uint8_t>(v >> 8)
    p[3] = <uint8_t>v


cdef inline void store_u64(uint8_t* p, uint64_t v) noexcept nogil:
    store_u32(p, <uint32_t>(v >> 32))
    store_u32(p + 4, <uint32_t>v)


ctypedef struct ByteReader:
    const uint8_t* data
    Py_ssize_t position
    Py_ssize_t end


cdef inline void reader_init(ByteReader* r, const uint8_t* data, Py_ssize_t length) noexcept nogil:
    r.data = data
    r.position = 0
    r.end = length


cdef inline Py_ssize_t reader_left(const ByteReader* r) noexcept nogil:
    return r.end - r.position


cdef inline const uint8_t* reader_take(ByteReader* r, Py_ssize_t count) noexcept nogil:
    """``count`` bytes at the cursor (and advance past them), or NULL when fewer are left
    or ``count`` is negative; the cursor does not move on NULL."""
    cdef const uint8_t* p
    if count < 0 or r.end - r.position < count:
        return NULL
    p = r.data + r.position
    r.position += count
    return p


cdef class FrameDecoder:
    cdef bytearray _buffer
    cdef object _failed
    cdef object _max_frame_length
    cdef long long _limit
    cdef bint _limit_is_int

    cdef list _cut(self, const uint8_t* data, Py_ssize_t available, Py_ssize_t* consumed)


cdef class UniqueIdGenerator:
    cdef public object prefix
    cdef uint64_t _counter
    cdef object _start_ms
    cdef object _next_start_ms
