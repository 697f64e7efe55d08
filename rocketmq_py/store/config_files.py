"""The broker's JSON config files in ``{storePathRootDir}/config`` (Java's ConfigManager and the
serialize wrappers of TopicConfigManager, ConsumerOffsetManager, SubscriptionGroupManager and
ScheduleMessageService).

Each file is written pretty-printed in fastjson's form (tabs; integer map
keys unquoted) with the tmp/bak method, and read back with a fallback to the
``.bak`` copy, so the Java broker and ours can take each other's files:

* ``topics.json``            ``{"dataVersion":{...},"topicConfigTable":{"<topic>":{TopicConfig}}}``
* ``consumerOffset.json``    ``{"offsetTable":{"<topic>@<group>":{0:12,1:10}}}``
* ``subscriptionGroup.json`` ``{"dataVersion":{...},"subscriptionGroupTable":{"<group>":{...}}}``
* ``delayOffset.json``       ``{"offsetTable":{1:0,2:17}}`` (delay level -> next offset)
"""
from __future__ import annotations

import dataclasses
import logging
import threading
import typing
from pathlib import Path
from typing import Any

from rocketmq_py import codec
from rocketmq_py.common.config_file import write_file_safely
from rocketmq_py.common.data_version import DataVersion
from rocketmq_py.common.subscription_group import SubscriptionGroupConfig
from rocketmq_py.common.topic_config import TopicConfig, TopicConfigSerializeWrapper
from rocketmq_py.errors import CodecError, StoreError

_log = logging.getLogger(__name__)

TOPIC_GROUP_SEPARATOR = "@"
_INT32 = (-(1 << 31), (1 << 31) - 1)
_INT64 = (-(1 << 63), (1 << 63) - 1)


def checked_int(value: Any, what: str, bounds: tuple[int, int] = _INT64) -> int:
    """``value`` when it is an integer (not a bool) within ``bounds``; else ``ValueError`` naming ``what``.

    What persists is checked where it is stored, behind the request checks: one bad value written into a
    table would otherwise be written to disk and stop the next start."""
    if value.__class__ is not int or not bounds[0] <= value <= bounds[1]:
        raise ValueError(f"{what} must be an integer in [{bounds[0]}, {bounds[1]}], not {value!r}")
    return value


def checked_config(config: Any) -> Any:
    """``config`` (a TopicConfig or SubscriptionGroupConfig) when each field has its declared type."""
    for name, kind in _field_types(type(config)):
        value = getattr(config, name)
        if kind is int:
            checked_int(value, f"{type(config).__name__}.{name}")
        elif value.__class__ is not kind:
            raise ValueError(f"{type(config).__name__}.{name} must be a {kind.__name__}, not {value!r}")
    return config


_FIELD_TYPES: dict[type, tuple[tuple[str, type], ...]] = {}


def _field_types(cls: type) -> tuple[tuple[str, type], ...]:
    """The int, str and bool fields of a config dataclass, with their types (looked up once per class)."""
    found = _FIELD_TYPES.get(cls)
    if found is None:
        hints = typing.get_type_hints(cls)
        found = tuple((field.name, hints[field.name]) for field in dataclasses.fields(cls)
                      if hints[field.name] in (int, str, bool))
        _FIELD_TYPES[cls] = found
    return found


def _named(key: object, convert: Any, *args: Any) -> Any:
    """``convert(*args)``, with the failing key named in the error (the loader logs it before the backup)."""
    try:
        return convert(*args)
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        raise ValueError(f"key {key!r}: {error}") from None


class ConfigFile:
    """Load and persist one JSON config file; subclasses give ``to_json`` and ``from_json``."""

    file_name = ""

    def __init__(self, config_dir: str | Path) -> None:
        self.path = Path(config_dir) / self.file_name
        self._lock = threading.Lock()

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError

    def from_json(self, data: dict[str, Any]) -> None:
        raise NotImplementedError

    def encode(self, pretty: bool = False) -> str:
        return codec.json_dumps(self.to_json(), pretty=pretty)

    def decode(self, text: str) -> None:
        data = codec.json_loads(text)
        if not isinstance(data, dict):
            raise ValueError(f"{self.path.name} must hold a JSON object")
        self.from_json(data)

    def load(self) -> bool:
        """Read the file, or its ``.bak`` copy when it is missing, empty or unreadable; False if neither exists."""
        failure = ""
        for candidate in (self.path, self.path.with_name(self.path.name + ".bak")):
            try:
                text = candidate.read_text(encoding="utf-8")
            except FileNotFoundError:
                continue
            if not text.strip():
                continue
            try:
                self.decode(text)
            except (CodecError, ValueError, TypeError, KeyError) as error:
                _log.error("cannot read %s (%s); trying its backup", candidate, error)
                failure = f" (last error: {error})"
                continue
            return True
        if self.path.exists():
            raise StoreError(f"{self.path} and its backup cannot be read{failure}: fix or remove them")
        return False

    def persist(self) -> None:
        with self._lock:
            text = self.encode(pretty=True)
            try:
                write_file_safely(self.path, text)
            except OSError as error:  # a full disk, mostly: the table stays in memory and is written next time
                _log.error("persisting %s failed: %s", self.path, error)


