# Included by _codec.pyx: Message properties, batch bodies and compression.
# Shares the module namespace of _codec; see _codec.pyx for the imports.

# --- message properties -------------------------------------------------------------


def properties_to_string(properties) -> str:
    """``name\\x01value`` pairs joined by ``\\x02``; entries with a None value are left out."""
    cdef Py_ssize_t position = 0
    cdef PyObject* name_ptr
    cdef PyObject* value_ptr
    cdef Py_ssize_t total = 0
    cdef Py_ssize_t at = 0
    cdef Py_ssize_t count = 0
    cdef Py_UCS4 max_char = 0x7F
    cdef Py_UCS4 char_max
    cdef int kind
    cdef void* out
    if not properties:
        return ""
    if type(properties) is not dict:
        return _properties_to_string_generic(properties)
    # Two walks over the dict (no Python code runs in between, so it cannot change): the size and widest character,
    # then the characters, straight into the result.
    while PyDict_Next(properties, &position, &name_ptr, &value_ptr):
        if <object>value_ptr is None:
            continue
        if not PyUnicode_CheckExact(<object>name_ptr) or not PyUnicode_CheckExact(<object>value_ptr):
            return _properties_to_string_generic(properties)
        total += PyUnicode_GET_LENGTH(<object>name_ptr) + PyUnicode_GET_LENGTH(<object>value_ptr)
        char_max = PyUnicode_MAX_CHAR_VALUE(<object>name_ptr)
        if char_max > max_char:
            max_char = char_max
        char_max = PyUnicode_MAX_CHAR_VALUE(<object>value_ptr)
        if char_max > max_char:
            max_char = char_max
        count += 1
    if count == 0:
        return ""
    result = PyUnicode_New(total + 2 * count - 1, max_char)  # a separator inside each pair and between pairs
    kind = PyUnicode_KIND(result)
    out = PyUnicode_DATA(result)
    position = 0
    while PyDict_Next(properties, &position, &name_ptr, &value_ptr):
        if <object>value_ptr is None:
            continue
        if at:
            PyUnicode_WRITE(kind, out, at, 0x02)
            at += 1
        at = _put_text(result, kind, out, at, <object>name_ptr)
        PyUnicode_WRITE(kind, out, at, 0x01)
        at += 1
        at = _put_text(result, kind, out, at, <object>value_ptr)
    return result


cdef inline Py_ssize_t _put_text(object result, int kind, void* out, Py_ssize_t at, object text) except -1:
    """Copy ``text`` into ``result`` (whose data is ``out``) at ``at``; return the position after it."""
    cdef Py_ssize_t length = PyUnicode_GET_LENGTH(text)
    if kind == PyUnicode_1BYTE_KIND:  # then every piece is 1-byte too: no wider character fits the result
        memcpy(<char*>out + at, PyUnicode_DATA(text), length)
    else:
        PyUnicode_CopyCharacters(result, at, text, 0, length)
    return at + length


def _properties_to_string_generic(properties):
    return PROPERTY_SEPARATOR.join(
        name + PROPERTY_NAME_VALUE_SEPARATOR + value
        for name, value in properties.items()
        if value is not None
    )


def string_to_properties(text) -> dict:
    """Parse a properties string; entries with an empty name or value are dropped, as Java does."""
    cdef Py_ssize_t length, start, stop, separator, i
    cdef int kind
    cdef const void* data
    cdef dict result
    if not text:
        return {}
    if not PyUnicode_Check(text):
        result = {}
        for segment in text.split(PROPERTY_SEPARATOR):
            found = segment.find(PROPERTY_NAME_VALUE_SEPARATOR)
            if 0 < found < len(segment) - 1:
                result[segment[:found]] = segment[found + 1:]
        return result
    if PyUnicode_IS_ASCII(text):
        return _properties_from_utf8(<const uint8_t*>PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text))
    result = {}
    kind = PyUnicode_KIND(text)
    data = PyUnicode_DATA(text)
    length = PyUnicode_GET_LENGTH(text)
    start = 0
    while True:
        stop = start
        separator = -1
        while stop < length and PyUnicode_READ(kind, data, stop) != 0x02:
            if separator < 0 and PyUnicode_READ(kind, data, stop) == 0x01:
                separator = stop
            stop += 1
        if separator > start and separator < stop - 1:
            result[PyUnicode_Substring(text, start, separator)] = PyUnicode_Substring(text, separator + 1, stop)
        if stop >= length:
            return result
        start = stop + 1


