# Included by _codec.pyx: The JSON header: fastjson-shaped encoder and the strict fast-path decoder.
# Shares the module namespace of _codec; see _codec.pyx for the imports.

# --- JSON header -------------------------------------------------------------------


def encode_json_header(cmd) -> bytes:
    """The header as fastjson writes it: sorted keys, nulls left out."""
    cdef Writer w
    _w_init(&w)
    try:
        _w_json_header(&w, cmd)
        return _w_bytes(&w)
    finally:
        _w_free(&w)


cdef int _w_json_header(Writer* w, object cmd) except -1:
    cdef const char* data
    cdef Py_ssize_t length
    cdef _SlotPlan plan = None
    # Keys in fastjson's alphabetical order; values are read in the twin's order.
    _w_text(w, b'{"code":')
    _w_decimal(w, _i32(_field(cmd, RC_CODE, "code")))
    header = _field(cmd, RC_CUSTOM_HEADER, "custom_header")
    ext_fields = _ext_fields_of(cmd)
    if header is not None:
        plan = _direct_plan(header, ext_fields)
        if plan is None:
            ext_fields = cmd.wire_ext_fields()
    if plan is not None:
        _w_text(w, b',"extFields":{')
        _w_header_entries(w, header, plan, True)
        _w_byte(w, b'}')
    elif ext_fields is not None:
        _w_text(w, b',"extFields":')
        _w_json_string_map(w, ext_fields)
    _w_text(w, b',"flag":')
    _w_decimal(w, _i32(_field(cmd, RC_FLAG, "flag")))
    _w_text(w, b',"language":"')
    name = _language_name(_field(cmd, RC_LANGUAGE, "language"))
    owner = _utf8_of(name, &data, &length)
    _w_put(w, data, length)
    _w_text(w, b'","opaque":')
    _w_decimal(w, _i32(_field(cmd, RC_OPAQUE, "opaque")))
    remark = _field(cmd, RC_REMARK, "remark")
    if remark is not None:
        _w_text(w, b',"remark":')
        _w_json_str(w, remark)
    _w_text(w, b',"serializeTypeCurrentRPC":"JSON","version":')
    _w_decimal(w, _i32(_field(cmd, RC_VERSION, "version")))
    _w_byte(w, b'}')
    return 0


cdef object _language_name(object language):
    cdef int overflow = 0
    cdef long long code
    if PyLong_CheckExact(language):
        code = PyLong_AsLongLongAndOverflow(language, &overflow)
        if not overflow and 0 <= code < len(LANGUAGE_NAMES):
            return LANGUAGE_NAMES[code]
        return "OTHER"
    if 0 <= language < len(LANGUAGE_NAMES):
        return LANGUAGE_NAMES[language]
    return "OTHER"


# Bytes that JSON strings escape: control characters, quote and backslash.
cdef uint8_t _JSON_ESCAPED[256]
for _byte in range(256):
    _JSON_ESCAPED[_byte] = _byte < 0x20 or _byte == 0x22 or _byte == 0x5C


cdef int _w_json_str(Writer* w, object text) except -1:
    """``json.dumps(text, ensure_ascii=False)`` in UTF-8 (surrogates passed through)."""
    cdef const char* data
    cdef Py_ssize_t length, i, start = 0
    cdef uint8_t c
    cdef char escape[6]
    if not PyUnicode_Check(text):
        raise CodecError(f"expected a string, got {type(text).__name__}")
    owner = _utf8_of(text, &data, &length)
    _w_reserve(w, length + 2)
    _w_byte(w, b'"')
    for i in range(length):
        c = <uint8_t>data[i]
        if not _JSON_ESCAPED[c]:
            continue
        _w_put(w, data + start, i - start)
        start = i + 1
        escape[0] = b'\\'
        if c == 0x22 or c == 0x5C:
            escape[1] = <char>c
        elif c == 0x08:
            escape[1] = b'b'
        elif c == 0x0C:
            escape[1] = b'f'
        elif c == 0x0A:
            escape[1] = b'n'
        elif c == 0x0D:
            escape[1] = b'r'
        elif c == 0x09:
            escape[1] = b't'
        else:
            escape[1] = b'u'
            escape[2] = b'0'
            escape[3] = b'0'
            escape[4] = _HEX_LOWER[c >> 4]
            escape[5] = _HEX_LOWER[c & 0xF]
            _w_put(w, escape, 6)
            continue
        _w_put(w, escape, 2)
    _w_put(w, data + start, length - start)
    _w_byte(w, b'"')
    return 0


