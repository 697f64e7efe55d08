# Included by _codec.pyx: header dataclasses to extFields and back.
# Shares the module namespace of _codec; see _codec.pyx for the imports.

# --- Header objects and extFields --------------------------------------------------------------------------

cdef extern from "Python.h":
    object PyUnicode_DecodeASCII(const char* data, Py_ssize_t size, const char* errors)
    int PyObject_GenericSetDict(object obj, object value, void* context) except -1
    object PyObject_GenericGetDict(object obj, void* context)
    PyObject* PyDict_GetItemWithError(object mapping, object key) except? NULL
    object PyDict_Copy(object mapping)
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
    cdef dict values = header.__dict__
    cdef dict fields = {}
    cdef tuple entry
    cdef long long number
    for entry in <tuple>plan[0]:
        value = values[entry[0]]
        if value is None:
            continue
        text = _field_text(value, entry[2], &number)
        PyDict_SetItem(fields, entry[1], _decimal_text(number) if text is None else text)
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
    return str(value)


cdef object _direct_plan(object header, object ext_fields):
    """The plan of the custom ``header`` when the encoder can write its fields straight into the frame, else None:
    with extra ``ext_fields`` to merge, or for a class without a plan yet, the encoder writes
    ``cmd.wire_ext_fields()`` as the twin always does."""
    cdef PyObject* found
    if ext_fields:
        return None
    found = PyDict_GetItemWithError(_header_plans, type(header))
    if found == NULL:
        return None
    return <object>found


cdef int _w_header_entries(Writer* w, object header, object plan, bint json) except -1:
    """The extFields entries ``header_to_fields(header, plan)`` would give, written in order as the JSON map's
    members or the ROCKETMQ ext block's entries."""
    # header.__dict__ without looking the descriptor up: the class has a plan, so it is a plain header dataclass.
    cdef dict values = PyObject_GenericGetDict(header, NULL)
    cdef tuple entry
    cdef long long number
    cdef char digits[24]
    cdef int start
    cdef bint first = True
    cdef Py_ssize_t position = 0
    cdef PyObject* key_ptr
    cdef PyObject* value_ptr
    for entry in <tuple>plan[0]:
        # __init__ and header_from_fields fill the instance dict in declaration order, so the next item
        # usually is this field (its interned name): a lookup only when it is not.
        if PyDict_Next(values, &position, &key_ptr, &value_ptr) and <object>key_ptr is entry[0]:
            value = <object>value_ptr
        else:
            value = values[entry[0]]
        if value is None:
            continue
        name = entry[1]
        text = _field_text(value, entry[2], &number)
        if json:
            if not first:
                _w_byte(w, b',')
            first = False
            _w_json_str(w, name)
            _w_byte(w, b':')
            if text is None:
                start = _decimal_digits(digits, number)
                _w_byte(w, b'"')
                _w_put(w, digits + start, 24 - start)
                _w_byte(w, b'"')
            else:
                _w_json_str(w, text)
        elif text is None:
            start = _decimal_digits(digits, number)
            _w_ext_key(w, name)
            _w_u32(w, <uint32_t>(24 - start))
            _w_put(w, digits + start, 24 - start)
        else:
            _w_ext_entry(w, name, text)
    return 0


cdef object _short_ascii_int(object text, int bits):
    """The value of plain ASCII digits short enough to always fit, else ``None`` (the slow path decides)."""
    cdef Py_ssize_t length, i
    cdef const unsigned char* data
    cdef long long value = 0
    if not PyUnicode_CheckExact(text) or not PyUnicode_IS_ASCII(text):
        return None
    length = PyUnicode_GET_LENGTH(text)
    if length == 0 or length > (9 if bits == 32 else 18):
        return None
    data = <const unsigned char*>PyUnicode_DATA(text)
    for i in range(length):
        if data[i] < 48 or data[i] > 57:
            return None
        value = value * 10 + (data[i] - 48)
    return PyLong_FromLongLong(value)


def header_from_fields(cls, fields, plan):
    """The header dataclass ``cls`` read from extFields as Java reads them (see ``common.headers.base``).

    The instance is made without calling ``__init__`` (header dataclasses have no ``__post_init__``):
    every field gets its value or its default.
    """
    return _header_from_fields(cls, fields, plan)


def header_fields(header) -> dict:
    """``header_to_fields`` with the plan of the header's class: ``CommandHeader.to_ext_fields`` itself."""
    return header_to_fields(header, _plan_of(type(header)))


def read_header(cls, fields):
    """``header_from_fields`` with the plan of ``cls``: ``CommandHeader.from_ext_fields`` itself."""
    return _header_from_fields(cls, fields, _plan_of(cls))


cdef object _plan_of(object cls):
    cdef PyObject* found = PyDict_GetItemWithError(_header_plans, cls)
    if found != NULL:
        return <object>found
    return cls._plan()


