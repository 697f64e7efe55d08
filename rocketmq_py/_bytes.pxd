# cython: language_level=3
"""Big-endian loads and stores by pointer: the one place that knows the byte order.

Shared by every compiled module (``_codec``, ``store/_layout``). Callers check bounds
before they take a pointer (``_codec.pxd``'s ByteReader, ``store/_layout.pxd``'s Span);
these helpers only convert, as Java's ByteBuffer does in big-endian order.
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


cdef inline void store_i16(uint8_t* p, int16_t v) noexcept nogil:
    store_u16(p, <uint16_t>v)


cdef inline void store_i32(uint8_t* p, int32_t v) noexcept nogil:
    store_u32(p, <uint32_t>v)


cdef inline void store_i64(uint8_t* p, int64_t v) noexcept nogil:
    store_u64(p, <uint64_t>v)
