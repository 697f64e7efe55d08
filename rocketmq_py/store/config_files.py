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

from typing import Any

import logging
import threading
from pathlib import Path

from rocketmq_py import codec
from rocketmq_py.common.config_file import write_file_safely
from rocketmq_py.common.data_version import DataVersion
from rocketmq_py.common.subscription_group import SubscriptionGroupConfig
from rocketmq_py.common.topic_config import TopicConfig, TopicConfigSerializeWrapper
from rocketmq_py.errors import CodecError
from rocketmq_py.errors import StoreError

_log = logging.getLogger(__name__)

TOPIC_GROUP_SEPARATOR = "@"


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
                continue
            return True
        if self.path.exists():
            raise StoreError(f"{self.path} and its backup cannot be read: fix or remove them")
        return False

    def persist(self) -> None:
        with self._lock:
            text = self.encode(pretty=True)
            try:
                write_file_safely(self.path, text)
            except OSError:
                _log.exception("persisting %s failed", self.path)


class TopicConfigTable(ConfigFile):
    file_name = "topics.json"

    def __init__(self, config_dir: str | Path) -> None:
        super().__init__(config_dir)
        self.table: dict[str, TopicConfig] = {}
        self.data_version = DataVersion()

    def to_json(self) -> dict[str, Any]:
        return TopicConfigSerializeWrapper(dict(self.table), self.data_version).to_json()

    def from_json(self, data: dict[str, Any]) -> None:
        wrapper = TopicConfigSerializeWrapper.from_json(data)
        self.table = wrapper.topic_config_table
        self.data_version = wrapper.data_version


class ConsumerOffsetTable(ConfigFile):
    file_name = "consumerOffset.json"

    def __init__(self, config_dir: str | Path) -> None:
        super().__init__(config_dir)
        #: ``"topic@group"`` -> queue id -> committed offset
        self.offset_table: dict[str, dict[int, int]] = {}

    def commit_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        self.offset_table.setdefault(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", {})[queue_id] = offset

    def query_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset, or -1 when the group never committed one for this queue."""
        return self.offset_table.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", {}).get(queue_id, -1)

    def to_json(self) -> dict[str, Any]:
        return {"offsetTable": {key: dict(sorted(queues.items())) for key, queues in sorted(self.offset_table.items())}}

    def from_json(self, data: dict[str, Any]) -> None:
        table = {}
        for key, queues in (data.get("offsetTable") or {}).items():
            table[str(key)] = {int(queue_id): int(offset) for queue_id, offset in (queues or {}).items()}
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

    def from_json(self, data: dict[str, Any]) -> None:
        self.table = {str(name): SubscriptionGroupConfig.from_json(group)
                      for name, group in (data.get("subscriptionGroupTable") or {}).items()}
        version = data.get("dataVersion")
        self.data_version = DataVersion.from_json(version) if version is not None else DataVersion()


class DelayOffsetTable(ConfigFile):
    file_name = "delayOffset.json"

    def __init__(self, config_dir: str | Path) -> None:
        super().__init__(config_dir)
        #: delay level -> the next offset to deliver in queue (level - 1) of SCHEDULE_TOPIC_XXXX
        self.offset_table: dict[int, int] = {}

    def to_json(self) -> dict[str, Any]:
        return {"offsetTable": dict(sorted(self.offset_table.items()))}

    def from_json(self, data: dict[str, Any]) -> None:
        self.offset_table = {int(level): int(offset) for level, offset in (data.get("offsetTable") or {}).items()}
