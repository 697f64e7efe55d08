"""Checks the values of a config dataclass against its annotations, so a wrong type fails at construction
with :class:`InvalidArgumentError` instead of deep inside a send or a pull later."""
from __future__ import annotations

import dataclasses
import enum
import types
import typing
from typing import Any

from rocketmq_py.errors import InvalidArgumentError


_FIELD_TYPES: dict[type, tuple[tuple[str, Any], ...]] = {}


def _field_types(kind: type) -> tuple[tuple[str, Any], ...]:
    """The (name, annotation) of each init field of the dataclass ``kind`` (resolved once per class)."""
    found = _FIELD_TYPES.get(kind)
    if found is None:
        hints = typing.get_type_hints(kind)
        found = _FIELD_TYPES[kind] = tuple((f.name, hints[f.name]) for f in dataclasses.fields(kind) if f.init)
    return found


def _describe(annotation: Any) -> str:
    if annotation is type(None):
        return "None"
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def _matches(value: Any, annotation: Any) -> bool:
    if annotation is Any:
        return True
    if annotation is type(None):
        return value is None
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        return any(_matches(value, arg) for arg in typing.get_args(annotation))
    if origin in (tuple, frozenset, set, list):
        if not isinstance(value, origin):
            return False
        args = typing.get_args(annotation)
        item = args[0] if args else Any
        return all(_matches(element, item) for element in value)
    if annotation is bool:
        return isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if annotation is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return isinstance(value, annotation)
    if isinstance(annotation, type):
        return isinstance(value, annotation)
    return True


def check_option_types(config: Any) -> None:
    """Raise InvalidArgumentError naming the first field whose value does not have the annotated type."""
    kind = type(config)
    for name, annotation in _field_types(kind):
        value = getattr(config, name)
        if not _matches(value, annotation):
            raise InvalidArgumentError(
                f"{kind.__name__}.{name} must be {_describe(annotation)}, got {value!r} ({type(value).__name__})"
            )
