# Included by _codec.pyx: fastjson-compatible JSON: the lenient reader and the writer.
# Shares the module namespace of _codec; see _codec.pyx for the imports.

# --- fastjson-compatible JSON -----------------------------------------------------------------------


def json_loads(text):
    """Parse JSON as fastjson writes it.

    Standard JSON goes through json.loads. The fallback also takes what
    fastjson emits for non-string map keys: bare numbers (``{0:"a"}``, read as
    ``int``) and objects (``{{"queueId":0}:5}``, read as :class:`JsonObjectKey`),
    plus bare identifier keys.
    """
    if isinstance(text, (bytes, bytearray, memoryview)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as error:
            raise CodecError(f"JSON body is not UTF-8: {error}") from None
    try:
        return _json_std_loads(text)
    except RecursionError:
        raise CodecError("JSON nesting is too deep") from None
    except ValueError:
        pass
    return _LenientJsonParser(text).parse()


cdef class _LenientJsonParser:
    """Recursive descent over the text, with the twin's grammar and errors."""

    cdef object text
    cdef const void* data
    cdef int kind
    cdef Py_ssize_t position
    cdef Py_ssize_t length
    cdef int depth

    def __cinit__(self, str text):
        self.text = text
        self.data = PyUnicode_DATA(text)
        self.kind = PyUnicode_KIND(text)
        self.length = PyUnicode_GET_LENGTH(text)
        self.position = 0
        self.depth = 0

    cdef object fail(self, str what):
        return CodecError(f"invalid JSON at character {self.position}: {what}")

    cdef object parse(self):
        value = self.parse_value()
        self.skip()
        if self.position != self.length:
            raise self.fail("unexpected data after the value")
        return value

    cdef void skip(self) noexcept:
        cdef Py_UCS4 ch
        while self.position < self.length:
            ch = PyUnicode_READ(self.kind, self.data, self.position)
            if ch != u' ' and ch != u'\t' and ch != u'\r' and ch != u'\n':
                return
            self.position += 1

    cdef long peek(self) except -1:
        self.skip()
        if self.position >= self.length:
            raise self.fail("unexpected end")
        return PyUnicode_READ(self.kind, self.data, self.position)

    cdef object parse_value(self):
        cdef long ch = self.peek()
        if ch == u'{':
            return self.parse_object()
        if ch == u'[':
            return self.parse_array()
        if ch == u'"':
            return self.parse_string()
        return self.parse_literal(False)

    cdef int enter(self) except -1:
        self.depth += 1
        if self.depth > MAX_JSON_DEPTH:
            raise self.fail("nesting is too deep")
        return 0

    cdef object parse_object(self):
        cdef long ch
        self.enter()
        self.position += 1
        result = {}
        if self.peek() == u'}':
            self.position += 1
            self.depth -= 1
            return result
        while True:
            ch = self.peek()
            if ch == u'"':
                key = self.parse_string()
            elif ch == u'{':
                key = JsonObjectKey(self.parse_object())
            else:
                key = self.parse_literal(True)
            if self.peek() != u':':
                raise self.fail("expected ':'")
            self.position += 1
            result[key] = self.parse_value()
            ch = self.peek()
            self.position += 1
            if ch == u'}':
                self.depth -= 1
                return result
            if ch != u',':
                raise self.fail("expected ',' or '}'")

    cdef object parse_array(self):
        cdef long ch
        self.enter()
        self.position += 1
        result = []
        if self.peek() == u']':
            self.position += 1
            self.depth -= 1
            return result
        while True:
            result.append(self.parse_value())
            ch = self.peek()
            self.position += 1
            if ch == u']':
                self.depth -= 1
                return result
            if ch != u',':
                raise self.fail("expected ',' or ']'")

    cdef object parse_string(self):
        try:
            value, end = _json_scanstring(self.text, self.position + 1)
        except ValueError as error:
            raise self.fail(f"bad string: {error}") from None
        self.position = end
        return value

    cdef object parse_literal(self, bint as_key):
        cdef Py_ssize_t start = self.position
        cdef Py_ssize_t position = self.position
        cdef Py_UCS4 ch
        while position < self.length:
            ch = PyUnicode_READ(self.kind, self.data, position)
            if not (Py_UNICODE_ISALNUM(ch) or ch == u'+' or ch == u'-' or ch == u'.' or ch == u'_' or ch == u'$'):
                break
            position += 1
        word = PyUnicode_Substring(self.text, start, position)
        self.position = position
        if position == start:
            raise self.fail("expected a value")
        if word == "true":
            return True
        if word == "false":
            return False
        if word == "null":
            return None
        try:
            return _py_int(word)
        except ValueError:
            pass
        try:
            return _py_float(word)
        except ValueError:
            pass
        ch = PyUnicode_READ(self.kind, self.data, start)
        if as_key and (Py_UNICODE_ISALPHA(ch) or ch == u'_' or ch == u'$'):
            return word
        raise self.fail(f"unknown literal {word!r}")


def json_dumps(value, quote_keys=False, pretty=False) -> str:
    """Write JSON as fastjson does by default.

    Map keys that are not strings stay unquoted (``{0:"a"}``) unless
    ``quote_keys``; :class:`JsonObjectKey` keys are written as objects.
    Dict keys keep their order (write beans with sorted keys, as fastjson
    sorts bean properties). ``pretty`` indents with tabs like fastjson's
    PrettyFormat, as the broker's config files are written.
    """
    cdef list parts = []
    _dump(value, parts, quote_keys, "\n" if pretty else "", 0)
    return "".join(parts)


cdef int _dump(object value, list parts, object quote_keys, str newline, int depth) except -1:
    cdef bint first
    if depth > MAX_JSON_DEPTH:
        raise CodecError("JSON nesting is too deep to write")
    if value is None:
        parts.append("null")
    elif value is True:
        parts.append("true")
    elif value is False:
        parts.append("false")
    elif isinstance(value, str):
        parts.append(_json_quote(value))
    elif isinstance(value, int):
        parts.append(int.__repr__(value))  # an IntEnum's digits: its str() is its name before Python 3.11
    elif isinstance(value, float):
        parts.append(float.__repr__(value))
    elif isinstance(value, (dict, JsonObjectKey)):
        items = value.items() if isinstance(value, dict) else value
        inner = newline + "\t" * (depth + 1) if newline else ""
        parts.append("{")
        first = True
        for key, item in items:
            if not first:
                parts.append(",")
            first = False
            parts.append(inner)
            _dump_key(key, parts, quote_keys, newline, depth + 1)
            parts.append(":")
            _dump(item, parts, quote_keys, newline, depth + 1)
        if newline and not first:
            parts.append(newline + "\t" * depth)
        parts.append("}")
    elif isinstance(value, (list, tuple, set, frozenset)):
        parts.append("[")
        first = True
        for item in value:
            if not first:
                parts.append(",")
            first = False
            _dump(item, parts, quote_keys, newline, depth + 1)
        parts.append("]")
    else:
        raise CodecError(f"cannot write {type(value).__name__} as JSON")
    return 0


cdef int _dump_key(object key, list parts, object quote_keys, str newline, int depth) except -1:
    if isinstance(key, str):
        parts.append(_json_quote(key))
    elif isinstance(key, JsonObjectKey):
        if quote_keys:
            parts.append(_json_quote(json_dumps(key)))
        else:
            _dump(key, parts, quote_keys, "", depth)
    elif isinstance(key, (int, float)) and not isinstance(key, bool):
        text = str(key)
        parts.append('"' + text + '"' if quote_keys else text)
    else:
        raise CodecError(f"cannot write a {type(key).__name__} map key as JSON")
    return 0
