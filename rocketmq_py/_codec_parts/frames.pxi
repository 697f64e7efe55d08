# Included by _codec.pyx: Frames: encode_command, decode_frame and the incremental FrameDecoder.
# Shares the module namespace of _codec; see _codec.pyx for the imports.

# --- frames ----------------------------------------------------------------------


def new_command(code, language, version, opaque, flag, remark, ext_fields, body, serialize_type, custom_header):
    """``RemotingCommand`` with every field given in order, stored straight into its slots (no ``__init__``)."""
    cdef object cmd
    if not _command_fast:
        return RemotingCommand(code, language, version, opaque, flag, remark, ext_fields, body, serialize_type,
                               custom_header)
    cmd = _new_command(code, language, version, opaque, flag, remark, ext_fields, body, serialize_type)
    rmq_fill_slot(cmd, _command_slots[RC_CUSTOM_HEADER], custom_header)
    return cmd


cdef enum:
    SERIALIZE_JSON_C = 0
    SERIALIZE_ROCKETMQ_C = 1

assert (SERIALIZE_JSON, SERIALIZE_ROCKETMQ) == (SERIALIZE_JSON_C, SERIALIZE_ROCKETMQ_C)


cdef inline int _serialize_kind(object serialize_type) except -2:
    """SERIALIZE_JSON_C or SERIALIZE_ROCKETMQ_C for a value equal to one of them, else -1 (an exact int compared in
    C, anything else with ``==`` as the twin compares it)."""
    cdef int overflow
    cdef long long value
    if PyLong_CheckExact(serialize_type):
        value = PyLong_AsLongLongAndOverflow(serialize_type, &overflow)
        return <int>value if not overflow and (value == SERIALIZE_JSON_C or value == SERIALIZE_ROCKETMQ_C) else -1
    if serialize_type == SERIALIZE_JSON:
        return SERIALIZE_JSON_C
    if serialize_type == SERIALIZE_ROCKETMQ:
        return SERIALIZE_ROCKETMQ_C
    return -1


def encode_command(cmd) -> bytes:
    """The whole frame of ``cmd``, length prefix included, ready for one write."""
    cdef Writer w
    cdef int kind
    cdef Py_buffer body_view
    cdef bint body_held = False
    cdef const char* body_data
    cdef Py_ssize_t body_length, header_length, total
    cdef uint32_t length_field
    cdef uint8_t* out
    _w_init(&w)
    try:
        serialize_type = _field(cmd, RC_SERIALIZE_TYPE, "serialize_type")
        kind = _serialize_kind(serialize_type)
        if kind == SERIALIZE_JSON_C:
            _w_json_header(&w, cmd)
        elif kind == SERIALIZE_ROCKETMQ_C:
            _w_binary_header(&w, cmd)
        else:
            raise CodecError(f"unknown serialize type {serialize_type}: use 0 (JSON) or 1 (ROCKETMQ)")
        body = _field(cmd, RC_BODY, "body") or b""
        if PyBytes_CheckExact(body):
            body_data = PyBytes_AS_STRING(body)
            body_length = PyBytes_GET_SIZE(body)
        else:
            PyObject_GetBuffer(body, &body_view, PyBUF_SIMPLE)
            body_held = True
            body_data = <const char*>body_view.buf
            body_length = body_view.len
        header_length = w.length
        if header_length > 0xFFFFFF:
            raise CodecError(f"header of {header_length} bytes does not fit the 24-bit header length")
        total = 4 + header_length + body_length
        if total + 4 > _FRAME_LIMIT:
            raise FrameTooLargeError(f"frame of {total + 4} bytes exceeds the {MAX_FRAME_LENGTH} byte limit")
        if PyLong_CheckExact(serialize_type):
            length_field = (<uint32_t>(<long>serialize_type) << 24) | <uint32_t>header_length
        else:
            length_field = (serialize_type << 24) | header_length
        frame = PyBytes_FromStringAndSize(NULL, total + 4)
        out = <uint8_t*>PyBytes_AS_STRING(frame)
        store_u32(out, <uint32_t>total)
        store_u32(out + 4, length_field)
        memcpy(out + 8, w.data, header_length)
        memcpy(out + 8 + header_length, body_data, body_length)
        return frame
    finally:
        if body_held:
            PyBuffer_Release(&body_view)
        _w_free(&w)


def decode_frame(frame) -> RemotingCommand:
    """Decode one frame whose 4-byte length prefix was already stripped."""
    frame = _bytes_of(frame)
    return _decode_frame(<const uint8_t*>PyBytes_AS_STRING(frame), PyBytes_GET_SIZE(frame))


