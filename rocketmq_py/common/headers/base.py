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
    """Base of the header dataclasses; subclasses are ``@dataclass`` classes using :func:`wire`."""

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
        fields: dict[str, str] = {}
        for attribute, name, _kind, _required in self._fields():
            value = getattr(self, attribute)
            if value is None:
                continue
            if isinstance(value, bool):
                fields[name] = "true" if value else "false"
            else:
                fields[name] = str(value)
        return fields

    @classmethod
    def from_ext_fields(cls: type[_H], fields: Mapping[str, str] | None) -> _H:
        fields = fields or {}
        values: dict[str, Any] = {}
        for attribute, name, kind, required in cls._fields():
            text = fields.get(name)
            if text is None:
                if required:
                    raise MissingHeaderFieldError(
                        f"the custom header field {name!r} of {cls.__name__} is missing"
                    )
                continue
            try:
                values[attribute] = _parse(text, kind)
            except ValueError:
                # Java logs a field it cannot parse and leaves the default.
                _log.warning("header %s field %s has a bad value %r", cls.__name__, name, text)
        return cls(**values)


def _scalar_type(hint: Any) -> type:
    for candidate in (bool, int, float, str):
        if hint is candidate or candidate in typing.get_args(hint):
            return candidate
    raise TypeError(f"header fields must be str, int, float or bool, not {hint!r}")


def _parse(text: str, kind: type) -> Any:
    if kind is str:
        return text
    if kind is bool:
        return text.lower() == "true"
    if kind is int:
        return int(text.strip())
    return float(text)