cdef inline bint _is_ascii_true(object text) noexcept:
    """``text.lower() == "true"`` for an exact ASCII str (the only kind whose answer is decided here)."""
    cdef const char* data
    if PyUnicode_GET_LENGTH(text) != 4:
        return False
    data = <const char*>PyUnicode_DATA(text)
    return ((data[0] | 0x20) == b't' and (data[1] | 0x20) == b'r' and (data[2] | 0x20) == b'u'
            and (data[3] | 0x20) == b'e')


cdef class _ReadPlan:
    """A HeaderPlan's entries laid out in C arrays for ``_header_from_fields``, made once per header class.

    The arrays borrow the entries' objects; ``plan`` keeps them alive."""
    cdef object plan
    cdef Py_ssize_t count
    cdef PyObject** attributes
    cdef PyObject** names
    cdef PyObject** bits_objects
    cdef PyObject** strict_objects
    cdef int* kinds
    cdef int* bits
    cdef char* required
    cdef dict defaults
    cdef object missing, slow_int, bad_float

    def __dealloc__(self):
        PyMem_Free(self.attributes)
        PyMem_Free(self.kinds)
        PyMem_Free(self.required)


cdef dict _read_plans = {}


cdef _ReadPlan _read_plan_of(object cls, object plan):
    cdef PyObject* found = PyDict_GetItemWithError(_read_plans, cls)
    cdef _ReadPlan laid_out
    cdef tuple entries, entry
    cdef Py_ssize_t i, count
    if found != NULL and (<_ReadPlan>found).plan is plan:
        return <_ReadPlan>found
    entries = <tuple>plan[0]
    count = len(entries)
    laid_out = _ReadPlan.__new__(_ReadPlan)
    laid_out.plan = plan
    laid_out.count = count
    laid_out.attributes = <PyObject**>PyMem_Malloc(4 * count * sizeof(PyObject*) + 1)
    laid_out.kinds = <int*>PyMem_Malloc(2 * count * sizeof(int) + 1)
    laid_out.required = <char*>PyMem_Malloc(count + 1)
    if laid_out.attributes == NULL or laid_out.kinds == NULL or laid_out.required == NULL:
        raise MemoryError()
    laid_out.names = laid_out.attributes + count
    laid_out.bits_objects = laid_out.attributes + 2 * count
    laid_out.strict_objects = laid_out.attributes + 3 * count
    laid_out.bits = laid_out.kinds + count
    for i in range(count):
        entry = <tuple>entries[i]
        laid_out.attributes[i] = <PyObject*>entry[0]
        laid_out.names[i] = <PyObject*>entry[1]
        laid_out.kinds[i] = entry[2]
        laid_out.required[i] = 1 if entry[3] else 0
        laid_out.bits[i] = entry[4]
        laid_out.bits_objects[i] = <PyObject*>entry[4]
        laid_out.strict_objects[i] = <PyObject*>entry[5]
    laid_out.defaults = plan[1]
    laid_out.missing = plan[2]
    laid_out.slow_int = plan[3]
    laid_out.bad_float = plan[4]
    _read_plans[cls] = laid_out
    return laid_out


cdef object _header_from_fields(object cls, object fields, object plan):
    cdef _ReadPlan laid_out = _read_plan_of(cls, plan)
    cdef dict values = PyDict_Copy(laid_out.defaults)
    cdef Py_ssize_t i
    cdef int kind
    cdef PyObject* found
    cdef PyObject* key_ptr
    cdef Py_ssize_t position = 0
    cdef Py_ssize_t next_position
    if fields is None:
        fields = _EMPTY_FIELDS
    cdef bint plain = type(fields) is dict
    get = None if plain else fields.get
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
            continue
        kind = laid_out.kinds[i]
        attribute = <object>laid_out.attributes[i]
        if kind == K_STR:
            PyDict_SetItem(values, attribute, text)
        elif kind == K_INT:
            number = _short_ascii_int(text, laid_out.bits[i])
            if number is None:
                number = laid_out.slow_int(cls, name, text, <object>laid_out.bits_objects[i],
                                           <object>laid_out.strict_objects[i])
            if number is not None:
                PyDict_SetItem(values, attribute, number)
        elif kind == K_BOOL:
            if PyUnicode_CheckExact(text) and PyUnicode_IS_ASCII(text):
                PyDict_SetItem(values, attribute, _is_ascii_true(text))
            else:
                PyDict_SetItem(values, attribute, text.lower() == "true")
        else:
            try:
                PyDict_SetItem(values, attribute, float(text))
            except ValueError:
                laid_out.bad_float(cls, name, text)
    header = rmq_new_bare_instance(cls, _NO_ARGS)
    PyObject_GenericSetDict(header, values, NULL)
    return header
