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
from dataclasses import dataclass, field
from typing import Any

from rocketmq_py.errors import BadRequestError, CodecError


@dataclass(frozen=True)
class Integer:
    """A Java integral type of ``bits`` bits."""

    bits: int
    #: The smallest value, and the first value above the largest.
    low: int = field(init=False)
    high: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "low", -(1 << (self.bits - 1)))
        object.__setattr__(self, "high", 1 << (self.bits - 1))

    def fits(self, value: int) -> bool:
        return self.low <= value < self.high


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
    try:
        return _check(value, shape)
    except _Misfit as misfit:
        where = path + "".join(reversed(misfit.steps))
        raise BadRequestError(f"{where} is not {_describe(misfit.shape)}: {_preview(misfit.value)}",
                              field=where) from None


class _Misfit(Exception):
    """A value that does not fit its shape; each array or object it is in adds its step to the path on the way
    out, so that a body that fits (every peer push, every heartbeat) builds no path strings at all."""

    def __init__(self, shape: Any, value: Any) -> None:
        super().__init__()
        self.shape = shape
        self.value = value
        #: The steps from the value up to the checked root, innermost first (``.key``, ``[index]``).
        self.steps: list[str] = []


def _check(value: Any, shape: Any) -> Any:
    if isinstance(shape, dict):
        if isinstance(value, dict):
            checked = dict(value)
            for key, item_shape in shape.items():
                item = value.get(key)
                if item is None:
                    checked.pop(key, None)  # a null reads as absent: the decoders then take Java's default
                    continue
                # The common fits without a call: a string, or a number in its range, stays as it is.
                if type(item) is str and item_shape is str:
                    continue
                if type(item) is int and type(item_shape) is Integer and item_shape.low <= item < item_shape.high:
                    continue
                try:
                    checked[key] = _check(item, item_shape)
                except _Misfit as misfit:
                    misfit.steps.append(f".{key}")
                    raise
            return checked
    elif isinstance(shape, Integer):
        number = value if type(value) is int else _integer(value)
        if number is not None and shape.fits(number):
            return number
    elif shape is str:
        if isinstance(value, str):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)  # fastjson reads a number into a String field as its text
    elif shape is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
    elif isinstance(shape, type) and issubclass(shape, enum.Enum):
        if isinstance(value, str) and value in shape.__members__:
            return shape[value].value
        members = list(shape)
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(members):
            return members[value].value
    elif isinstance(shape, list):
        if isinstance(value, list):
            checked_items = []
            for index, item in enumerate(value):
                try:
                    checked_items.append(_check(item, shape[0]))
                except _Misfit as misfit:
                    misfit.steps.append(f"[{index}]")
                    raise
            return checked_items
    elif isinstance(shape, MapOf):
        if isinstance(value, dict):
            checked_map = {}
            for key, item in value.items():
                try:
                    checked_map[key] = _check(item, shape.value)
                except _Misfit as misfit:
                    misfit.steps.append(f".{key}")
                    raise
            return checked_map
    else:
        raise TypeError(f"not a JSON shape: {shape!r}")
    raise _Misfit(shape, value)


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
