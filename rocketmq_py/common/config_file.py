"""Configuration files as Java RocketMQ reads and writes them.

Ports the parts of Java's ``java.util.Properties.load``, ``MixAll.properties2Object``,
``MixAll.properties2String`` and ``MixAll.string2File`` that RocketMQ relies on:

* a ``broker.conf`` / ``namesrv.properties`` file is a Java properties file;
* a configuration dataclass takes the keys named like its fields in Java
  spelling (``listen_port`` is ``listenPort``; a field may give its own Java
  name with ``metadata={"java": "brokerIP1"}``); keys nobody knows are
  returned so the caller can warn about them;
* a JSON config file (``topics.json``, ``kvConfig.json``, ...) is written to
  ``X.tmp`` first, the previous content is kept in ``X.bak``, and a load falls
  back to the ``.bak`` file when ``X`` is missing or empty.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import typing
from pathlib import Path
from typing import Any, Iterable, Mapping

_log = logging.getLogger(__name__)

__all__ = [
    "parse_properties",
    "load_properties",
    "format_properties",
    "java_name",
    "apply_properties",
    "config_to_properties",
    "write_file_safely",
    "read_file_with_backup",
]

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str) -> Iterable[str]:
    """Lines with comments dropped and backslash continuations joined, as ``Properties.load`` reads them."""
    pending: str | None = None
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f")
        if pending is None and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        continued = trailing % 2 == 1
        if continued:
            line = line[:-1]
        pending = line if pending is None else pending + line
        if not continued:
            yield pending
            pending = None
    if pending is not None:
        yield pending


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char != "\\" or i + 1 == len(text):
            out.append(char)
            i += 1
            continue
        following = text[i + 1]
        if following == "u" and i + 6 <= len(text):
            try:
                out.append(chr(int(text[i + 2:i + 6], 16)))
                i += 6
                continue
            except ValueError:
                pass
        out.append(_ESCAPES.get(following, following))
        i += 2
    return "".join(out)


def _split_key(line: str) -> tuple[str, str]:
    i = 0
    while i < len(line):
        char = line[i]
        if char == "\\":
            i += 2
            continue
        if char in "=: \t\f":
            break
        i += 1
    key = line[:i]
    rest = line[i:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return _unescape(key), _unescape(rest)


def parse_properties(text: str) -> dict[str, str]:
    """The key/value pairs of a Java properties text (``=``, ``:`` or blank separated; ``#``/``!`` comments)."""
    result: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split_key(line)
        result[key] = value
    return result


def load_properties(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read a properties file (UTF-8)."""
    return parse_properties(Path(path).read_text(encoding="utf-8"))


def format_properties(properties: Mapping[str, object]) -> str:
    """``key=value`` lines, as Java's ``MixAll.properties2String`` writes them; ``None`` values are left out."""
    return "".join(f"{key}={_text(value)}\n" for key, value in properties.items() if value is not None)


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# --- dataclass binding -------------------------------------------------------------------------


def java_name(field: dataclasses.Field[Any]) -> str:
    """The Java property name of a config field: its ``java`` metadata, else camelCase of its name."""
    explicit = field.metadata.get("java")
    if explicit:
        return str(explicit)
    head, *rest = field.name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _field_kind(config_type: type, field: dataclasses.Field[Any]) -> type:
    hint = typing.get_type_hints(config_type).get(field.name, str)
    for candidate in (bool, int, float, str):
        if hint is candidate or candidate in typing.get_args(hint):
            return candidate
    return str


def parse_boolean(text: str) -> bool:
    """Java's Boolean.parseBoolean: "true" in any case is true, everything else false."""
    return text.strip().lower() == "true"


def _convert(text: str, kind: type) -> Any:
    if kind is bool:
        return parse_boolean(text)
    if kind is int:
        return int(text.strip())
    if kind is float:
        return float(text.strip())
    return text


def apply_properties(config: Any, properties: Mapping[str, str]) -> list[str]:
    """Set the fields of dataclass ``config`` named by ``properties``; return the keys it does not know.

    A value that does not parse for its field's type raises ``ValueError``
    naming the key, rather than starting with a silently wrong setting.
    """
    # A few Java fields are set by another name than the one they are reported by: their setter's.
    by_name = {f.metadata.get("java_key") or java_name(f): f for f in dataclasses.fields(config)}
    unknown = []
    for key, text in properties.items():
        field = by_name.get(key)
        if field is None:
            unknown.append(key)
            continue
        kind = _field_kind(type(config), field)
        try:
            value = _convert(text, kind)
        except ValueError:
            raise ValueError(f"config key {key}={text!r} is not a valid {kind.__name__}") from None
        setattr(config, field.name, value)
    return unknown


def config_to_properties(*configs: Any) -> dict[str, object]:
    """Every field of the given dataclasses, by Java name (as Java's ``object2Properties``)."""
    result: dict[str, object] = {}
    for config in configs:
        for field in dataclasses.fields(config):
            result[java_name(field)] = getattr(config, field.name)
    return result


# --- config files with a backup ---------------------------------------------------------------


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())


def write_file_safely(path: str | os.PathLike[str], text: str) -> None:
    """Replace ``path`` with ``text`` the way Java's ``MixAll.string2File`` does.

    The new content goes to ``path.tmp``, the old one is copied to
    ``path.bak``, then the tmp file takes the name (atomically here, where Java
    deletes and renames).
    """
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    _write(tmp, text)
    try:
        previous = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        previous = None
    if previous is not None:
        _write(target.with_name(target.name + ".bak"), previous)
    os.replace(tmp, target)


def read_file_with_backup(path: str | os.PathLike[str]) -> str | None:
    """The content of ``path``, or of ``path.bak`` when ``path`` is missing or empty; ``None`` if neither has any."""
    target = Path(path)
    for candidate in (target, target.with_name(target.name + ".bak")):
        try:
            text = candidate.read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        if text.strip():
            if candidate is not target:
                _log.warning("%s is missing or empty; loaded its backup %s", target, candidate)
            return text
    return None
