# Included by _codec.pyx: Java integer conversions, the output buffer, the short-string cache and fast construction.
# Shares the module namespace of _codec; see _codec.pyx for the imports.

# --- Java integer conversions ------------------------------------------------
# The twin wraps with Python arithmetic; ints that fit a C long long take the
# C path, anything else (huge ints, bools, wrong types) the twin's expression,
# so results and exceptions stay the same.


cdef int16_t _i16(object value) except? -1:
    """Java's ``(short) value``."""
    cdef int overflow = 0
    cdef long long v
    if PyLong_Check(value):
        v = PyLong_AsLongLongAndOverflow(value, &overflow)
        if not overflow:
            return <int16_t><uint16_t>v
    return ((value + 0x8000) & 0xFFFF) - 0x8000


cdef int32_t _i32(object value) except? -1:
    """Java's ``(int) value``."""
    cdef int overflow = 0
    cdef long long v
    if PyLong_Check(value):
        v = PyLong_AsLongLongAndOverflow(value, &overflow)
        if not overflow:
            return <int32_t><uint32_t>v
    return ((value + 0x80000000) & 0xFFFFFFFF) - 0x80000000


cdef int64_t _i64(object value) except? -1:
    """Java's ``(long) value``."""
    cdef int overflow = 0
    cdef long long v
    if PyLong_Check(value):
        v = PyLong_AsLongLongAndOverflow(value, &overflow)
        if not overflow:
            return v
    return ((value + 0x8000000000000000) & 0xFFFFFFFFFFFFFFFF) - 0x8000000000000000


# --- output buffer -----------------------------------------------------------

cdef enum:
    _WRITER_INLINE = 2048  # bytes on the stack before the Writer moves to the heap


ctypedef struct Writer:
    uint8_t* data
    Py_ssize_t length
    Py_ssize_t capacity
    uint8_t* heap  # NULL while data is the inline storage
    uint8_t inline_storage[_WRITER_INLINE]


cdef inline void _w_init(Writer* w) noexcept:
    w.data = w.inline_storage
    w.length = 0
    w.capacity = _WRITER_INLINE
    w.heap = NULL


cdef inline void _w_free(Writer* w) noexcept:
    if w.heap != NULL:
        PyMem_Free(w.heap)
        w.heap = NULL


cdef int _w_grow(Writer* w, Py_ssize_t extra) except -1:
    cdef Py_ssize_t wanted = w.length + extra
    cdef Py_ssize_t capacity = w.capacity * 2
    cdef uint8_t* grown
    if extra < 0 or wanted < w.length:
        raise MemoryError("encoded output too large")
    if capacity < wanted:
        capacity = wanted
    if w.heap == NULL:
        grown = <uint8_t*>PyMem_Malloc(capacity)
        if grown != NULL:
            memcpy(grown, w.data, w.length)
    else:
        grown = <uint8_t*>PyMem_Realloc(w.heap, capacity)
    if grown == NULL:
        raise MemoryError()
    w.heap = grown
    w.data = grown
    w.capacity = capacity
    return 0


cdef inline int _w_reserve(Writer* w, Py_ssize_t extra) except -1:
    if w.capacity - w.length < extra:
        _w_grow(w, extra)
    return 0


cdef inline int _w_put(Writer* w, const void* data, Py_ssize_t length) except -1:
    _w_reserve(w, length)
    memcpy(w.data + w.length, data, length)
    w.length += length
    return 0


cdef inline int _w_text(Writer* w, const char* ascii) except -1:
    cdef Py_ssize_t n = 0
    while ascii[n]:
        n += 1
    return _w_put(w, ascii, n)


cdef inline int _w_byte(Writer* w, uint8_t value) except -1:
    _w_reserve(w, 1)
    w.data[w.length] = value
    w.length += 1
    return 0


cdef inline int _w_u16(Writer* w, uint16_t value) except -1:
    _w_reserve(w, 2)
    store_u16(w.data + w.length, value)
    w.length += 2
    return 0


cdef inline int _w_u32(Writer* w, uint32_t value) except -1:
    _w_reserve(w, 4)
    store_u32(w.data + w.length, value)
    w.length += 4
    return 0


cdef inline int _w_u64(Writer* w, uint64_t value) except -1:
    _w_reserve(w, 8)
    store_u64(w.data + w.length, value)
    w.length += 8
    return 0


