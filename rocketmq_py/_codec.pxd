# cython: language_level=3
"""Contract of the compiled codec: bounds-checked big-endian byte access.

Every compiled module that reads RocketMQ bytes (``_codec``, ``_store``)
goes through ``ByteReader``: ``reader_take`` hands out a pointer only when
the bytes are there, so a malformed length can never read past the end.
The modules are compiled with boundscheck and wraparound off, so these
checks are the only protection. The big-endian ``load_*`` / ``store_*``
helpers come from ``_bytes.pxd``, the one place that knows the byte order.
"""
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t

from rocketmq_py._bytes cimport load_u16, load_i16, load_u32, load_i32, load_i64, store_u16, store_u32, store_u64


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


# One frame, its 4-byte length prefix stripped, decoded from the ``length`` bytes at ``data``: ``decode_frame``
# without its copy of the frame into bytes, for a compiled module that cuts frames out of a buffer it holds.
cdef object _decode_frame(const uint8_t* data, Py_ssize_t length)