cdef enum:
    _MAX_PRESIZED = 64


# The records of one pull body mostly carry the same property names in the same order, and many of the same values
# (tags, flags, the cluster). A PropertyMemo keeps the previous record's properties: each name and value text by its
# position, so that one whose bytes are the same is the same str without hashing them again, and the dict itself, so
# that a record with the very same names starts from a copy of it (one C copy of its table) and sets only the values
# that differ, rather than inserting every entry.

cdef enum:
    _MEMO_SEGMENTS = 16  # properties beyond these are parsed without the memo


ctypedef struct PropertyMemo:
    const uint8_t* data[2 * _MEMO_SEGMENTS]  # where each name and value text's bytes are (in the body being decoded)
    Py_ssize_t length[2 * _MEMO_SEGMENTS]
    PyObject* text[2 * _MEMO_SEGMENTS]  # owned references, or NULL
    PyObject* fields  # the previous record's dict (owned), or NULL
    Py_ssize_t segments  # how many segments its properties had
    char inserted[_MEMO_SEGMENTS]  # which of them made an entry (a name and a value, both not empty)


cdef inline void _memo_init(PropertyMemo* memo) noexcept:
    memset(memo.text, 0, sizeof(memo.text))
    memo.fields = NULL


cdef inline void _memo_clear(PropertyMemo* memo) noexcept:
    cdef Py_ssize_t i
    for i in range(2 * _MEMO_SEGMENTS):
        Py_XDECREF(memo.text[i])
        memo.text[i] = NULL
    Py_XDECREF(memo.fields)
    memo.fields = NULL


cdef inline bint _memo_has(PropertyMemo* memo, Py_ssize_t index, const uint8_t* data, Py_ssize_t length) noexcept:
    return (memo.text[index] != NULL and memo.length[index] == length
            and memcmp(memo.data[index], data, length) == 0)


cdef inline object _memo_text(PropertyMemo* memo, Py_ssize_t index, const uint8_t* data, Py_ssize_t length):
    """``_decode_text(data, length)``: the memo's text at ``index`` when it was made from the same bytes."""
    if memo == NULL or index >= 2 * _MEMO_SEGMENTS:
        return _decode_text(data, length)
    if _memo_has(memo, index, data, length):
        return <object>memo.text[index]
    text = _decode_text(data, length)
    Py_INCREF(text)
    Py_XDECREF(memo.text[index])
    memo.text[index] = <PyObject*>text
    memo.data[index] = data
    memo.length[index] = length
    return text


cdef dict _properties_from_utf8(const uint8_t* data, Py_ssize_t length, PropertyMemo* memo=NULL):
    """Parse properties straight from their UTF-8 bytes.

    Same result as decoding (with replacement) and then splitting: the
    separators are ASCII bytes, which UTF-8 never uses inside a character
    and the decoder never swallows into a replacement character.
    """
    cdef Py_ssize_t stops[_MAX_PRESIZED]
    cdef Py_ssize_t names[_MAX_PRESIZED]  # each segment's name length, or -1 where it makes no entry
    cdef Py_ssize_t count = 0
    cdef Py_ssize_t entries = 0
    cdef Py_ssize_t start = 0
    cdef Py_ssize_t stop
    cdef dict result
    while count < _MAX_PRESIZED:  # the segments, to size the dict once
        names[count] = _segment(data, start, length, &stop)
        stops[count] = stop
        if names[count] >= 0:
            entries += 1
        count += 1
        if stop >= length:
            break
        start = stop + 1
    if memo != NULL and _same_names(memo, data, stops, names, count, entries):
        result = _copy_with_values(memo, data, stops, names, count)
    else:
        result = _insert_entries(memo, data, length, stops, names, count, entries)
    if memo != NULL and count <= _MEMO_SEGMENTS:
        Py_INCREF(result)
        Py_XDECREF(memo.fields)
        memo.fields = <PyObject*>result
        memo.segments = count
        for start in range(count):
            memo.inserted[start] = names[start] >= 0
    elif memo != NULL:
        Py_XDECREF(memo.fields)
        memo.fields = NULL
    return result