cdef inline int _decimal_digits(char* digits, long long value) noexcept:
    """Write ``value`` in decimal at the end of the 24 bytes of ``digits``; return where the text starts."""
    cdef int i = 24
    cdef unsigned long long rest = (<unsigned long long>0 - <unsigned long long>value) if value < 0 else <unsigned long long>value
    while True:
        i -= 1
        digits[i] = <char>(48 + <int>(rest % 10))
        rest //= 10
        if rest == 0:
            break
    if value < 0:
        i -= 1
        digits[i] = b'-'
    return i


cdef int _w_decimal(Writer* w, long long value) except -1:
    cdef char digits[24]
    cdef int start = _decimal_digits(digits, value)
    return _w_put(w, digits + start, 24 - start)


cdef inline bytes _w_bytes(Writer* w):
    return PyBytes_FromStringAndSize(<char*>w.data, w.length)


cdef object _utf8_of(object text, const char** data, Py_ssize_t* length):
    """The UTF-8 bytes of a str (lone surrogates passed through, as the twin's
    ``encode("utf-8", "surrogatepass")``); returns the object owning them."""
    cdef object encoded
    if PyUnicode_IS_ASCII(text):
        data[0] = <const char*>PyUnicode_DATA(text)
        length[0] = PyUnicode_GET_LENGTH(text)
        return text
    encoded = PyUnicode_AsEncodedString(text, "utf-8", "surrogatepass")
    data[0] = PyBytes_AS_STRING(encoded)
    length[0] = PyBytes_GET_SIZE(encoded)
    return encoded


# --- short-string cache --------------------------------------------------------
# Decoded records and headers repeat the same short strings (property names,
# tags, topic, hosts, header values). A small direct-mapped cache of ASCII
# strings returns the same immutable str instead of allocating and hashing a
# new one; a hit is verified byte by byte, so it never changes a result.

cdef enum:
    _CACHE_SLOTS = 1024
    _CACHE_MAX_LENGTH = 48

cdef PyObject* _str_cache[_CACHE_SLOTS]


cdef inline bint _same_bytes(const uint8_t* cached, const uint8_t* data, Py_ssize_t length,
                             uint64_t head, uint64_t tail) noexcept:
    """``cached[:length] == data[:length]``, given the head and tail words of ``data``."""
    cdef uint64_t word
    cdef Py_ssize_t i
    if length < 8:
        for i in range(length):
            if cached[i] != data[i]:
                return False
        return True
    memcpy(&word, cached, 8)
    if word != head:
        return False
    memcpy(&word, cached + length - 8, 8)
    if word != tail:
        return False
    return length <= 16 or memcmp(cached + 8, data + 8, length - 16) == 0


cdef inline Py_ssize_t _text_slot(const uint8_t* data, Py_ssize_t length, uint64_t* head, uint64_t* tail,
                                  Py_ssize_t slots) noexcept:
    """The cache slot of ``data`` (1 to _CACHE_MAX_LENGTH bytes) among ``slots``, from the length and the first and
    last 8 bytes, which it leaves in ``head`` and ``tail`` for ``_same_bytes``: cheap, and a collision only costs a
    miss."""
    cdef uint64_t h = 0
    cdef uint64_t t = 0
    cdef Py_ssize_t i
    if length >= 8:
        memcpy(&h, data, 8)
        memcpy(&t, data + length - 8, 8)
    else:
        for i in range(length):  # in a register: a byte-wise copy to memory would stall the load
            h = (h << 8) | data[i]
    head[0] = h
    tail[0] = t
    return <Py_ssize_t>((((h * <uint64_t>0x9E3779B97F4A7C15) ^ (t * <uint64_t>0xC2B2AE3D27D4EB4F)
                         ^ <uint64_t>length) >> 40) & (slots - 1))


cdef inline bint _is_cached(PyObject* cached, const uint8_t* data, Py_ssize_t length, uint64_t head,
                            uint64_t tail) noexcept:
    return (cached != NULL and PyUnicode_GET_LENGTH(<object>cached) == length
            and _same_bytes(<const uint8_t*>PyUnicode_DATA(<object>cached), data, length, head, tail))


# The one-character ASCII strings (what decoding one byte gives), looked up without hashing.
cdef PyObject* _ascii_chars[0x80]
_ascii_char_objects = tuple(chr(code) for code in range(0x80))
for _code in range(0x80):
    _ascii_chars[_code] = <PyObject*>_ascii_char_objects[_code]


