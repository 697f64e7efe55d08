"""The mapping between header dataclasses and a command's extFields.

Java names an extField after the header class's field (found by reflection),
writes values with ``toString()`` and parses them back with ``Integer.parseInt``
and friends. A header dataclass here declares its fields in Python spelling and
gives the Java name with :func:`wire`; ``required=True`` marks the
``@CFNotNull`` fields and ``bits=64`` the ``Long``/``long`` ones (the others
are ``Integer``/``int``).

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
from typing import Any, ClassVar, Mapping, TypeVar

from rocketmq_py.errors import BadRequestError

_log = logging.getLogger(__name__)
_H = TypeVar("_H", bound="CommandHeader")

#: Java's RemotingCommandException, named in the remarks as Java's answers name it.
_JAVA_EXCEPTION = "org.apache.rocketmq.remoting.exception.RemotingCommandException"
#: What Integer.parseInt / Long.parseLong accept: a sign, then decimal digits (Character.digit takes any Nd digit).
_JAVA_INTEGER = re.compile(r"[+-]?\d+")
_RANGES = {32: (-(1 << 31), (1 << 31) - 1), 64: (-(1 << 63), (1 << 63) - 1)}
#: Longest digit strings that always fit: the generated readers take them without a range check.
_SAFE_DIGITS = {32: 9, 64: 18}
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
    """Base of the header dataclasses; subclasses are ``@dataclass`` classes using :func:`wire`.

    Headers are built and parsed for every request, so the conversions are
    generated once per class as straight-line code (as ``dataclasses`` does
    for ``__init__``) instead of looping over the fields each time.
    """

    #: True for Java's FastCodesHeader classes: any number that does not parse refuses the request.
    fast_codes: ClassVar[bool] = False
    _layout: ClassVar[tuple[tuple[str, str, type, bool, int], ...] | None] = None

    @classmethod
    def _fields(cls) -> tuple[tuple[str, str, type, bool, int], ...]:
        layout = cls.__dict__.get("_layout")
        if layout is None:
            hints = typing.get_type_hints(cls)
            entries = []
            for field in dataclasses.fields(cls):  # type: ignore[arg-type]
                kind = _scalar_type(hints[field.name])
                entries.append((field.name, field.metadata.get("wire", field.name), kind,
                                field.metadata.get("required", False), field.metadata.get("bits", 32)))
            layout = tuple(entries)
            cls._layout = layout
        return layout

    def to_ext_fields(self) -> dict[str, str]:
        fields: dict[str, str] = _writer(type(self))(self)
        return fields

    @classmethod
    def from_ext_fields(cls: type[_H], fields: Mapping[str, str] | None) -> _H:
        """Raises :class:`HeaderFieldError` for a required field that is missing or bad (see the module text)."""
        header: _H = _reader(cls)(cls, fields or {})
        return header


def _writer(cls: type[CommandHeader]) -> Any:
    writer = cls.__dict__.get("_generated_writer")
    if writer is None:
        lines = ["def to_ext_fields(self):", "    fields = {}"]
        for attribute, name, kind, _required, _bits in cls._fields():
            lines.append(f"    value = self.{attribute}")
            lines.append("    if value is not None:")
            if kind is bool:
                lines.append(f"        fields[{name!r}] = 'true' if value else 'false'")
            elif kind is str:
                lines.append(f"        fields[{name!r}] = value if value.__class__ is str else str(value)")
            else:
                lines.append(f"        fields[{name!r}] = str(value)")
        lines.append("    return fields")
        writer = _compile(lines, "to_ext_fields", {})
        cls._generated_writer = writer  # type: ignore[attr-defined]
    return writer


def _reader(cls: type[CommandHeader]) -> Any:
    reader = cls.__dict__.get("_generated_reader")
    if reader is None:
        lines = ["def from_ext_fields(cls, fields):", "    get = fields.get", "    values = {}"]
        for attribute, name, kind, required, bits in cls._fields():
            lines.append(f"    text = get({name!r})")
            if required:
                lines.append("    if text is None:")
                lines.append(f"        raise Missing(cls.__name__, {name!r})")
                indent = "    "
            else:
                lines.append("    if text is not None:")
                indent = "        "
            if kind is str:
                lines.append(f"{indent}values[{attribute!r}] = text")
            elif kind is bool:
                lines.append(f"{indent}values[{attribute!r}] = text.lower() == 'true'")
            elif kind is float:
                lines.append(f"{indent}try:")
                lines.append(f"{indent}    values[{attribute!r}] = float(text)")
                lines.append(f"{indent}except ValueError:")
                lines.append(f"{indent}    bad_value(cls, {name!r}, text)")
            else:
                # Plain digits short enough to fit are the traffic; anything else takes the full Java check.
                lines.append(f"{indent}if text.isdecimal() and len(text) <= {_SAFE_DIGITS[bits]}:")
                lines.append(f"{indent}    values[{attribute!r}] = int(text)")
                lines.append(f"{indent}else:")
                lines.append(f"{indent}    value = parse(text, {bits})")
                lines.append(f"{indent}    if value is not None:")
                lines.append(f"{indent}        values[{attribute!r}] = value")
                lines.append(f"{indent}    else:")
                if required or cls.fast_codes:
                    lines.append(f"{indent}        raise Bad(cls.__name__, {name!r}, text, {bits})")
                else:
                    lines.append(f"{indent}        bad_value(cls, {name!r}, text)")
        lines.append("    return cls(**values)")
        reader = _compile(lines, "from_ext_fields", {
            "Missing": MissingHeaderFieldError, "Bad": BadHeaderFieldError,
            "parse": parse_java_integer, "bad_value": _bad_value})
        cls._generated_reader = reader  # type: ignore[attr-defined]
    return reader


def _compile(lines: list[str], name: str, namespace: dict[str, Any]) -> Any:
    exec("\n".join(lines), namespace)  # noqa: S102 - source built above from field names only
    return namespace[name]


def _bad_value(cls: type, name: str, text: str) -> None:
    # Java logs an optional field it cannot parse and leaves the default; DEBUG, as a peer could flood it.
    _log.debug("header %s: optional field %s has a bad value %r, left at its default", cls.__name__, name, text[:64])


def _scalar_type(hint: Any) -> type:
    for candidate in (bool, int, float, str):
        if hint is candidate or candidate in typing.get_args(hint):
            return candidate
    raise TypeError(f"header fields must be str, int, float or bool, not {hint!r}")
