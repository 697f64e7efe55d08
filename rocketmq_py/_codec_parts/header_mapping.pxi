# Included by _codec.pyx: header dataclasses to extFields and back.
# Shares the module namespace of _codec; see _codec.pyx for the imports.

# --- Header objects and extFields --------------------------------------------------------------------------

cdef extern from "Python.h":
    object PyUnicode_DecodeASCII(const char* data, Py_ssize_t size, const char* errors)
    PyObject* PyDict_GetItemWithError(object mapping, object key) except? NULL
    object PyLong_FromLongLong(long long value)

# The kinds of _codec_types, as C constants (checked against them at import).
cdef enum:
    K_STR = 0
    K_INT = 1
    K_BOOL = 2
    K_FLOAT = 3

assert (HEADER_STR, HEADER_INT, HEADER_BOOL, HEADER_FLOAT) == (K_STR, K_INT, K_BOOL, K_FLOAT)

cdef object _EMPTY_FIELDS = {}
cdef dict _header_plans = HEADER_PLANS


cdef inline object _decimal_text(long long value):
    """``str(value)`` for a C integer, without going through int.__str__."""
    cdef char digits[24]
    cdef int start = _decimal_digits(digits, value)
    return PyUnicode_DecodeASCII(digits + start, 24 - start, NULL)


def header_to_fields(header, plan) -> dict:
    """extFields of a header dataclass, written as Java's ``toString()`` writes them; ``None`` fields are left out."""
    cdef _SlotPlan laid_out = _laid_out(type(header), plan)
    cdef dict fields = {}
    cdef Py_ssize_t i
    cdef long long number
    for i in range(laid_out.count):
        value = _slot_value(header, laid_out, i)
        if value is None:
            continue
        text = _field_text(value, laid_out.kinds[i], &number)
        PyDict_SetItem(fields, <object>laid_out.names[i], _decimal_text(number) if text is None else text)
    return fields


cdef object _field_text(object value, int kind, long long* number):
    """The extFields text of a field value (not None), or None with ``number`` set for an int that fits a C long long
    (callers write its digits without a str in between)."""
    cdef int overflow
    if kind == K_BOOL:
        return "true" if value else "false"
    if kind == K_STR and PyUnicode_CheckExact(value):
        return value
    if PyLong_CheckExact(value):
        number[0] = PyLong_AsLongLongAndOverflow(value, &overflow)
        if not overflow:
            return None
    if isinstance(value, int) and not isinstance(value, bool):
        return int.__repr__(value)  # an IntEnum's digits: its str() is its name before Python 3.11
    return str(value)


cdef _SlotPlan _direct_plan(object header, object ext_fields):
    """The laid-out plan of the custom ``header`` when the encoder can write its fields straight into the frame, else
    None: with extra ``ext_fields`` to merge, or for a class without a plan yet, the encoder writes
    ``cmd.wire_ext_fields()`` as the twin always does."""
    cdef PyObject* found
    if ext_fields:
        return None
    cls = type(header)
    found = PyDict_GetItemWithError(_header_plans, cls)
    if found == NULL:
        return None
    return _laid_out(cls, <object>found)


cdef int _w_header_entries(Writer* w, object header, _SlotPlan laid_out, bint json) except -1:
    """The extFields entries ``header_to_fields`` would give, written in order as the JSON map's members or the
    ROCKETMQ ext block's entries."""
    cdef Py_ssize_t i
    cdef long long number
    cdef char digits[24]
    cdef int start
    cdef bint first = True
    cdef PyObject* key
    for i in range(laid_out.count):
        value = _slot_value(header, laid_out, i)
        if value is None:
            continue
        text = _field_text(value, laid_out.kinds[i], &number)
        if json:
            if not first:
                _w_byte(w, b',')
            first = False
            key = laid_out.json_keys[i]
            _w_put(w, PyBytes_AS_STRING(<object>key), PyBytes_GET_SIZE(<object>key))
            if text is None:
                start = _decimal_digits(digits, number)
                _w_byte(w, b'"')
                _w_put(w, digits + start, 24 - start)
                _w_byte(w, b'"')
            else:
                _w_json_str(w, text)
            continue
        key = laid_out.rocketmq_keys[i]
        if key == NULL:  # too long for the int16 length: _w_ext_key raises as for any other key
            _w_ext_key(w, <object>laid_out.names[i])
        else:
            _w_put(w, PyBytes_AS_STRING(<object>key), PyBytes_GET_SIZE(<object>key))
        if text is None:
            start = _decimal_digits(digits, number)
            _w_u32(w, <uint32_t>(24 - start))
            _w_put(w, digits + start, 24 - start)
        else:
            _w_ext_value(w, text)
    return 0


