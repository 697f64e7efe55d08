"""Topic configuration (Java's common/TopicConfig, TopicFilterType and TopicConfigSerializeWrapper).

``TopicConfig`` is a JSON bean (``topics.json``, register bodies) and has a
compact text form, ``"name read write perm filterType"``, used in compressed
broker registrations. ``TopicConfigSerializeWrapper`` is the
``{"dataVersion":...,"topicConfigTable":{...}}`` body of ``topics.json``.
"""
from __future__ import annotations

from typing import Any

from dataclasses import dataclass, field

from rocketmq_py import codec
from rocketmq_py.common.data_version import DataVersion
from rocketmq_py.common.json_shape import INT, LONG, MapOf

SINGLE_TAG = "SINGLE_TAG"
MULTI_TAG = "MULTI_TAG"
TOPIC_FILTER_TYPES = (SINGLE_TAG, MULTI_TAG)

#: ``PermName.PERM_READ | PermName.PERM_WRITE``
DEFAULT_PERM = 6
DEFAULT_QUEUE_NUMS = 16


#: The types of Java's TopicConfig and TopicConfigSerializeWrapper, for :mod:`rocketmq_py.common.json_shape`.
TOPIC_CONFIG_SHAPE = {
    "topicName": str, "readQueueNums": INT, "writeQueueNums": INT, "perm": INT, "topicFilterType": str,
    "topicSysFlag": INT, "order": bool,
}
DATA_VERSION_SHAPE = {"timestamp": LONG, "counter": LONG}
TOPIC_CONFIG_WRAPPER_SHAPE = {"topicConfigTable": MapOf(TOPIC_CONFIG_SHAPE), "dataVersion": DATA_VERSION_SHAPE}

@dataclass
class TopicConfig:
    topic_name: str
    read_queue_nums: int = DEFAULT_QUEUE_NUMS
    write_queue_nums: int = DEFAULT_QUEUE_NUMS
    perm: int = DEFAULT_PERM
    topic_filter_type: str = SINGLE_TAG
    topic_sys_flag: int = 0
    order: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "order": self.order,
            "perm": self.perm,
            "readQueueNums": self.read_queue_nums,
            "topicFilterType": self.topic_filter_type,
            "topicName": self.topic_name,
            "topicSysFlag": self.topic_sys_flag,
            "writeQueueNums": self.write_queue_nums,
        }

    @classmethod
    def from_json(cls, data: object) -> "TopicConfig":
        if not isinstance(data, dict):
            raise ValueError(f"a topic config must be a JSON object, not {type(data).__name__}")
        filter_type = data.get("topicFilterType") or SINGLE_TAG
        if filter_type not in TOPIC_FILTER_TYPES:
            raise ValueError(f"unknown topicFilterType {filter_type!r}")
        return cls(
            topic_name=data.get("topicName") or "",
            read_queue_nums=int(data.get("readQueueNums", DEFAULT_QUEUE_NUMS)),
            write_queue_nums=int(data.get("writeQueueNums", DEFAULT_QUEUE_NUMS)),
            perm=int(data.get("perm", DEFAULT_PERM)),
            topic_filter_type=filter_type,
            topic_sys_flag=int(data.get("topicSysFlag", 0)),
            order=bool(data.get("order", False)),
        )

    def encode_compact(self) -> str:
        """The space-separated form of a compressed registration (drops topicSysFlag and order)."""
        return (f"{self.topic_name} {self.read_queue_nums} {self.write_queue_nums} "
                f"{self.perm} {self.topic_filter_type}")

    @classmethod
    def decode_compact(cls, text: str) -> "TopicConfig":
        parts = text.split(" ")
        if len(parts) != 5:
            raise ValueError(f"a compact topic config has 5 space-separated fields, got {text!r}")
        name, read, write, perm, filter_type = parts
        if filter_type not in TOPIC_FILTER_TYPES:
            raise ValueError(f"unknown topic filter type {filter_type!r} in {text!r}")
        return cls(name, int(read), int(write), int(perm), filter_type)


@dataclass
class TopicConfigSerializeWrapper:
    topic_config_table: dict[str, TopicConfig] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)

    def to_json(self) -> dict[str, Any]:
        return {
            "dataVersion": self.data_version.to_json(),
            "topicConfigTable": {name: config.to_json() for name, config in sorted(self.topic_config_table.items())},
        }

    @classmethod
    def from_json(cls, data: object) -> "TopicConfigSerializeWrapper":
        if not isinstance(data, dict):
            raise ValueError(f"a topic config table must be a JSON object, not {type(data).__name__}")
        table = {}
        for name, config in (data.get("topicConfigTable") or {}).items():
            table[str(name)] = TopicConfig.from_json(config)
        version = data.get("dataVersion")
        return cls(table, DataVersion.from_json(version) if version is not None else DataVersion(0, 0))

    def encode(self, pretty: bool = False) -> bytes:
        return codec.json_dumps(self.to_json(), pretty=pretty).encode()

    @classmethod
    def decode(cls, body: bytes | str) -> "TopicConfigSerializeWrapper":
        return cls.from_json(codec.json_loads(body))