cdef int _w_json_string_map(Writer* w, object fields) except -1:
    cdef Py_ssize_t position = 0
    cdef PyObject* key_ptr
    cdef PyObject* value_ptr
    cdef bint first = True
    _w_byte(w, b'{')
    if type(fields) is dict:
        while PyDict_Next(fields, &position, &key_ptr, &value_ptr):
            key = <object>key_ptr
            value = <object>value_ptr
            if key is None or value is None:
                continue
            if not first:
                _w_byte(w, b',')
            first = False
            _w_json_str(w, key)
            _w_byte(w, b':')
            _w_json_str(w, value)
    else:
        for key, value in fields.items():
            if key is None or value is None:
                continue
            if not first:
                _w_byte(w, b',')
            first = False
            _w_json_str(w, key)
            _w_byte(w, b':')
            _w_json_str(w, value)
    _w_byte(w, b'}')
    return 0


def decode_json_header(header) -> RemotingCommand:
    header = _bytes_of(header)
    return _decode_json_header(<const uint8_t*>PyBytes_AS_STRING(header), PyBytes_GET_SIZE(header), None)


cdef dict _language_codes = LANGUAGE_CODES


cdef class _HeaderFields:
    """The top-level fields of a JSON header; an absent field reads as null, as ``dict.get`` does.

    ``ext_strings_only`` is set by the fast path for an ``ext`` map whose values it saw all be strings."""
    cdef object code, version, opaque, flag, language, remark, ext
    cdef bint ext_strings_only


cdef object _decode_json_header(const uint8_t* data, Py_ssize_t length, object body):
    cdef _HeaderFields header = _HeaderFields.__new__(_HeaderFields)
    cdef JsonCursor c
    text = None
    if _is_ascii(data, length):
        # ASCII bytes are their own UTF-8 and a 1-byte text's data: the fast path reads them where they are, and
        # the str is made only for json.loads.
        c.data = data
        c.kind = PyUnicode_1BYTE_KIND
        c.length = length
        c.ascii = True
    else:
        try:
            text = PyUnicode_DecodeUTF8(<const char*>data, length, NULL)
        except UnicodeDecodeError as error:
            raise CodecError(f"JSON header is not valid JSON: {error}") from None
        c.data = PyUnicode_DATA(text)
        c.kind = PyUnicode_KIND(text)
        c.length = PyUnicode_GET_LENGTH(text)
        c.ascii = PyUnicode_IS_ASCII(text)
    c.position = 0
    if not _parse_json_header(&c, text, header):
        if text is None:
            text = PyUnicode_DecodeASCII(<const char*>data, length, NULL)
        try:
            parsed = _json_std_loads(text)
        except (ValueError, RecursionError) as error:
            raise CodecError(f"JSON header is not valid JSON: {error}") from None
        if not isinstance(parsed, dict):
            raise CodecError("JSON header is not an object")
        header.code = parsed.get("code")
        header.version = parsed.get("version")
        header.opaque = parsed.get("opaque")
        header.flag = parsed.get("flag")
        header.language = parsed.get("language")
        header.remark = parsed.get("remark")
        header.ext = parsed.get("extFields")
        header.ext_strings_only = False  # what the fast path saw before it gave up is not this map
    return _command_from_json(header, body)