cdef bytes _key_prefix(object name, bint json):
    """What the header writer puts before a field's value: the ROCKETMQ key (int16 length and UTF-8), or the JSON
    member name and colon; None for a ROCKETMQ key too long for its length."""
    cdef Writer w
    cdef const char* data
    cdef Py_ssize_t length
    if not json:
        owner = _utf8_of(name, &data, &length)
        if length > 0x7FFF:
            return None
    _w_init(&w)
    try:
        if json:
            _w_json_str(&w, name)
            _w_byte(&w, b':')
        else:
            _w_ext_key(&w, name)
        return _w_bytes(&w)
    finally:
        _w_free(&w)


cdef inline bint _plain_digits(const uint8_t* data, Py_ssize_t length, int bits) noexcept:
    """ASCII digits, few enough that the value always fits the field: read here, not by Java's parser."""
    cdef Py_ssize_t i
    if length == 0 or length > (9 if bits == 32 else 18):
        return False
    for i in range(length):
        if data[i] < 48 or data[i] > 57:
            return False
    return True


cdef inline object _digits_value(const uint8_t* data, Py_ssize_t length):
    cdef Py_ssize_t i
    cdef long long value = 0
    for i in range(length):
        value = value * 10 + (data[i] - 48)
    return PyLong_FromLongLong(value)


cdef object _short_ascii_int(object text, int bits):
    """The value of plain ASCII digits short enough to always fit, else ``None`` (the slow path decides)."""
    cdef const uint8_t* data
    if not PyUnicode_CheckExact(text) or not PyUnicode_IS_ASCII(text):
        return None
    data = <const uint8_t*>PyUnicode_DATA(text)
    if not _plain_digits(data, PyUnicode_GET_LENGTH(text), bits):
        return None
    return _digits_value(data, PyUnicode_GET_LENGTH(text))


def header_from_fields(cls, fields, plan):
    """The header dataclass ``cls`` read from extFields as Java reads them (see ``common.headers.base``).

    The instance is made without calling ``__init__`` (header dataclasses have no ``__post_init__``):
    every field's slot gets its value or its default.
    """
    return _header_from_fields(cls, fields, plan)


def header_fields(header) -> dict:
    """``header_to_fields`` with the plan of the header's class: ``CommandHeader.to_ext_fields`` itself."""
    return header_to_fields(header, _plan_of(type(header)))


def read_header(cls, fields):
    """``header_from_fields`` with the plan of ``cls``: ``CommandHeader.from_ext_fields`` itself."""
    return _header_from_fields(cls, fields, _plan_of(cls))


def read_command_header(cls, cmd):
    """``read_header(cls, cmd.ext_fields)``: ``CommandHeader.from_command`` itself (Java's
    ``decodeCommandCustomHeader``). A ROCKETMQ ext block the command still holds as it came is read straight from its
    bytes, without making the extFields dict."""
    cdef PyObject* wire
    cdef _SlotPlan laid_out
    plan = _plan_of(cls)
    if _command_fast and type(cmd) is RemotingCommand:
        wire = rmq_read_slot(cmd, _command_slots[RC_WIRE_EXT])
        if wire != NULL and type(<object>wire) is WireExtFields:
            laid_out = _laid_out(cls, plan)
            if laid_out.wire_ready:
                return _header_from_wire(cls, <WireExtFields>wire, laid_out)
    return _header_from_fields(cls, _ext_fields_of(cmd), plan)


cdef object _plan_of(object cls):
    cdef PyObject* found = PyDict_GetItemWithError(_header_plans, cls)
    if found != NULL:
        return <object>found
    return cls._plan()


