"""The mapping between header dataclasses and a command's extFields.

Java names an extField after the header class's field (found by reflection),
writes values with ``toString()`` and parses them back with ``Integer.parseInt``
and friends; a missing ``@CFNotNull`` field is an error. A header dataclass
here declares its fields in Python spelling and gives the Java name with
:func:`wire`; ``required=True`` marks the ``@CFNotNull`` fields.
"""
from __future__ import annotations

import dataclasses
import logging
import typing
from typing import Any, ClassVar, Mapping, TypeVar

from rocketmq_py.errors import CodecError

_log = logging.getLogger(__name__)
_H = TypeVar("_H", bound="CommandHeader")


class MissingHeaderFieldError(CodecError):
    """A required header field is absent (Java answers SYSTEM_ERROR for this)."""


def wire(name: str, default: Any = None, *, required: bool = False) -> Any:
    """Declare a header field whose extFields key is ``name``."""
    return dataclasses.field(default=default, metadata={"wire": name, "required": required})


class CommandHeader:
    """Base of the header dataclasses; subclasses are ``@dataclass`` classes using :func:`wire`.

    Headers are built and parsed for every request, so the conversions are
    generated once per class as straight-line code (as ``dataclasses`` does
    for ``__init__``) instead of looping over the fields each time.
    """

    _layout: ClassVar[tuple[tuple[str, str, type, bool], ...] | None] = None

    @classmethod
    def _fields(cls) -> tuple[tuple[str, str, type, bool], ...]:
        layout = cls.__dict__.get("_layout")
        if layout is None:
            hints = typing.get_type_hints(cls)
            entries = []
            for field in dataclasses.fields(cls):  # type: ignore[arg-type]
                kind = _scalar_type(hints[field.name])
                entries.append((field.name, field.metadata.get("wire", field.name), kind,
                                field.metadata.get("required", False)))
            layout = tuple(entries)
            cls._layout = layout
        return layout

    def to_ext_fields(self) -> dict[str, str]:
        fields: dict[str, str] = _writer(type(self))(self)
        return fields

    @classmethod
    def from_ext_fields(cls: type[_H], fields: Mapping[str, str] | None) -> _H:
        header: _H = _reader(cls)(cls, fields or {})
        return header


def _writer(cls: type[CommandHeader]) -> Any:
    writer = cls.__dict__.get("_generated_writer")
    if writer is None:
        lines = ["def to_ext_fields(self):", "    fields = {}"]
        for attribute, name, kind, _required in cls._fields():
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
        for attribute, name, kind, required in cls._fields():
            lines.append(f"    text = get({name!r})")
            if required:
                lines.append("    if text is None:")
                prefix = f"the custom header field {name!r} of "
                lines.append(f"        raise MissingHeaderFieldError({prefix!r} + cls.__name__ + ' is missing')")
            else:
                lines.append("    if text is not None:")
            indent = "    " if required else "        "
            if kind is str:
                lines.append(f"{indent}values[{attribute!r}] = text")
            elif kind is bool:
                lines.append(f"{indent}values[{attribute!r}] = text.lower() == 'true'")
            else:
                converter = "int" if kind is int else "float"
                lines.append(f"{indent}try:")
                lines.append(f"{indent}    values[{attribute!r}] = {converter}(text)")
                lines.append(f"{indent}except ValueError:")
                lines.append(f"{indent}    bad_value(cls, {name!r}, text)")
        lines.append("    return cls(**values)")
        reader = _compile(lines, "from_ext_fields",
                          {"MissingHeaderFieldError": MissingHeaderFieldError, "bad_value": _bad_value})
        cls._generated_reader = reader  # type: ignore[attr-defined]
    return reader


def _compile(lines: list[str], name: str, namespace: dict[str, Any]) -> Any:
    exec("\n".join(lines), namespace)  # noqa: S102 - source built above from field names only
    return namespace[name]


def _bad_value(cls: type, name: str, text: str) -> None:
    # Java logs a field it cannot parse and leaves the default.
    _log.warning("header %s field %s has a bad value %r", cls.__name__, name, text)


def _scalar_type(hint: Any) -> type:
    for candidate in (bool, int, float, str):
        if hint is candidate or candidate in typing.get_args(hint):
            return candidate
    raise TypeError(f"header fields must be str, int, float or bool, not {hint!r}")