cdef object _command_from_json(_HeaderFields header, object body):
    cdef Py_ssize_t position = 0
    cdef PyObject* key_ptr
    cdef PyObject* value_ptr
    cdef PyObject* found
    cdef bint all_strings = True
    code = _json_int(header.code, "code")
    version = _json_int(header.version, "version")
    opaque = _json_int(header.opaque, "opaque")
    flag = _json_int(header.flag, "flag")
    language = header.language
    if language is None:
        language = 0
    elif isinstance(language, str):
        found = PyDict_GetItemWithError(_language_codes, language)
        language = LANGUAGE_OTHER if found == NULL else <object>found
    elif isinstance(language, int) and not isinstance(language, bool):
        language = language & 0xFF
    else:
        raise CodecError(f"JSON header field 'language' has a bad value {language!r}")
    remark = header.remark
    if remark is not None and not isinstance(remark, str):
        raise CodecError("JSON header field 'remark' is not a string")
    ext = header.ext
    if ext is None:
        fields = None
    elif isinstance(ext, dict):
        # A freshly parsed map of plain strings already is the answer.
        if type(ext) is dict and not header.ext_strings_only:
            while PyDict_Next(ext, &position, &key_ptr, &value_ptr):
                if not PyUnicode_CheckExact(<object>value_ptr):
                    all_strings = False
                    break
        elif type(ext) is not dict:
            all_strings = False
        if all_strings:
            fields = ext
        else:
            fields = {}
            for key, value in ext.items():
                if value is None:
                    continue
                fields[key] = _json_scalar_text(key, value)
    else:
        raise CodecError("JSON header field 'extFields' is not an object")
    return _new_command(code, language, version, opaque, flag, remark, fields, body, SERIALIZE_JSON)


cdef object _json_int(object value, str name):
    cdef long long number
    cdef int overflow
    if value is None:
        return 0
    if PyLong_CheckExact(value):  # the traffic: decided in C
        number = PyLong_AsLongLongAndOverflow(value, &overflow)
        if not overflow and -0x80000000 <= number <= 0x7FFFFFFF:
            return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise CodecError(f"JSON header field {name!r} is not an integer: {value!r}")
    if not -0x80000000 <= value <= 0x7FFFFFFF:
        raise CodecError(f"JSON header field {name!r} is out of the int32 range: {value}")
    return value