cdef object _decode_text(const uint8_t* data, Py_ssize_t length):
    """UTF-8 with replacement characters, as the twin's ``_utf8``."""
    cdef uint64_t head, tail
    cdef Py_ssize_t h
    cdef object text
    if length == 1 and data[0] < 0x80:
        return <object>_ascii_chars[data[0]]
    if length > _CACHE_MAX_LENGTH or length <= 0:
        return PyUnicode_DecodeUTF8(<const char*>data, length, "replace")
    h = _text_slot(data, length, &head, &tail, _CACHE_SLOTS)
    if _is_cached(_str_cache[h], data, length, head, tail):
        return <object>_str_cache[h]
    text = PyUnicode_DecodeUTF8(<const char*>data, length, "replace")
    if PyUnicode_IS_ASCII(text):
        Py_INCREF(text)
        Py_XDECREF(_str_cache[h])
        _str_cache[h] = <PyObject*>text
    return text


# Header extFields keys: the plans of the header dataclasses look each field up by its wire name, and a dict lookup
# with the very object it holds skips comparing the text. So a key that is some plan's wire name decodes to that
# plan's own str (registered in WIRE_NAMES when the plan is made). Keys have caches of their own, so that the values
# sharing the cache above cannot evict them: a table for one-character keys (the V2 send headers' keys are all one
# letter) and a hashed one for the others. Plans are made on first use, so a key cached before its plan existed is
# plain text: when WIRE_NAMES grows, both caches are emptied and learn the keys again.

cdef enum:
    _KEY_SLOTS = 256

cdef PyObject* _key_cache[_KEY_SLOTS]
cdef PyObject* _one_char_keys[0x80]
cdef dict _wire_names = WIRE_NAMES
cdef Py_ssize_t _wire_names_known = 0  # len(WIRE_NAMES) when the key caches were last emptied


cdef void _forget_keys() noexcept:
    cdef Py_ssize_t i
    for i in range(_KEY_SLOTS):
        Py_XDECREF(_key_cache[i])
        _key_cache[i] = NULL
    for i in range(0x80):
        Py_XDECREF(_one_char_keys[i])
        _one_char_keys[i] = NULL


cdef inline PyObject* _keep_key(PyObject** slot, object text) except NULL:
    """Put the plans' own object for ``text`` (or ``text`` itself) into the cache ``slot``, and return it."""
    cdef PyObject* wire_name = PyDict_GetItemWithError(_wire_names, text)
    cdef PyObject* kept = <PyObject*>text if wire_name == NULL else wire_name
    Py_INCREF(<object>kept)
    Py_XDECREF(slot[0])
    slot[0] = kept
    return kept


cdef object _decode_key(const uint8_t* data, Py_ssize_t length):
    """``_decode_text`` for an extFields key: equal text, and the plans' own object for a wire name."""
    global _wire_names_known
    cdef uint64_t head, tail
    cdef Py_ssize_t h
    if len(_wire_names) != _wire_names_known:
        _forget_keys()
        _wire_names_known = len(_wire_names)
    if length == 1 and data[0] < 0x80:
        if _one_char_keys[data[0]] == NULL:
            _keep_key(&_one_char_keys[data[0]], <object>_ascii_chars[data[0]])
        return <object>_one_char_keys[data[0]]
    if length > _CACHE_MAX_LENGTH or length <= 0:
        return PyUnicode_DecodeUTF8(<const char*>data, length, "replace")
    h = _text_slot(data, length, &head, &tail, _KEY_SLOTS)
    if _is_cached(_key_cache[h], data, length, head, tail):
        return <object>_key_cache[h]
    text = _decode_text(data, length)
    if not PyUnicode_IS_ASCII(text):
        return text  # as the shared cache: only ASCII is kept (the cached bytes are compared as the text's own)
    return <object>_keep_key(&_key_cache[h], text)


# --- fast construction of the shared plain classes ------------------------------

_COMMAND_SLOTS = (
    "code", "language", "version", "opaque", "flag", "remark", "_ext_fields", "body", "serialize_type",
    "custom_header", "_wire_ext",
)
cdef enum:
    RC_CODE, RC_LANGUAGE, RC_VERSION, RC_OPAQUE, RC_FLAG, RC_REMARK, RC_EXT_FIELDS, RC_BODY, RC_SERIALIZE_TYPE
    RC_CUSTOM_HEADER, RC_WIRE_EXT, RC_COUNT

_MESSAGE_FIELDS = (
    "topic", "body", "flag", "properties", "transaction_id", "queue_id", "store_size", "queue_offset",
    "sys_flag", "born_timestamp", "born_host", "store_timestamp", "store_host", "offset_msg_id",
    "commit_log_offset", "body_crc", "reconsume_times", "prepared_transaction_offset", "broker_name",
)
cdef enum:
    MX_TOPIC, MX_BODY, MX_FLAG, MX_PROPERTIES, MX_TRANSACTION_ID, MX_QUEUE_ID, MX_STORE_SIZE
    MX_QUEUE_OFFSET, MX_SYS_FLAG, MX_BORN_TIMESTAMP, MX_BORN_HOST, MX_STORE_TIMESTAMP, MX_STORE_HOST
    MX_OFFSET_MSG_ID, MX_COMMIT_LOG_OFFSET, MX_BODY_CRC, MX_RECONSUME_TIMES, MX_PREPARED_OFFSET
    MX_BROKER_NAME, MX_COUNT