cdef object _decode_frame(const uint8_t* data, Py_ssize_t length):
    cdef uint32_t field
    cdef Py_ssize_t header_length
    if length < 4:
        raise CodecError(f"frame of {length} bytes is shorter than its 4-byte header length field")
    field = load_u32(data)
    header_length = field & 0xFFFFFF
    if header_length > length - 4:
        raise CodecError(f"header length {header_length} exceeds the {length - 4} bytes left in the frame")
    body = None
    if length - 4 - header_length > 0:
        body = PyBytes_FromStringAndSize(<const char*>data + 4 + header_length, length - 4 - header_length)
    if field >> 24 == _TYPE_JSON:
        return _decode_json_header(data + 4, header_length, body)
    if field >> 24 == _TYPE_ROCKETMQ:
        return _decode_binary_header(data + 4, header_length, body)
    raise CodecError(f"unknown serialize type {field >> 24} in the header length field")


cdef class FrameDecoder:
    """Cuts a byte stream into commands, fed with chunks of any size.

    Only the tail of an unfinished frame is kept, and a length above the
    limit is refused as soon as its 4 bytes arrive, so memory stays bounded
    by the limit. After an error the decoder stays broken: the connection
    must be closed, as Java's NettyDecoder closes the channel.
    """

    def __init__(self, max_frame_length=MAX_FRAME_LENGTH):
        self.max_frame_length = max_frame_length
        self._buffer = bytearray()
        self._failed = None

    @property
    def max_frame_length(self):
        return self._max_frame_length

    @max_frame_length.setter
    def max_frame_length(self, value):
        cdef int overflow = 0
        cdef long long limit
        # An int limit is compared in C; anything else as the twin compares it.
        self._limit_is_int = PyLong_Check(value)
        if self._limit_is_int:
            limit = PyLong_AsLongLongAndOverflow(value, &overflow)
            if overflow > 0:
                limit = 1LL << 62
            elif overflow < 0:
                limit = -(1LL << 62)
            self._limit = limit
        self._max_frame_length = value

    @property
    def buffered(self) -> int:
        """Bytes received that do not yet form a whole frame."""
        return PyByteArray_GET_SIZE(self._buffer)

    def feed(self, data) -> list:
        cdef Py_buffer view
        cdef Py_ssize_t consumed = 0
        cdef Py_ssize_t length
        cdef list commands
        if self._failed is not None:
            raise self._failed
        buffer = self._buffer
        if PyByteArray_GET_SIZE(buffer) == 0 and PyBytes_CheckExact(data):
            # Nothing pending: cut frames straight out of the chunk, keep the tail.
            length = PyBytes_GET_SIZE(data)
            try:
                commands = self._cut(<const uint8_t*>PyBytes_AS_STRING(data), length, &consumed)
            except CodecError as error:
                self._failed = error
                raise
            except BaseException:
                buffer += data  # as the twin, which appended before decoding
                raise
            if consumed < length:
                buffer += data[consumed:]
            return commands
        buffer += data
        PyObject_GetBuffer(buffer, &view, PyBUF_SIMPLE)  # pins the bytes while decoding
        try:
            commands = self._cut(<const uint8_t*>view.buf, view.len, &consumed)
        except CodecError as error:
            PyBuffer_Release(&view)
            self._failed = error
            buffer.clear()
            raise
        except BaseException:
            PyBuffer_Release(&view)
            raise
        PyBuffer_Release(&view)
        if consumed:
            del buffer[:consumed]
        return commands

    cdef list _cut(self, const uint8_t* data, Py_ssize_t available, Py_ssize_t* consumed):
        cdef list commands = []
        cdef Py_ssize_t position = 0
        cdef Py_ssize_t end
        cdef int32_t length
        while available - position >= 4:
            length = load_i32(data + position)
            if length < 0:
                raise CodecError(f"negative frame length {length}")
            if self._limit_is_int:
                if <long long>length + 4 > self._limit:
                    raise FrameTooLargeError(
                        f"frame length {length} + 4 exceeds the limit of {self._max_frame_length} bytes"
                    )
            elif length + 4 > self._max_frame_length:
                raise FrameTooLargeError(
                    f"frame length {length} + 4 exceeds the limit of {self._max_frame_length} bytes"
                )
            end = position + 4 + length
            if end > available:
                break
            commands.append(_decode_frame(data + position + 4, length))
            position = end
        consumed[0] = position
        return commands
