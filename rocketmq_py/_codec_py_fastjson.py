"""fastjson-compatible JSON, in pure Python: a part of the codec's twin ``_codec_py``.

Its compiled counterpart is ``_codec_parts/fastjson.pxi``; ``_codec_py`` re-exports
what is public here, so that both forms of the codec have the same names.
"""
from __future__ import annotations

import json
from typing import Any, Callable

from rocketmq_py._codec_types import JsonObjectKey
from rocketmq_py.errors import CodecError

#: Nesting deeper than this is refused instead of exhausting the stack.
MAX_JSON_DEPTH = 256


def json_loads(text: str | bytes) -> object:
    """Parse JSON as fastjson writes it.

    Standard JSON goes through the fast path. The fallback also takes what
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
        return json.loads(text)
    except RecursionError:
        raise CodecError("JSON nesting is too deep") from None
    except ValueError:
        pass
    return _LenientJsonParser(text).parse()


#: ``json.decoder.scanstring``: the JSON string literal whose opening quote is just before an index, as
#: ``(text, index after the closing quote)``. Public in the json module but not declared in typeshed's stubs.
_scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


class _LenientJsonParser:
    _WHITESPACE = " \t\r\n"

    def __init__(self, text: str) -> None:
        self.text = text
        self.position = 0
        self.depth = 0

    def fail(self, what: str) -> CodecError:
        return CodecError(f"invalid JSON at character {self.position}: {what}")

    def parse(self) -> object:
        value = self.value()
        self.skip()
        if self.position != len(self.text):
            raise self.fail("unexpected data after the value")
        return value

    def skip(self) -> None:
        text, position = self.text, self.position
        while position < len(text) and text[position] in self._WHITESPACE:
            position += 1
        self.position = position

    def peek(self) -> str:
        self.skip()
        if self.position >= len(self.text):
            raise self.fail("unexpected end")
        return self.text[self.position]

    def value(self) -> object:
        char = self.peek()
        if char == "{":
            return self.object_()
        if char == "[":
            return self.array()
        if char == '"':
            return self.string()
        return self.literal()

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_JSON_DEPTH:
            raise self.fail("nesting is too deep")

    def object_(self) -> dict[Any, Any]:
        """A JSON object; fastjson's keys may also be numbers, literals or objects (:class:`JsonObjectKey`)."""
        self.enter()
        self.position += 1
        result: dict[Any, Any] = {}
        if self.peek() == "}":
            self.position += 1
            self.depth -= 1
            return result
        while True:
            char = self.peek()
            if char == '"':
                key: object = self.string()
            elif char == "{":
                key = JsonObjectKey(self.object_())
            else:
                key = self.literal(as_key=True)
            if self.peek() != ":":
                raise self.fail("expected ':'")
            self.position += 1
            result[key] = self.value()
            char = self.peek()
            self.position += 1
            if char == "}":
                self.depth -= 1
                return result
            if char != ",":
                raise self.fail("expected ',' or '}'")

    def array(self) -> list[Any]:
        self.enter()
        self.position += 1
        result: list[Any] = []
        if self.peek() == "]":
            self.position += 1
            self.depth -= 1
            return result
        while True:
            result.append(self.value())
            char = self.peek()
            self.position += 1
            if char == "]":
                self.depth -= 1
                return result
            if char != ",":
                raise self.fail("expected ',' or ']'")

    def string(self) -> str:
        try:
            value, end = _scanstring(self.text, self.position + 1)
        except ValueError as error:
            raise self.fail(f"bad string: {error}") from None
        self.position = end
        return value

    def literal(self, as_key: bool = False) -> object:
        text = self.text
        start = position = self.position
        while position < len(text) and (text[position].isalnum() or text[position] in "+-._$"):
            position += 1
        word = text[start:position]
        self.position = position
        if not word:
            raise self.fail("expected a value")
        if word == "true":
            return True
        if word == "false":
            return False
        if word == "null":
            return None
        try:
            return int(word)
        except ValueError:
            pass
        try:
            return float(word)
        except ValueError:
            pass
        if as_key and (word[0].isalpha() or word[0] in "_$"):
            return word
        raise self.fail(f"unknown literal {word!r}")


def json_dumps(value: object, quote_keys: bool = False, pretty: bool = False) -> str:
    """Write JSON as fastjson does by default.

    Map keys that are not strings stay unquoted (``{0:"a"}``) unless
    ``quote_keys``; :class:`JsonObjectKey` keys are written as objects.
    Dict keys keep their order (write beans with sorted keys, as fastjson
    sorts bean properties). ``pretty`` indents with tabs like fastjson's
    PrettyFormat, as the broker's config files are written.
    """
    parts: list[str] = []
    _dump(value, parts, quote_keys, "\n" if pretty else "", 0)
    return "".join(parts)


def _dump(value: object, parts: list[str], quote_keys: bool, newline: str, depth: int) -> None:
    if depth > MAX_JSON_DEPTH:
        raise CodecError("JSON nesting is too deep to write")
    if value is None:
        parts.append("null")
    elif value is True:
        parts.append("true")
    elif value is False:
        parts.append("false")
    elif isinstance(value, str):
        parts.append(json.dumps(value, ensure_ascii=False))
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


def _dump_key(key: object, parts: list[str], quote_keys: bool, newline: str, depth: int) -> None:
    if isinstance(key, str):
        parts.append(json.dumps(key, ensure_ascii=False))
    elif isinstance(key, JsonObjectKey):
        if quote_keys:
            parts.append(json.dumps(json_dumps(key), ensure_ascii=False))
        else:
            _dump(key, parts, quote_keys, "", depth)
    elif isinstance(key, (int, float)) and not isinstance(key, bool):
        text = str(key)
        parts.append('"' + text + '"' if quote_keys else text)
    else:
        raise CodecError(f"cannot write a {type(key).__name__} map key as JSON")