class TopicConfigTable(ConfigFile):
    file_name = "topics.json"

    def __init__(self, config_dir: str | Path) -> None:
        super().__init__(config_dir)
        self.table: dict[str, TopicConfig] = {}
        self.data_version = DataVersion()

    def to_json(self) -> dict[str, Any]:
        return TopicConfigSerializeWrapper(dict(self.table), self.data_version).to_json()

    def put(self, config: TopicConfig) -> None:
        self.table[checked_config(config).topic_name] = config

    def from_json(self, data: dict[str, Any]) -> None:
        table = {}
        for name, config in (data.get("topicConfigTable") or {}).items():
            table[str(name)] = _named(name, lambda c: checked_config(TopicConfig.from_json(c)), config)
        version = data.get("dataVersion")
        self.data_version = _named("dataVersion", DataVersion.from_json, version) if version is not None \
            else DataVersion(0, 0)
        self.table = table


class ConsumerOffsetTable(ConfigFile):
    file_name = "consumerOffset.json"

    def __init__(self, config_dir: str | Path) -> None:
        super().__init__(config_dir)
        #: ``"topic@group"`` -> queue id -> committed offset
        self.offset_table: dict[str, dict[int, int]] = {}

    def commit_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        if group.__class__ is not str or topic.__class__ is not str:
            raise ValueError(f"a consumer offset needs a str group and topic, not {group!r} and {topic!r}")
        checked_int(queue_id, "queueId", _INT32)
        checked_int(offset, "commitOffset")
        self.offset_table.setdefault(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", {})[queue_id] = offset

    def query_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset, or -1 when the group never committed one for this queue."""
        return self.offset_table.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", {}).get(queue_id, -1)

    def to_json(self) -> dict[str, Any]:
        return {"offsetTable": {key: dict(sorted(queues.items())) for key, queues in sorted(self.offset_table.items())}}

    def from_json(self, data: dict[str, Any]) -> None:
        table = {}
        for key, queues in (data.get("offsetTable") or {}).items():
            table[str(key)] = _named(key, _int_map, queues)
        self.offset_table = table


class SubscriptionGroupTable(ConfigFile):
    file_name = "subscriptionGroup.json"

    def __init__(self, config_dir: str | Path) -> None:
        super().__init__(config_dir)
        self.table: dict[str, SubscriptionGroupConfig] = {}
        self.data_version = DataVersion()

    def to_json(self) -> dict[str, Any]:
        return {
            "dataVersion": self.data_version.to_json(),
            "subscriptionGroupTable": {name: group.to_json() for name, group in sorted(self.table.items())},
        }

    def put(self, group: SubscriptionGroupConfig) -> None:
        self.table[checked_config(group).group_name] = group

    def from_json(self, data: dict[str, Any]) -> None:
        table = {}
        for name, group in (data.get("subscriptionGroupTable") or {}).items():
            table[str(name)] = _named(name, lambda g: checked_config(SubscriptionGroupConfig.from_json(g)), group)
        version = data.get("dataVersion")
        self.data_version = _named("dataVersion", DataVersion.from_json, version) if version is not None \
            else DataVersion()
        self.table = table


class DelayOffsetTable(ConfigFile):
    file_name = "delayOffset.json"

    def __init__(self, config_dir: str | Path) -> None:
        super().__init__(config_dir)
        #: delay level -> the next offset to deliver in queue (level - 1) of SCHEDULE_TOPIC_XXXX
        self.offset_table: dict[int, int] = {}

    def to_json(self) -> dict[str, Any]:
        return {"offsetTable": dict(sorted(self.offset_table.items()))}

    def set_offset(self, level: int, offset: int) -> None:
        self.offset_table[checked_int(level, "delay level", _INT32)] = checked_int(offset, "delay offset")

    def from_json(self, data: dict[str, Any]) -> None:
        self.offset_table = _named("offsetTable", _int_map, data.get("offsetTable"))


def _int_map(data: object) -> dict[int, int]:
    """A JSON ``{int: long}`` map (queue id or level to offset); ``null`` reads as empty, as Java's."""
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, not {data!r}")
    return {int(key): checked_int(int(value) if value.__class__ is not bool else value, f"the value of {key!r}")
            for key, value in data.items()}