cdef inline Py_ssize_t _segment(const uint8_t* data, Py_ssize_t start, Py_ssize_t length, Py_ssize_t* stop) noexcept:
    """The segment at ``start``: where it ends (``stop``: the next separator or ``length``), and its name's length,
    or -1 where it makes no entry (no name/value separator, an empty name or an empty value)."""
    cdef const uint8_t* found = <const uint8_t*>memchr(data + start, 0x02, length - start)
    stop[0] = length if found == NULL else found - data
    found = <const uint8_t*>memchr(data + start, 0x01, stop[0] - start)
    if found != NULL and 0 < found - (data + start) < stop[0] - start - 1:
        return found - (data + start)
    return -1


cdef bint _same_names(PropertyMemo* memo, const uint8_t* data, Py_ssize_t* stops, Py_ssize_t* names,
                      Py_ssize_t count, Py_ssize_t entries) noexcept:
    """Whether these segments make entries with the same names, at the same places, as the memo's dict did, and
    with no name twice (its size is the number of entries), so that a copy of it only needs other values."""
    cdef Py_ssize_t j
    cdef Py_ssize_t start = 0
    if (memo.fields == NULL or memo.segments != count or PyDict_GET_SIZE(<object>memo.fields) != entries):
        return False
    for j in range(count):
        if (names[j] >= 0) != memo.inserted[j]:
            return False
        if names[j] >= 0 and not _memo_has(memo, 2 * j, data + start, names[j]):
            return False
        start = stops[j] + 1
    return True


cdef dict _copy_with_values(PropertyMemo* memo, const uint8_t* data, Py_ssize_t* stops, Py_ssize_t* names,
                            Py_ssize_t count):
    cdef dict result = PyDict_Copy(<object>memo.fields)
    cdef Py_ssize_t j
    cdef Py_ssize_t start = 0
    cdef Py_ssize_t value_at
    for j in range(count):
        if names[j] >= 0:
            value_at = start + names[j] + 1
            if not _memo_has(memo, 2 * j + 1, data + value_at, stops[j] - value_at):
                PyDict_SetItem(result, <object>memo.text[2 * j],
                               _memo_text(memo, 2 * j + 1, data + value_at, stops[j] - value_at))
        start = stops[j] + 1
    return result


cdef dict _insert_entries(PropertyMemo* memo, const uint8_t* data, Py_ssize_t length, Py_ssize_t* stops,
                          Py_ssize_t* names, Py_ssize_t count, Py_ssize_t entries):
    cdef dict result = rmq_new_dict(entries)
    cdef Py_ssize_t j = 0
    cdef Py_ssize_t start = 0
    cdef Py_ssize_t stop, name_length
    while True:
        if j < count:
            stop = stops[j]
            name_length = names[j]
        else:  # past the segments counted: find this one's ends here
            name_length = _segment(data, start, length, &stop)
        if name_length >= 0:
            PyDict_SetItem(result, _memo_text(memo, 2 * j, data + start, name_length),
                           _memo_text(memo, 2 * j + 1, data + start + name_length + 1, stop - start - name_length - 1))
        j += 1
        if stop >= length:
            return result
        start = stop + 1


cdef object _properties_bytes(object properties):
    text = properties if isinstance(properties, str) else properties_to_string(properties)
    data = text.encode("utf-8", "surrogatepass")
    if len(data) > 0x7FFF:
        raise CodecError(f"properties of {len(data)} bytes exceed the 32767 byte limit")
    return data


# --- batch bodies ---------------------------------------------------------------------


def encode_batch(messages) -> bytes:
    """The SEND_BATCH_MESSAGE body: one ``(flag, body, properties)`` item after another."""
    cdef Writer w
    cdef Py_ssize_t body_length, props_length
    _w_init(&w)
    try:
        for flag, body, properties in messages:
            body = _bytes_of(body)
            props = _properties_bytes(properties)
            body_length = PyBytes_GET_SIZE(body)
            props_length = PyBytes_GET_SIZE(props)
            _w_reserve(&w, 22 + body_length + props_length)
            _w_u32(&w, <uint32_t>(20 + body_length + 2 + props_length))
            _w_u32(&w, 0)  # magic: the broker ignores it
            _w_u32(&w, 0)  # body CRC: the broker computes it
            _w_u32(&w, <uint32_t>_i32(flag))
            _w_u32(&w, <uint32_t>body_length)
            _w_put(&w, PyBytes_AS_STRING(body), body_length)
            _w_u16(&w, <uint16_t>props_length)
            _w_put(&w, PyBytes_AS_STRING(props), props_length)
        return _w_bytes(&w)
    finally:
        _w_free(&w)