cdef object _json_scalar_text(object key, object value):
    """An extFields value as Java's String map would hold it."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return int.__repr__(value)  # an IntEnum's digits, on every Python
    if isinstance(value, float):
        return float.__repr__(value)
    raise CodecError(f"extFields value of {key!r} is not a string: {value!r}")


# The header fast path: a strict subset of JSON (objects, strings without
# surrogate escapes, integers of up to 18 digits, true/false/null) parsed into
# exactly what json.loads returns. Anything else, including every syntax
# error, returns _BAIL and the header goes through json.loads, so the fast
# path never decides an error on its own.

cdef object _BAIL = object()

ctypedef struct JsonCursor:
    const void* data
    int kind
    Py_ssize_t position
    Py_ssize_t length
    bint strings_only  # every member value of the object parsed last is a str
    bint ascii  # every character is ASCII: a string's characters are its UTF-8 bytes


cdef inline bint _is_ascii(const uint8_t* data, Py_ssize_t length) noexcept:
    cdef uint64_t word
    cdef uint64_t seen = 0
    cdef uint64_t highs = 0x8080808080808080
    cdef Py_ssize_t i = 0
    while i + 8 <= length:
        memcpy(&word, data + i, 8)
        seen |= word
        i += 8
    while i < length:
        seen |= data[i]
        i += 1
    return (seen & highs) == 0


cdef bint _parse_json_header(JsonCursor* cursor, object text, _HeaderFields header) except -1:
    """Fill ``header`` from the top-level object at ``cursor``; False hands the text to json.loads.

    ``text`` is the str the cursor reads, or None when it reads ASCII bytes. Keys are matched in place (no key
    strings, no dict); a later duplicate overwrites an earlier one, as in the dict json.loads builds.
    """
    cdef JsonCursor c = cursor[0]
    cdef Py_ssize_t key_start, key_end
    cdef Py_UCS4 ch
    _jc_skip(&c)
    if c.position >= c.length or PyUnicode_READ(c.kind, c.data, c.position) != u'{':
        return False
    c.position += 1
    _jc_skip(&c)
    if c.position < c.length and PyUnicode_READ(c.kind, c.data, c.position) == u'}':
        c.position += 1
    else:
        while True:
            _jc_skip(&c)
            if c.position >= c.length or PyUnicode_READ(c.kind, c.data, c.position) != u'"':
                return False
            key_start = c.position + 1
            key_end = key_start
            while key_end < c.length:
                ch = PyUnicode_READ(c.kind, c.data, key_end)
                if ch == u'"':
                    break
                if ch == u'\\' or ch < 0x20:
                    return False  # escaped or invalid key: json.loads decides
                key_end += 1
            if key_end >= c.length:
                return False
            c.position = key_end + 1
            _jc_skip(&c)
            if c.position >= c.length or PyUnicode_READ(c.kind, c.data, c.position) != u':':
                return False
            c.position += 1
            value = _jc_value(&c, text, 1)
            if value is _BAIL:
                return False
            _store_header_field(header, &c, key_start, key_end - key_start, value)
            _jc_skip(&c)
            if c.position >= c.length:
                return False
            ch = PyUnicode_READ(c.kind, c.data, c.position)
            c.position += 1
            if ch == u'}':
                break
            if ch != u',':
                return False
    _jc_skip(&c)
    return c.position == c.length


cdef inline bint _key_is(JsonCursor* c, Py_ssize_t start, Py_ssize_t length, const char* name) noexcept:
    cdef Py_ssize_t i
    for i in range(length):
        if name[i] == 0 or PyUnicode_READ(c.kind, c.data, start + i) != <uint8_t>name[i]:
            return False
    return name[length] == 0


cdef void _store_header_field(_HeaderFields header, JsonCursor* c, Py_ssize_t start, Py_ssize_t length,
                              object value):
    if _key_is(c, start, length, "code"):
        header.code = value
    elif _key_is(c, start, length, "extFields"):
        header.ext = value
        # _jc_value returned the object it parsed last, or no object at all.
        header.ext_strings_only = type(value) is dict and c.strings_only
    elif _key_is(c, start, length, "flag"):
        header.flag = value
    elif _key_is(c, start, length, "language"):
        header.language = value
    elif _key_is(c, start, length, "opaque"):
        header.opaque = value
    elif _key_is(c, start, length, "remark"):
        header.remark = value
    elif _key_is(c, start, length, "version"):
        header.version = value


cdef inline void _jc_skip(JsonCursor* c) noexcept:
    cdef Py_UCS4 ch
    while c.position < c.length:
        ch = PyUnicode_READ(c.kind, c.data, c.position)
        if ch != u' ' and ch != u'\t' and ch != u'\n' and ch != u'\r':
            return
        c.position += 1


cdef object _jc_object(JsonCursor* c, object text, int depth):
    cdef Py_UCS4 ch
    cdef bint strings_only = True
    if depth > _FAST_JSON_MAX_DEPTH:
        return _BAIL
    c.position += 1
    result = rmq_new_dict(8 if depth == 1 else 16)
    _jc_skip(c)
    if c.position < c.length and PyUnicode_READ(c.kind, c.data, c.position) == u'}':
        c.position += 1
        c.strings_only = True
        return result
    while True:
        _jc_skip(c)
        if c.position >= c.length or PyUnicode_READ(c.kind, c.data, c.position) != u'"':
            return _BAIL
        key = _jc_string(c, text, True)
        if key is _BAIL:
            return _BAIL
        _jc_skip(c)
        if c.position >= c.length or PyUnicode_READ(c.kind, c.data, c.position) != u':':
            return _BAIL
        c.position += 1
        value = _jc_value(c, text, depth)
        if value is _BAIL:
            return _BAIL
        if not PyUnicode_CheckExact(value):
            strings_only = False
        PyDict_SetItem(result, key, value)
        _jc_skip(c)
        if c.position >= c.length:
            return _BAIL
        ch = PyUnicode_READ(c.kind, c.data, c.position)
        c.position += 1
        if ch == u'}':
            c.strings_only = strings_only  # after any object nested in it: this one is the last parsed
            return result
        if ch != u',':
            return _BAIL


cdef object _jc_value(JsonCursor* c, object text, int depth):
    cdef Py_UCS4 ch
    _jc_skip(c)
    if c.position >= c.length:
        return _BAIL
    ch = PyUnicode_READ(c.kind, c.data, c.position)
    if ch == u'"':
        return _jc_string(c, text)
    if ch == u'{':
        return _jc_object(c, text, depth + 1)
    if ch == u'-' or u'0' <= ch <= u'9':
        return _jc_integer(c)
    if _jc_word(c, "true"):
        return True
    if _jc_word(c, "false"):
        return False
    if _jc_word(c, "null"):
        return None
    return _BAIL


cdef bint _jc_word(JsonCursor* c, str word) noexcept:
    cdef Py_ssize_t n = len(word)
    cdef Py_ssize_t i
    if c.length - c.position < n:
        return False
    for i in range(n):
        if PyUnicode_READ(c.kind, c.data, c.position + i) != <Py_UCS4>word[i]:
            return False
    c.position += n
    return True


cdef object _jc_integer(JsonCursor* c):
    cdef Py_ssize_t i = c.position
    cdef bint negative = False
    cdef long long value = 0
    cdef int digits = 0
    cdef Py_UCS4 ch
    if PyUnicode_READ(c.kind, c.data, i) == u'-':
        negative = True
        i += 1
    if i >= c.length:
        return _BAIL
    ch = PyUnicode_READ(c.kind, c.data, i)
    if ch == u'0':
        i += 1
    elif u'1' <= ch <= u'9':
        while i < c.length:
            ch = PyUnicode_READ(c.kind, c.data, i)
            if not u'0' <= ch <= u'9':
                break
            digits += 1
            if digits > 18:
                return _BAIL
            value = value * 10 + (<long>ch - 48)  # '0'
            i += 1
    else:
        return _BAIL
    if i < c.length:
        ch = PyUnicode_READ(c.kind, c.data, i)
        if ch == u'.' or ch == u'e' or ch == u'E' or u'0' <= ch <= u'9':
            return _BAIL
    c.position = i
    return -value if negative else value


cdef object _jc_string(JsonCursor* c, object text, bint key=False):
    """The string at the cursor (a map key when ``key``), or _BAIL."""
    cdef Py_ssize_t start = c.position + 1
    cdef Py_ssize_t i = start
    cdef bint escaped = False
    cdef Py_UCS4 ch
    cdef const uint8_t* narrow
    if c.kind == PyUnicode_1BYTE_KIND:  # the same scan without the per-character kind switch
        narrow = <const uint8_t*>c.data
        while True:
            while i < c.length and narrow[i] >= 0x20 and narrow[i] != 0x22 and narrow[i] != 0x5C:
                i += 1
            if i >= c.length or narrow[i] < 0x20:
                return _BAIL
            if narrow[i] == 0x22:
                break
            escaped = True
            i += 2
    else:
        while True:
            if i >= c.length:
                return _BAIL
            ch = PyUnicode_READ(c.kind, c.data, i)
            if ch == u'"':
                break
            if ch == u'\\':
                escaped = True
                i += 2
                continue
            if ch < 0x20:
                return _BAIL
            i += 1
    c.position = i + 1
    if escaped:
        if c.kind == PyUnicode_1BYTE_KIND:
            return _jc_unescape_narrow(c, start, i)
        return _jc_unescape(c, start, i)
    if c.ascii:
        if key:
            return _decode_key(<const uint8_t*>c.data + start, i - start)
        return _decode_text(<const uint8_t*>c.data + start, i - start)
    return PyUnicode_Substring(text, start, i)


cdef Py_ssize_t _jc_escape_at(JsonCursor* c, Py_ssize_t i, Py_ssize_t end, Py_UCS4* ch) noexcept:
    """The character of the escape whose backslash is at ``i`` (into ``ch``) and the position after it,
    or -1 for an escape the fast path leaves to json.loads (a bad one, or a surrogate, which it pairs)."""
    cdef Py_UCS4 escape = PyUnicode_READ(c.kind, c.data, i + 1)  # a backslash is never last (see _jc_string)
    cdef uint32_t code = 0
    cdef Py_UCS4 digit
    cdef int k
    if escape == u'"' or escape == u'\\' or escape == u'/':
        ch[0] = escape
    elif escape == u'b':
        ch[0] = 0x08
    elif escape == u'f':
        ch[0] = 0x0C
    elif escape == u'n':
        ch[0] = 0x0A
    elif escape == u'r':
        ch[0] = 0x0D
    elif escape == u't':
        ch[0] = 0x09
    elif escape == u'u':
        if end - (i + 2) < 4:
            return -1
        for k in range(4):
            digit = PyUnicode_READ(c.kind, c.data, i + 2 + k)
            if u'0' <= digit <= u'9':
                code = code * 16 + (<uint32_t>digit - 48)  # '0'
            elif u'a' <= digit <= u'f':
                code = code * 16 + (<uint32_t>digit - 87)  # 'a' - 10
            elif u'A' <= digit <= u'F':
                code = code * 16 + (<uint32_t>digit - 55)  # 'A' - 10
            else:
                return -1
        if 0xD800 <= code <= 0xDFFF:
            return -1
        ch[0] = code
        return i + 6
    else:
        return -1
    return i + 2


cdef object _jc_unescape(JsonCursor* c, Py_ssize_t start, Py_ssize_t end):
    """The string between ``start`` and ``end`` with its escapes resolved, or _BAIL.

    Two passes: the first finds the length and the widest character, so that the
    result is written once in its final kind (headers are ASCII with a few
    ``\\u0001``/``\\u0002`` property separators)."""
    cdef Py_ssize_t i = start
    cdef Py_ssize_t n = 0
    cdef Py_UCS4 ch
    cdef Py_UCS4 widest = 0
    cdef int kind
    cdef void* out
    while i < end:
        ch = PyUnicode_READ(c.kind, c.data, i)
        if ch == u'\\':
            i = _jc_escape_at(c, i, end, &ch)
            if i < 0:
                return _BAIL
        else:
            i += 1
        if ch > widest:
            widest = ch
        n += 1
    text = PyUnicode_New(n, widest)
    kind = PyUnicode_KIND(text)
    out = PyUnicode_DATA(text)
    i = start
    n = 0
    while i < end:
        ch = PyUnicode_READ(c.kind, c.data, i)
        if ch == u'\\':
            i = _jc_escape_at(c, i, end, &ch)
        else:
            i += 1
        PyUnicode_WRITE(kind, out, n, ch)
        n += 1
    return text


cdef object _jc_unescape_narrow(JsonCursor* c, Py_ssize_t start, Py_ssize_t end):
    """``_jc_unescape`` for a 1-byte text, in one pass: escapes only shorten it, so the characters go into a buffer
    of its length and the result is made from them once. An escape beyond U+00FF takes the general way."""
    cdef const uint8_t* data = <const uint8_t*>c.data
    cdef uint8_t inline_buffer[256]
    cdef uint8_t* out = inline_buffer
    cdef Py_ssize_t i = start
    cdef Py_ssize_t n = 0
    cdef Py_UCS4 ch
    if end - start > 256:
        out = <uint8_t*>PyMem_Malloc(end - start)
        if out == NULL:
            raise MemoryError()
    try:
        while i < end:
            if data[i] == 0x5C:  # backslash
                i = _jc_escape_at(c, i, end, &ch)
                if i < 0:
                    return _BAIL
                if ch > 0xFF:
                    return _jc_unescape(c, start, end)
                out[n] = <uint8_t>ch
            else:
                out[n] = data[i]
                i += 1
            n += 1
        return PyUnicode_FromKindAndData(PyUnicode_1BYTE_KIND, out, n)
    finally:
        if out != inline_buffer:
            PyMem_Free(out)