cdef inline bint _is_ascii_true(object text) noexcept:
    """``text.lower() == "true"`` for an exact ASCII str (the only kind whose answer is decided here)."""
    return _is_true_bytes(<const uint8_t*>PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text))


cdef inline bint _is_true_bytes(const uint8_t* data, Py_ssize_t length) noexcept:
    """``text.lower() == "true"`` for the ASCII text of these bytes."""
    return (length == 4 and (data[0] | 0x20) == b't' and (data[1] | 0x20) == b'r' and (data[2] | 0x20) == b'u'
            and (data[3] | 0x20) == b'e')


cdef class _SlotPlan:
    """A HeaderPlan laid out in C arrays for one header class, made once per class: the field names and kinds the
    mapping walks, and the offset of each field's slot in an instance.

    ``offsets`` is NULL for a class whose instances do not keep each field in a plain slot of their own (a
    ``__setattr__`` hook, a property): the mapping then goes through getattr and setattr, as the twin does. The arrays
    borrow the entries' and the defaults' objects; ``plan`` keeps them alive."""
    cdef object plan
    cdef Py_ssize_t count
    cdef PyObject** attributes
    cdef PyObject** names
    cdef PyObject** bits_objects
    cdef PyObject** strict_objects
    cdef PyObject** defaults
    cdef PyObject** rocketmq_keys  # _key_prefix of each wire name, or NULL where it is None
    cdef PyObject** json_keys
    cdef tuple key_prefixes  # owns what those two borrow
    cdef Py_ssize_t* offsets
    cdef int* kinds
    cdef int* bits
    cdef char* required
    cdef object missing, slow_int, bad_float
    # The class can be read from an ext block's bytes (_header_from_wire): plain slots, few enough fields, and every
    # wire name ASCII, so that a key's bytes equal the name's exactly when the decoded key would equal it.
    cdef bint wire_ready

    def __dealloc__(self):
        PyMem_Free(self.attributes)
        PyMem_Free(self.offsets)
        PyMem_Free(self.kinds)
        PyMem_Free(self.required)


cdef dict _laid_out_plans = {}


cdef _SlotPlan _laid_out(object cls, object plan):
    """The laid-out ``plan`` for instances of ``cls`` (cached per class while its plan stays the same)."""
    cdef PyObject* found = PyDict_GetItemWithError(_laid_out_plans, cls)
    cdef _SlotPlan laid_out
    cdef tuple entries, entry
    cdef Py_ssize_t i, count
    if found != NULL and (<_SlotPlan>found).plan is plan:
        return <_SlotPlan>found
    entries = <tuple>plan[0]
    count = len(entries)
    laid_out = _SlotPlan.__new__(_SlotPlan)
    laid_out.plan = plan
    laid_out.count = count
    laid_out.attributes = <PyObject**>PyMem_Malloc(7 * count * sizeof(PyObject*) + 1)
    laid_out.offsets = <Py_ssize_t*>PyMem_Malloc(count * sizeof(Py_ssize_t) + 1)
    laid_out.kinds = <int*>PyMem_Malloc(2 * count * sizeof(int) + 1)
    laid_out.required = <char*>PyMem_Malloc(count + 1)
    if (laid_out.attributes == NULL or laid_out.offsets == NULL or laid_out.kinds == NULL
            or laid_out.required == NULL):
        raise MemoryError()
    laid_out.names = laid_out.attributes + count
    laid_out.bits_objects = laid_out.attributes + 2 * count
    laid_out.strict_objects = laid_out.attributes + 3 * count
    laid_out.defaults = laid_out.attributes + 4 * count
    laid_out.rocketmq_keys = laid_out.attributes + 5 * count
    laid_out.json_keys = laid_out.attributes + 6 * count
    laid_out.key_prefixes = tuple([_key_prefix(entry[1], False) for entry in entries]
                                  + [_key_prefix(entry[1], True) for entry in entries])
    laid_out.bits = laid_out.kinds + count
    defaults = plan[1]
    plain = cls.__setattr__ is object.__setattr__ and cls.__getattribute__ is object.__getattribute__
    for i in range(count):
        entry = <tuple>entries[i]
        laid_out.attributes[i] = <PyObject*>entry[0]
        laid_out.names[i] = <PyObject*>entry[1]
        laid_out.kinds[i] = entry[2]
        laid_out.required[i] = 1 if entry[3] else 0
        laid_out.bits[i] = entry[4]
        laid_out.bits_objects[i] = <PyObject*>entry[4]
        laid_out.strict_objects[i] = <PyObject*>entry[5]
        laid_out.defaults[i] = <PyObject*>defaults[entry[0]]
        prefix = laid_out.key_prefixes[i]
        laid_out.rocketmq_keys[i] = NULL if prefix is None else <PyObject*>prefix
        laid_out.json_keys[i] = <PyObject*>laid_out.key_prefixes[count + i]
        descriptor = getattr(cls, entry[0], None)
        laid_out.offsets[i] = (rmq_slot_offset(descriptor)
                               if plain and isinstance(descriptor, types.MemberDescriptorType) else -1)
        if laid_out.offsets[i] < 0:
            plain = False
    if not plain:
        PyMem_Free(laid_out.offsets)
        laid_out.offsets = NULL
    laid_out.wire_ready = plain and count <= _WIRE_FIELDS_MAX and all(
        entry[1].isascii() and laid_out.key_prefixes[i] is not None for i, entry in enumerate(entries))
    laid_out.missing = plan[2]
    laid_out.slow_int = plan[3]
    laid_out.bad_float = plan[4]
    _laid_out_plans[cls] = laid_out
    return laid_out