cdef Py_ssize_t _command_slots[RC_COUNT]
cdef Py_ssize_t _message_slots[MX_COUNT]
cdef bint _command_fast = False
cdef bint _message_fast = False
_message_defaults = MessageExt()
cdef object _default_transaction_id = _message_defaults.transaction_id
cdef object _default_broker_name = _message_defaults.broker_name


cdef bint _bind_slots(object cls, tuple names, Py_ssize_t* offsets) except -1:
    """Fill ``offsets`` with the slot offsets of ``cls`` when its instances hold
    exactly those slots and nothing else (no __dict__, no slot that __init__
    would set and the decoder would not, no __setattr__ hook); False means:
    build instances with the constructor, as the twin does."""
    declared = set()
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        declared.update((slots,) if isinstance(slots, str) else slots)
    if cls.__dictoffset__ != 0 or declared != set(names) or cls.__setattr__ is not object.__setattr__:
        return False
    for index, name in enumerate(names):
        descriptor = getattr(cls, name)
        if not isinstance(descriptor, types.MemberDescriptorType):
            return False
        offsets[index] = rmq_slot_offset(descriptor)
        if offsets[index] < 0:
            return False
    return True


_command_fast = _bind_slots(RemotingCommand, _COMMAND_SLOTS, _command_slots)
_message_fast = _bind_slots(MessageExt, _MESSAGE_FIELDS, _message_slots)


cdef object _new_command(object code, object language, object version, object opaque, object flag,
                         object remark, object ext_fields, object body, object serialize_type,
                         object wire_ext=None):
    """A RemotingCommand with these fields; ``wire_ext`` (a WireExtFields) stands for ``ext_fields`` until read."""
    cdef object cmd
    if not _command_fast:
        cmd = RemotingCommand(code, language, version, opaque, flag, remark, ext_fields, body, serialize_type)
        if wire_ext is not None:
            cmd.ext_fields = wire_ext.fields()
        return cmd
    cmd = rmq_new_instance(RemotingCommand, _NO_ARGS)
    rmq_fill_slot(cmd, _command_slots[RC_CODE], code)
    rmq_fill_slot(cmd, _command_slots[RC_LANGUAGE], language)
    rmq_fill_slot(cmd, _command_slots[RC_VERSION], version)
    rmq_fill_slot(cmd, _command_slots[RC_OPAQUE], opaque)
    rmq_fill_slot(cmd, _command_slots[RC_FLAG], flag)
    rmq_fill_slot(cmd, _command_slots[RC_REMARK], remark)
    rmq_fill_slot(cmd, _command_slots[RC_EXT_FIELDS], ext_fields)
    rmq_fill_slot(cmd, _command_slots[RC_BODY], body)
    rmq_fill_slot(cmd, _command_slots[RC_SERIALIZE_TYPE], serialize_type)
    rmq_fill_slot(cmd, _command_slots[RC_CUSTOM_HEADER], None)
    rmq_fill_slot(cmd, _command_slots[RC_WIRE_EXT], wire_ext)
    return cmd


cdef object _ext_fields_of(object cmd):
    """``cmd.ext_fields``: read from its slot when an exact RemotingCommand holds no undecoded ext block."""
    cdef PyObject* value
    if _command_fast and type(cmd) is RemotingCommand:
        value = rmq_read_slot(cmd, _command_slots[RC_WIRE_EXT])
        if value == NULL or <object>value is None:
            value = rmq_read_slot(cmd, _command_slots[RC_EXT_FIELDS])
            if value != NULL:
                return <object>value
    return cmd.ext_fields


cdef inline object _field(object cmd, int index, str name):
    """``getattr(cmd, name)``, read straight from the slot of an exact RemotingCommand."""
    cdef PyObject* value
    if _command_fast and type(cmd) is RemotingCommand:
        value = rmq_read_slot(cmd, _command_slots[index])
        if value != NULL:
            return <object>value
    return getattr(cmd, name)


cdef inline object _bytes_of(object data):
    """``bytes(data)`` without a copy when it already is bytes (the twin's first step)."""
    if PyBytes_CheckExact(data):
        return data
    return bytes(data)
