"""Checks that a request's JSON body has the types its Java class declares, before anything reads it.

Java's fastjson refuses a body that does not bind to the class, and the
request fails whole; a lenient Python decoder would instead let a number where
a name belongs (or ``null`` where a number belongs) into the server's tables.
A shape here is the Java class written as data:

* ``str`` (an integer is taken as its text, as fastjson does), ``bool``,
  :data:`INT` (Java ``int``/``Integer``), :data:`LONG`;
* an :class:`enum.Enum` class: its name, or its ordinal (fastjson reads both;
  an ordinal is turned into the name here);
* ``[shape]``: a JSON array (or ``null``) of that shape;
* ``{key: shape}``: a JSON object (or ``null``) whose listed keys, when
  present and not ``null``, have those shapes (other keys are ignored, as
  fastjson ignores them);
* :class:`MapOf`: a JSON object whose every value has one shape.

:func:`check` returns the value with ordinals and numeric strings converted
(as fastjson converts them), or raises :class:`BadRequestError` naming the path
of the first value that does not fit.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from rocketmq_py.errors import BadRequestError, CodecError


@dataclass(frozen=True)
class Integer:
    """A Java integral type of ``bits`` bits."""

    bits: int

    def fits(self, value: int) -> bool:
        limit = 1 << (self.bits - 1)
        return -limit <= value < limit


INT = Integer(32)
LONG = Integer(64)


@dataclass(frozen=True)
class MapOf:
    """A JSON object used as a Java ``Map<String, V>``: every value has shape ``value``."""

    value: Any


def decode(body: bytes | None, shape: Any, what: str) -> Any:
    """The JSON ``body`` checked against ``shape``; an empty body reads as ``{}`` (Java's null body)."""
    # lazy: see rocketmq_py/_lazy.py
    from rocketmq_py import codec

    try:
        data = codec.json_loads(body or b"{}")
    except (CodecError, ValueError) as error:
        raise BadRequestError(f"the {what} body is not JSON: {error}") from None
    return check(data, shape, what)


def check(value: Any, shape: Any, path: str) -> Any:
    """``value`` converted to ``shape``; raises :class:`BadRequestError` naming ``path`` when it does not fit."""
    if shape is str:
        if isinstance(value, str):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)  # fastjson reads a number into a String field as its text
    elif shape is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
    elif isinstance(shape, Integer):
        number = _integer(value)
        if number is not None and shape.fits(number):
            return number
    elif isinstance(shape, type) and issubclass(shape, enum.Enum):
        members = list(shape)
        if isinstance(value, str) and value in shape.__members__:
            return shape[value].value
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(members):
            return members[value].value
    elif isinstance(shape, list):
        if isinstance(value, list):
            return [check(item, shape[0], f"{path}[{index}]") for index, item in enumerate(value)]
    elif isinstance(shape, MapOf):
        if isinstance(value, dict):
            return {key: check(item, shape.value, f"{path}.{key}") for key, item in value.items()}
    elif isinstance(shape, dict):
        if isinstance(value, dict):
            checked = dict(value)
            for key, item_shape in shape.items():
                item = value.get(key)
                if item is None:
                    checked.pop(key, None)  # a null reads as absent: the decoders then take Java's default
                else:
                    checked[key] = check(item, item_shape, f"{path}.{key}")
            return checked
    else:
        raise TypeError(f"not a JSON shape: {shape!r}")
    raise BadRequestError(f"{path} is not {_describe(shape)}: {_preview(value)}", field=path)


def _integer(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and 0 < len(value) <= 40:
        text = value[1:] if value[:1] in "+-" else value
        if text.isdecimal():
            return int(value)
    return None


def _describe(shape: Any) -> str:
    if isinstance(shape, Integer):
        return "an Integer" if shape.bits == 32 else "a Long"
    if isinstance(shape, type) and issubclass(shape, enum.Enum):
        return f"a {shape.__name__} name or ordinal"
    if isinstance(shape, list):
        return "an array"
    if isinstance(shape, (dict, MapOf)):
        return "an object"
    return {str: "a string", bool: "a boolean"}.get(shape, repr(shape))


def _preview(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 64 else text[:61] + "..."
