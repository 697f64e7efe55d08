"""The mapping between header dataclasses and a command's extFields.

Java names an extField after the header class's field (found by reflection),
writes values with ``toString()`` and parses them back with ``Integer.parseInt``
and friends. A header here is a ``@dataclass(slots=True)`` subclass of
:class:`CommandHeader` that declares its fields in Python spelling and gives
the Java name with :func:`wire`; ``required=True`` marks the ``@CFNotNull``
fields and ``bits=64`` the ``Long``/``long`` ones (the others are
``Integer``/``int``). Slots, not an instance dict: the codec reads and fills a
header's fields straight from their slots, on every request.

Parsing is Java's: an optional sign and decimal digits, nothing else (no
blanks, no ``_``, no ``1.5``), within the Java type's range. What Java would
leave ``null`` and then trip over in the processor is refused here, before any
state is touched: a required field that is missing or does not parse raises
:class:`MissingHeaderFieldError` or :class:`BadHeaderFieldError` (servers answer
SYSTEM_ERROR naming the field). An optional field that does not parse keeps its
dataclass default, which is Java's default for that field (``None`` for a boxed
type, ``0``/``False`` for a primitive), except in the ``FastCodesHeader``
classes (``fast_codes = True``), whose hand-written Java decoders let the
``NumberFormatException`` out and so refuse the request.
"""
from __future__ import annotations

import dataclasses
import logging
import re
import typing
from typing import TYPE_CHECKING, Any, ClassVar, Mapping, TypeVar

from rocketmq_py._codec_types import (
    HEADER_BOOL,
    HEADER_FLOAT,
    HEADER_INT,
    HEADER_PLANS,
    HEADER_STR,
    WIRE_NAMES,
    HeaderPlan,
    RemotingCommand,
)
from rocketmq_py.codec import header_fields, read_command_header, read_header
from rocketmq_py.errors import BadRequestError

_log = logging.getLogger(__name__)
_H = TypeVar("_H", bound="CommandHeader")

#: Java's RemotingCommandException, named in the remarks as Java's answers name it.
_JAVA_EXCEPTION = "org.apache.rocketmq.remoting.exception.RemotingCommandException"
#: What Integer.parseInt / Long.parseLong accept: a sign, then decimal digits (Character.digit takes any Nd digit).
_JAVA_INTEGER = re.compile(r"[+-]?\d+")
_RANGES = {32: (-(1 << 31), (1 << 31) - 1), 64: (-(1 << 63), (1 << 63) - 1)}
_JAVA_TYPE = {32: "Integer", 64: "Long"}


class HeaderFieldError(BadRequestError):
    """A header field that the request cannot be served without is missing or does not parse."""

    def __init__(self, header: str, field: str, problem: str) -> None:
        self.header = header
        super().__init__(f"the custom field {field!r} of {header} {problem}", field,
                         f"{_JAVA_EXCEPTION}: the custom field <{field}> {problem}")


class MissingHeaderFieldError(HeaderFieldError):
    """A required header field is absent (Java answers SYSTEM_ERROR for this)."""

    def __init__(self, header: str, field: str) -> None:
        super().__init__(header, field, "is null")


class BadHeaderFieldError(HeaderFieldError):
    """A header field does not parse as its Java type, or is out of that type's range."""

    def __init__(self, header: str, field: str, text: str, bits: int) -> None:
        self.text = text
        super().__init__(header, field, f"is not a valid {_JAVA_TYPE[bits]}: {text[:64]!r}")


def wire(name: str, default: Any = None, *, required: bool = False, bits: int = 32) -> Any:
    """Declare a header field whose extFields key is ``name``; ``bits=64`` for a Java ``Long``/``long``."""
    if bits not in _RANGES:
        raise ValueError(f"bits must be 32 or 64, not {bits}")
    return dataclasses.field(default=default, metadata={"wire": name, "required": required, "bits": bits})


def parse_java_integer(text: str, bits: int) -> int | None:
    """``text`` as ``Integer.parseInt`` (``bits=32``) or ``Long.parseLong`` (64) reads it, ``None`` where they throw."""
    if len(text) > 40 or _JAVA_INTEGER.fullmatch(text) is None:
        return None
    value = int(text)
    low, high = _RANGES[bits]
    return value if low <= value <= high else None


