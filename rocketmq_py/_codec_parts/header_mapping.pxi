# Included by _codec.pyx: header dataclasses to extFields and back.
# Shares the module namespace of _codec; see _codec.pyx for the imports.

# --- Header objects and extFields --------------------------------------------------------------------------

cdef extern from "Python.h":
    object PyUnicode_DecodeASCII(const char* data, Py_ssize_t size, const char* errors)
    int PyObject_GenericSetDict(object obj, object value, void* context) except -1
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
    cdef int kind
    cdef long long number
    cdef int overflow
    for entry in <tuple>plan[0]:
        value = values[entry[0]]
        if value is None:
            continue
        kind = entry[2]
        if kind == K_BOOL:
            PyDict_SetItem(fields, entry[1], "true" if value else "false")
        elif kind == K_STR and PyUnicode_CheckExact(value):
            PyDict_SetItem(fields, entry[1], value)
        elif PyLong_CheckExact(value):
            number = PyLong_AsLongLongAndOverflow(value, &overflow)
            PyDict_SetItem(fields, entry[1], str(value) if overflow else _decimal_text(number))
        else:
            PyDict_SetItem(fields, entry[1], str(value))
    return fields


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
    cdef dict values = PyDict_Copy(plan[1])
    cdef tuple entry
    cdef int kind
    cdef PyObject* found
    if fields is None:
        fields = _EMPTY_FIELDS
    cdef bint plain = type(fields) is dict
    get = None if plain else fields.get
    for entry in <tuple>plan[0]:
        if plain:
            found = PyDict_GetItemWithError(fields, entry[1])
            if found == NULL:
                text = None
            else:
                text = <object>found
        else:
            text = get(entry[1])
        if text is None:
            if entry[3]:
                plan[2](cls, entry[1])
            continue
        kind = entry[2]
        if kind == K_STR:
            PyDict_SetItem(values, entry[0], text)
        elif kind == K_INT:
            number = _short_ascii_int(text, entry[4])
            if number is None:
                number = plan[3](cls, entry[1], text, entry[4], entry[5])
            if number is not None:
                PyDict_SetItem(values, entry[0], number)
        elif kind == K_BOOL:
            PyDict_SetItem(values, entry[0], text.lower() == "true")
        else:
            try:
                PyDict_SetItem(values, entry[0], float(text))
            except ValueError:
                plan[4](cls, entry[1], text)
    header = rmq_new_instance(cls, _NO_ARGS)
    PyObject_GenericSetDict(header, values, NULL)
    return header
