# Included by _codec.pyx: The ROCKETMQ binary header.
# Shares the module namespace of _codec; see _codec.pyx for the imports.

# --- ROCKETMQ binary header -------------------------------------------------------


def encode_rocketmq_header(cmd) -> bytes:
    """The binary header of RocketMQSerializable: 21 fixed bytes, remark, ext map."""
    cdef Writer w
    _w_init(&w)
    try:
        _w_binary_header(&w, cmd)
        return _w_bytes(&w)
    finally:
        _w_free(&w)


cdef int _w_binary_header(Writer* w, object cmd) except -1:
    cdef Py_ssize_t fixed_at = w.length
    cdef Py_ssize_t ext_at
    cdef const char* data
    cdef Py_ssize_t length
    cdef Py_ssize_t position = 0
    cdef PyObject* key_ptr
    cdef PyObject* value_ptr
    cdef uint8_t* fixed
    cdef int language
    cdef int16_t code, version
    cdef int32_t opaque, flag
    cdef _SlotPlan plan
    # The fixed fields are filled in last: the twin checks them after the ext map.
    _w_reserve(w, 13)
    w.length += 13  # code, language, version, opaque, flag
    remark = _field(cmd, RC_REMARK, "remark")
    if remark:
        if PyUnicode_Check(remark):
            owner = _utf8_of(remark, &data, &length)
        else:
            owner = _bytes_of(remark.encode("utf-8", "surrogatepass"))
            data = PyBytes_AS_STRING(owner)
            length = PyBytes_GET_SIZE(owner)
        _w_u32(w, <uint32_t>length)
        _w_put(w, data, length)
    else:
        _w_u32(w, 0)
    ext_at = w.length
    _w_u32(w, 0)
    header = _field(cmd, RC_CUSTOM_HEADER, "custom_header")
    ext_fields = _ext_fields_of(cmd)
    if header is not None:
        plan = _direct_plan(header, ext_fields)
        if plan is None:
            ext_fields = cmd.wire_ext_fields()
        else:
            _w_header_entries(w, header, plan, False)
            ext_fields = None
    if ext_fields:
        if type(ext_fields) is dict:
            while PyDict_Next(ext_fields, &position, &key_ptr, &value_ptr):
                _w_ext_entry(w, <object>key_ptr, <object>value_ptr)
        else:
            for key, value in ext_fields.items():
                _w_ext_entry(w, key, value)
    store_u32(w.data + ext_at, <uint32_t>(w.length - ext_at - 4))
    language = _binary_language(_field(cmd, RC_LANGUAGE, "language"))
    code = _i16(_field(cmd, RC_CODE, "code"))
    version = _i16(_field(cmd, RC_VERSION, "version"))
    opaque = _i32(_field(cmd, RC_OPAQUE, "opaque"))
    flag = _i32(_field(cmd, RC_FLAG, "flag"))
    fixed = w.data + fixed_at
    store_u16(fixed, <uint16_t>code)
    fixed[2] = <uint8_t>language
    store_u16(fixed + 3, <uint16_t>version)
    store_u32(fixed + 5, <uint32_t>opaque)
    store_u32(fixed + 9, <uint32_t>flag)
    return 0


cdef int _w_ext_entry(Writer* w, object key, object value) except -1:
    if key is None or value is None:
        return 0
    if not PyUnicode_Check(key) or not PyUnicode_Check(value):
        raise CodecError(f"extFields entries must be strings, got {key!r}: {value!r}")
    _w_ext_key(w, key)
    _w_ext_value(w, value)
    return 0


cdef int _w_ext_value(Writer* w, object text) except -1:
    """A ROCKETMQ ext entry's value (a str): its UTF-8 length, then its bytes."""
    cdef const char* data
    cdef Py_ssize_t length
    owner = _utf8_of(text, &data, &length)
    _w_u32(w, <uint32_t>length)
    _w_put(w, data, length)
    return 0


cdef int _w_ext_key(Writer* w, object key) except -1:
    cdef const char* key_data
    cdef Py_ssize_t key_length
    key_owner = _utf8_of(key, &key_data, &key_length)
    if key_length > 0x7FFF:
        raise CodecError(f"extFields key of {key_length} bytes exceeds the int16 length")
    _w_u16(w, <uint16_t>key_length)
    _w_put(w, key_data, key_length)
    return 0


cdef int _binary_language(object language) except -1:
    if not 0 <= language <= 0xFF:
        raise CodecError(f"language code {language} does not fit a byte")
    if PyLong_Check(language):
        return <int>language
    # Whatever else compared in range is packed as the twin packs it.
    return _SIGNED_BYTE.pack(language - 256 if language > 127 else language)[0]


def decode_rocketmq_header(header) -> RemotingCommand:
    """Decode the binary header; lengths are bounded by the header, and empty strings read as absent."""
    header = _bytes_of(header)
    return _decode_binary_header(<const uint8_t*>PyBytes_AS_STRING(header), PyBytes_GET_SIZE(header), None)