cdef inline object _slot_value(object header, _SlotPlan laid_out, Py_ssize_t i):
    """Field ``i`` of ``header``, read from its slot; an unset slot raises getattr's own AttributeError."""
    cdef PyObject* value
    if laid_out.offsets != NULL:
        value = rmq_read_slot(header, laid_out.offsets[i])
        if value != NULL:
            return <object>value
    return getattr(header, <object>laid_out.attributes[i])


cdef object _header_from_fields(object cls, object fields, object plan):
    cdef _SlotPlan laid_out = _laid_out(cls, plan)
    cdef Py_ssize_t i
    cdef PyObject* found
    cdef PyObject* key_ptr
    cdef Py_ssize_t position = 0
    cdef Py_ssize_t next_position
    cdef bint fill_slots = laid_out.offsets != NULL
    # A class that sets its attributes its own way gets them after every field parsed, in order, as the twin sets them.
    cdef dict values = None if fill_slots else {}
    if fields is None:
        fields = _EMPTY_FIELDS
    cdef bint plain = type(fields) is dict
    get = None if plain else fields.get
    header = rmq_new_instance(cls, _NO_ARGS)
    for i in range(laid_out.count):
        name = <object>laid_out.names[i]
        if plain:
            # A decoded header usually lists its fields in the plan's order (ours and Java's encoders write them so),
            # with the decoders' keys being the plan's own names: walk the dict alongside the plan and look a field
            # up only when the next entry is not it (absent fields leave that entry for the next one).
            next_position = position
            if PyDict_Next(fields, &next_position, &key_ptr, &found) and key_ptr == laid_out.names[i]:
                position = next_position
            else:
                found = PyDict_GetItemWithError(fields, name)
            if found == NULL:
                text = None
            else:
                text = <object>found
        else:
            text = get(name)
        if text is None:
            if laid_out.required[i]:
                laid_out.missing(cls, name)
            value = <object>laid_out.defaults[i]
        else:
            value = _field_value(cls, laid_out, i, text)
        if fill_slots:
            rmq_fill_slot(header, laid_out.offsets[i], value)
        else:
            PyDict_SetItem(values, <object>laid_out.attributes[i], value)
    if not fill_slots:
        for attribute, value in values.items():
            setattr(header, attribute, value)
    return header