def decode_batch(data) -> list:
    cdef ByteReader r
    cdef const uint8_t* p
    cdef int32_t body_length
    cdef int16_t props_length
    cdef list items = []
    data = _bytes_of(data)
    reader_init(&r, <const uint8_t*>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data))
    while reader_left(&r) > 0:
        p = reader_take(&r, 20)
        if p == NULL:
            raise CodecError(f"batch item at {r.position} ends before its 20-byte head")
        flag = load_i32(p + 12)
        body_length = load_i32(p + 16)
        p = reader_take(&r, body_length)
        if p == NULL:
            raise CodecError(f"batch body length {body_length} at {r.position - 4} does not fit the data")
        body = PyBytes_FromStringAndSize(<const char*>p, body_length)
        p = reader_take(&r, 2)
        if p == NULL:
            raise CodecError("batch item ends before its properties length")
        props_length = load_i16(p)
        p = reader_take(&r, props_length)
        if p == NULL:
            raise CodecError(f"batch properties length {props_length} does not fit the data")
        items.append((flag, body, _properties_from_utf8(p, props_length)))
    return items


# --- compression --------------------------------------------------------------------------


def compression_type(sys_flag) -> int:
    """The compression type in sysFlag bits 8-10; 0 (old producers) means zlib."""
    kind = (sys_flag & _COMPRESSION_TYPE_MASK) >> _COMPRESSION_TYPE_SHIFT
    return COMPRESSION_ZLIB if kind in (0, COMPRESSION_ZLIB) else kind


def compress(body, kind=COMPRESSION_ZLIB, level=5) -> bytes:
    """Compress as Java's producer does: zlib stream, LZ4 frame or zstd frame."""
    if kind == COMPRESSION_ZLIB:
        return zlib.compress(body, level)
    if kind == COMPRESSION_LZ4:
        import lz4.frame

        return lz4.frame.compress(body, block_linked=False, store_size=False)
    if kind == COMPRESSION_ZSTD:
        import zstandard

        return zstandard.ZstdCompressor(level=level).compress(body)
    raise CodecError(f"unknown compression type {kind}: use 1 (LZ4), 2 (ZSTD) or 3 (ZLIB)")


def decompress(body, kind=COMPRESSION_ZLIB) -> bytes:
    """Decompress a whole body; a truncated stream or one that would exceed
    MAX_DECOMPRESSED_SIZE raises CodecError (Java's streams throw there too)."""
    try:
        if kind == COMPRESSION_ZLIB or kind == 0:
            inflater = zlib.decompressobj()
            result = inflater.decompress(body, MAX_DECOMPRESSED_SIZE)
            if inflater.unconsumed_tail:
                raise CodecError(f"decompressed body exceeds {MAX_DECOMPRESSED_SIZE} bytes")
            if not inflater.eof:
                raise CodecError("compressed body is truncated")
            return result
        if kind == COMPRESSION_LZ4:
            import lz4.frame

            inflater = lz4.frame.LZ4FrameDecompressor()
            result = inflater.decompress(body, max_length=MAX_DECOMPRESSED_SIZE)
            if not inflater.eof:
                if len(result) >= MAX_DECOMPRESSED_SIZE:
                    raise CodecError(f"decompressed body exceeds {MAX_DECOMPRESSED_SIZE} bytes")
                raise CodecError("compressed body is truncated")
            return result
        if kind == COMPRESSION_ZSTD:
            import zstandard

            # The one-shot call stops at max_output_size when the frame does not
            # declare its size, and refuses a truncated frame.
            if zstandard.frame_content_size(body) > MAX_DECOMPRESSED_SIZE:
                raise CodecError(f"decompressed body exceeds {MAX_DECOMPRESSED_SIZE} bytes")
            return zstandard.ZstdDecompressor().decompress(body, max_output_size=MAX_DECOMPRESSED_SIZE)
    except CodecError:
        raise
    except Exception as error:  # zlib.error, RuntimeError (lz4), ZstdError
        raise CodecError(f"body does not decompress as type {kind}: {error}") from None
    raise CodecError(f"unknown compression type {kind}")