class CommandHeader:
    """Base of the header dataclasses; subclasses are ``@dataclass(slots=True)`` classes using :func:`wire`.

    Headers are built and parsed for every request, so each class's fields are
    laid out once as a :class:`HeaderPlan` and the codec (compiled, or its
    pure-Python twin) does the mapping in one pass, without calling
    ``__init__`` on the way in.
    """

    __slots__ = ()

    #: True for Java's FastCodesHeader classes: any number that does not parse refuses the request.
    fast_codes: ClassVar[bool] = False

    @classmethod
    def _plan(cls) -> HeaderPlan:
        plan = _PLANS.get(cls)
        if plan is None:
            plan = _PLANS[cls] = _make_plan(cls)
        return plan

    if TYPE_CHECKING:  # the typed signatures; at run time the methods are the codec's functions themselves
        def to_ext_fields(self) -> dict[str, str]:
            """The header's fields as extFields strings."""
            return header_fields(self)

        @classmethod
        def from_ext_fields(cls: type[_H], fields: Mapping[str, str] | None) -> _H:
            """Raises :class:`HeaderFieldError` for a required field that is missing or bad (see the module text)."""
            header: _H = read_header(cls, fields)
            return header

        @classmethod
        def from_command(cls: type[_H], command: RemotingCommand) -> _H:
            """``from_ext_fields(command.ext_fields)`` (Java's ``decodeCommandCustomHeader``); a decoded ROCKETMQ
            frame's fields are read straight from its bytes."""
            header: _H = read_command_header(cls, command)
            return header
    else:
        # They find the class's plan themselves, so no Python frame runs between a caller and the mapping.
        to_ext_fields = header_fields
        from_ext_fields = classmethod(read_header)
        from_command = classmethod(read_command_header)


#: One plan per header class, where the encoders look up a command's custom header too.
_PLANS = HEADER_PLANS
_KINDS = {str: HEADER_STR, int: HEADER_INT, bool: HEADER_BOOL, float: HEADER_FLOAT}


def _make_plan(cls: type[CommandHeader]) -> HeaderPlan:
    if hasattr(cls, "__post_init__") or cls.__dictoffset__ != 0:  # instances with a __dict__
        raise TypeError(f"{cls.__name__}: declare header classes with @dataclass(slots=True) and no __post_init__ "
                        "(the header mapping fills their slots without calling __init__)")
    hints = typing.get_type_hints(cls)
    entries = []
    defaults = {}
    for field in dataclasses.fields(cls):  # type: ignore[arg-type]
        if field.default is dataclasses.MISSING:
            raise TypeError(f"{cls.__name__}.{field.name}: every header field needs a default (use wire())")
        required = field.metadata.get("required", False)
        name = field.metadata.get("wire", field.name)
        wire_name = WIRE_NAMES.setdefault(name, name)  # one object per name, for the decoders to hand out
        entries.append((field.name, wire_name, _KINDS[_scalar_type(hints[field.name])],
                        required, field.metadata.get("bits", 32), required or cls.fast_codes))
        defaults[field.name] = field.default
    return HeaderPlan(tuple(entries), defaults, _missing, _slow_int, _bad_value)


def _missing(cls: type, name: str) -> None:
    raise MissingHeaderFieldError(cls.__name__, name)


def _slow_int(cls: type, name: str, text: Any, bits: int, strict: bool) -> int | None:
    value = parse_java_integer(text, bits)
    if value is None:
        if strict:
            raise BadHeaderFieldError(cls.__name__, name, text, bits)
        _bad_value(cls, name, text)
    return value


def _bad_value(cls: type, name: str, text: Any) -> None:
    # Java logs an optional field it cannot parse and leaves the default; DEBUG, as a peer could flood it.
    _log.debug("header %s: optional field %s has a bad value %r, left at its default", cls.__name__, name, text[:64])


def _scalar_type(hint: Any) -> type:
    for candidate in (bool, int, float, str):
        if hint is candidate or candidate in typing.get_args(hint):
            return candidate
    raise TypeError(f"header fields must be str, int, float or bool, not {hint!r}")