cdef object _field_value(object cls, _SlotPlan laid_out, Py_ssize_t i, object text):
    """Field ``i``'s value read from its extFields text (not None), as Java parses it; its default where an optional
    number does not parse."""
    cdef int kind = laid_out.kinds[i]
    if kind == K_STR:
        return text
    if kind == K_INT:
        number = _short_ascii_int(text, laid_out.bits[i])
        if number is None:
            number = laid_out.slow_int(cls, <object>laid_out.names[i], text, <object>laid_out.bits_objects[i],
                                       <object>laid_out.strict_objects[i])
        return <object>laid_out.defaults[i] if number is None else number
    if kind == K_BOOL:
        if PyUnicode_CheckExact(text) and PyUnicode_IS_ASCII(text):
            return _is_ascii_true(text)
        return text.lower() == "true"
    try:
        return float(text)
    except ValueError:
        laid_out.bad_float(cls, <object>laid_out.names[i], text)
    return <object>laid_out.defaults[i]


cdef enum:
    _WIRE_FIELDS_MAX = 64


cdef object _header_from_wire(object cls, WireExtFields wire, _SlotPlan laid_out):
    """``_header_from_fields`` over the dict ``wire`` holds, read from its bytes: each field's last entry counts, an
    empty value makes it absent, and keys of no field are skipped, as the dict would have them."""
    cdef const uint8_t* values[_WIRE_FIELDS_MAX]
    cdef int32_t lengths[_WIRE_FIELDS_MAX]
    cdef const uint8_t* data = <const uint8_t*>PyBytes_AS_STRING(wire.data)
    cdef ByteReader ext
    cdef const uint8_t* key_at
    cdef const uint8_t* value
    cdef int16_t key_length
    cdef int32_t value_length
    cdef Py_ssize_t i
    cdef Py_ssize_t count = laid_out.count
    cdef Py_ssize_t expected = 0  # encoders write the fields in the plan's order: try the next one first
    memset(values, 0, count * sizeof(const uint8_t*))
    reader_init(&ext, data, PyBytes_GET_SIZE(wire.data))
    while reader_left(&ext) > 0:
        _next_ext_entry(&ext, &key_at, &key_length, &value, &value_length)
        if key_length <= 0:
            continue
        i = _wire_field_index(laid_out, key_at, key_length, expected)
        if i < 0:
            continue
        values[i] = value if value_length > 0 else NULL
        lengths[i] = value_length
        expected = i + 1
    header = rmq_new_instance(cls, _NO_ARGS)
    for i in range(count):
        if values[i] == NULL:
            if laid_out.required[i]:
                laid_out.missing(cls, <object>laid_out.names[i])
            field = <object>laid_out.defaults[i]
        elif laid_out.kinds[i] == K_INT and _plain_digits(values[i], lengths[i], laid_out.bits[i]):
            field = _digits_value(values[i], lengths[i])
        elif laid_out.kinds[i] == K_BOOL and _is_ascii(values[i], lengths[i]):
            field = True if _is_true_bytes(values[i], lengths[i]) else False
        else:
            field = _field_value(cls, laid_out, i, _decode_text(values[i], lengths[i]))
        rmq_fill_slot(header, laid_out.offsets[i], field)
    return header


cdef inline Py_ssize_t _wire_field_index(_SlotPlan laid_out, const uint8_t* key_at, int16_t key_length,
                                         Py_ssize_t expected) noexcept:
    """The field whose ROCKETMQ key (int16 length and bytes) is the one at ``key_at``, or -1."""
    cdef Py_ssize_t i
    for i in range(expected, laid_out.count):
        if _is_wire_key(laid_out.rocketmq_keys[i], key_at, key_length):
            return i
    for i in range(min(expected, laid_out.count)):
        if _is_wire_key(laid_out.rocketmq_keys[i], key_at, key_length):
            return i
    return -1


cdef inline bint _is_wire_key(PyObject* prefix, const uint8_t* key_at, int16_t key_length) noexcept:
    cdef const uint8_t* expected = <const uint8_t*>PyBytes_AS_STRING(<object>prefix)
    # Keys are short (the V2 send headers' are one letter): the first key byte decides most, without a call.
    return (PyBytes_GET_SIZE(<object>prefix) == key_length + 2 and expected[2] == key_at[2]
            and (key_length == 1 or memcmp(expected + 3, key_at + 3, key_length - 1) == 0))