cdef object _decode_binary_header(const uint8_t* data, Py_ssize_t length, object body):
    cdef ByteReader r
    cdef const uint8_t* p
    cdef int32_t remark_length, ext_length
    if length < _BINARY_HEADER_FIXED:
        raise CodecError(f"ROCKETMQ header of {length} bytes is shorter than its 21 fixed bytes")
    reader_init(&r, data, length)
    p = reader_take(&r, 17)
    code = load_i16(p)
    language = p[2]
    version = load_i16(p + 3)
    opaque = load_i32(p + 5)
    flag = load_i32(p + 9)
    remark_length = load_i32(p + 13)
    remark = None
    p = reader_take(&r, remark_length)
    if p == NULL:
        raise CodecError(f"remark length {remark_length} does not fit the header")
    if remark_length:
        remark = _decode_text(p, remark_length)
    p = reader_take(&r, 4)
    if p == NULL:
        raise CodecError("ROCKETMQ header ends before its extFields length")
    ext_length = load_i32(p)
    p = reader_take(&r, ext_length)
    if p == NULL:
        raise CodecError(f"extFields length {ext_length} does not fit the header")
    if ext_length <= 0:
        return _new_command(code, language, version, opaque, flag, remark, None, body, SERIALIZE_ROCKETMQ)
    # Checked now, so that a malformed block fails the frame as before; its dict is made only if someone asks.
    wire = _checked_wire_ext(PyBytes_FromStringAndSize(<const char*>p, ext_length))
    return _new_command(code, language, version, opaque, flag, remark, None, body, SERIALIZE_ROCKETMQ, wire)


# --- the ext block, kept as it came --------------------------------------------------------------------------------

cdef inline int _next_ext_entry(ByteReader* ext, const uint8_t** key_at, int16_t* key_length, const uint8_t** value,
                                int32_t* value_length) except -1:
    """Step past one ext block entry: ``key_at`` points at its int16 key length (the key's bytes follow it)."""
    cdef int failure = _step_ext_entry(ext, key_at, key_length, value, value_length)
    if failure:
        _bad_ext_entry(failure, key_length[0], value_length[0])
    return 0


cdef inline int _step_ext_entry(ByteReader* ext, const uint8_t** key_at, int16_t* key_length, const uint8_t** value,
                                int32_t* value_length) noexcept nogil:
    """_next_ext_entry's work without the raising (so that it inlines): 0, or the first part that does not fit."""
    cdef const uint8_t* p = reader_take(ext, 2)
    if p == NULL:
        return 1
    key_at[0] = p
    key_length[0] = load_i16(p)
    if reader_take(ext, key_length[0]) == NULL:
        return 2
    p = reader_take(ext, 4)
    if p == NULL:
        return 3
    value_length[0] = load_i32(p)
    value[0] = reader_take(ext, value_length[0])
    if value[0] == NULL:
        return 4
    return 0


cdef int _bad_ext_entry(int failure, int16_t key_length, int32_t value_length) except -1:
    if failure == 1:
        raise CodecError("extFields entry ends before its key length")
    if failure == 2:
        raise CodecError(f"extFields key length {key_length} does not fit the header")
    if failure == 3:
        raise CodecError("extFields entry ends before its value length")
    raise CodecError(f"extFields value length {value_length} does not fit the header")


cdef Py_ssize_t _check_ext_block(const uint8_t* data, Py_ssize_t length) except -1:
    """The number of entries of a well-formed ext block; CodecError for a malformed one."""
    cdef ByteReader ext
    cdef const uint8_t* key_at
    cdef const uint8_t* value
    cdef int16_t key_length
    cdef int32_t value_length
    cdef Py_ssize_t entries = 0
    reader_init(&ext, data, length)
    while reader_left(&ext) > 0:
        _next_ext_entry(&ext, &key_at, &key_length, &value, &value_length)
        entries += 1
    return entries


cdef dict _ext_block_fields(const uint8_t* data, Py_ssize_t length, Py_ssize_t entries):
    """The extFields dict of an ext block of ``entries`` entries, as Java's HashMap ends up: a later entry replaces an
    earlier one, and an empty value (Java reads it as null) removes the key."""
    cdef ByteReader ext
    cdef const uint8_t* key_at
    cdef const uint8_t* value
    cdef int16_t key_length
    cdef int32_t value_length
    # Sized for its entries, up to a bound: a block of many duplicates or empty values must not size a huge dict.
    cdef dict fields = rmq_new_dict(min(entries, <Py_ssize_t>_MAX_PRESIZED))
    reader_init(&ext, data, length)
    while reader_left(&ext) > 0:
        _next_ext_entry(&ext, &key_at, &key_length, &value, &value_length)
        if key_length and value_length:
            PyDict_SetItem(fields, _decode_key(key_at + 2, key_length), _decode_text(value, value_length))
        elif key_length:
            fields.pop(_decode_key(key_at + 2, key_length), None)
    return fields


cdef class WireExtFields:
    """The ext block of a decoded ROCKETMQ frame, as it came (checked entry by entry when the frame was decoded).

    A command holds one in place of its extFields dict until the dict is asked for; a header class's
    ``from_command`` reads its fields from these bytes instead."""
    cdef bytes data
    cdef Py_ssize_t entries  # counted by the check

    def fields(self) -> dict:
        """The extFields dict the block holds."""
        return _ext_block_fields(<const uint8_t*>PyBytes_AS_STRING(self.data), PyBytes_GET_SIZE(self.data),
                                 self.entries)

    def __reduce__(self):
        return (_wire_ext_from_bytes, (self.data,))


cdef WireExtFields _checked_wire_ext(bytes data):
    """A WireExtFields holding ``data``, once checked to be a well-formed ext block (CodecError if not)."""
    cdef WireExtFields wire = WireExtFields.__new__(WireExtFields)
    wire.entries = _check_ext_block(<const uint8_t*>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data))
    wire.data = data
    return wire


def _wire_ext_from_bytes(data):
    """``_checked_wire_ext`` for the unpickler."""
    return _checked_wire_ext(_bytes_of(data))
