"""JSON bodies of the broker's answers to admin requests, both ways (Java's common/admin TopicOffset,
TopicStatsTable, OffsetWrapper and ConsumeStats, and common/protocol/body Connection, ConsumerConnection,
ProducerConnection, GroupList, BrokerStatsItem and BrokerStatsData).

The broker encodes them (``broker/bodies.py``), the admin client decodes them. fastjson writes bean
properties in alphabetical order, and a map keyed by a MessageQueue with the queue object itself as the key
(``{{"brokerName":..}:{..}}``); both are kept here.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from rocketmq_py import codec
from rocketmq_py.common.consumer_body import load_object, queue_from_key, queue_key
from rocketmq_py.common.filter import SubscriptionData
from rocketmq_py.common.heartbeat_consumer import ConsumeFromWhere, ConsumeType, MessageModel
from rocketmq_py.common.message_queue import MessageQueue


def _encode(value: object) -> bytes:
    return codec.json_dumps(value).encode()


def _queue_table(data: object) -> list[tuple[MessageQueue, dict[str, Any]]]:
    if not isinstance(data, dict):
        return []
    return [(queue_from_key(key), value if isinstance(value, dict) else {}) for key, value in data.items()]


# --- topic statistics (GET_TOPIC_STATS_INFO) ------------------------------------------------------------


@dataclass(frozen=True)
class TopicOffset:
    """One queue of a topic as its broker holds it: the min and max offsets and the store time of the last
    message (0 when the queue is empty)."""

    min_offset: int = 0
    max_offset: int = 0
    last_update_timestamp: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"lastUpdateTimestamp": self.last_update_timestamp, "maxOffset": self.max_offset,
                "minOffset": self.min_offset}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "TopicOffset":
        return cls(int(data.get("minOffset", 0)), int(data.get("maxOffset", 0)),
                   int(data.get("lastUpdateTimestamp", 0)))


@dataclass
class TopicStatsTable:
    """The queues of a topic with their offsets (one broker's answer, or every broker's merged)."""

    offset_table: dict[MessageQueue, TopicOffset] = field(default_factory=dict)

    def encode(self) -> bytes:
        return _encode({"offsetTable": {queue_key(queue): offset.to_json()
                                        for queue, offset in sorted(self.offset_table.items())}})

    @classmethod
    def decode(cls, body: bytes | None) -> "TopicStatsTable":
        data = load_object(body, "TopicStatsTable")
        return cls({queue: TopicOffset.from_json(value) for queue, value in _queue_table(data.get("offsetTable"))})


# --- consumer progress (GET_CONSUME_STATS) ----------------------------------------------------------------


@dataclass(frozen=True)
class OffsetWrapper:
    """One queue of a group's progress: the broker's max offset, the group's committed offset and the store
    time of the last message the group consumed (0 when it consumed none)."""

    broker_offset: int = 0
    consumer_offset: int = 0
    last_timestamp: int = 0

    @property
    def diff(self) -> int:
        """The messages not consumed yet (the lag)."""
        return self.broker_offset - self.consumer_offset

    def to_json(self) -> dict[str, Any]:
        return {"brokerOffset": self.broker_offset, "consumerOffset": self.consumer_offset,
                "lastTimestamp": self.last_timestamp}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "OffsetWrapper":
        return cls(int(data.get("brokerOffset", 0)), int(data.get("consumerOffset", 0)),
                   int(data.get("lastTimestamp", 0)))


@dataclass
class ConsumeStats:
    """A group's progress on every queue it consumes, and its consume rate (messages per second)."""

    offset_table: dict[MessageQueue, OffsetWrapper] = field(default_factory=dict)
    consume_tps: float = 0.0

    def compute_total_diff(self) -> int:
        """The lag summed over every queue."""
        return sum(offset.diff for offset in self.offset_table.values())

    def to_json(self) -> dict[str, Any]:
        table = {queue_key(queue): offset.to_json() for queue, offset in sorted(self.offset_table.items())}
        return {"consumeTps": float(self.consume_tps), "offsetTable": table}

    def encode(self) -> bytes:
        return _encode(self.to_json())

    @classmethod
    def decode(cls, body: bytes | None) -> "ConsumeStats":
        data = load_object(body, "ConsumeStats")
        table = {queue: OffsetWrapper.from_json(value) for queue, value in _queue_table(data.get("offsetTable"))}
        return cls(table, float(data.get("consumeTps", 0.0)))


# --- connections (GET_CONSUMER_CONNECTION_LIST, GET_PRODUCER_CONNECTION_LIST) ----------------------------


@dataclass(frozen=True)
class Connection:
    """One client connected to a broker: its client id, address, language (``JAVA``, ``PYTHON``, ...) and
    version ordinal (see :func:`rocketmq_py.common.mq_version.version_desc`)."""

    client_id: str
    client_addr: str
    language: str
    version: int

    def to_json(self) -> dict[str, Any]:
        return {"clientAddr": self.client_addr, "clientId": self.client_id, "language": self.language,
                "version": self.version}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Connection":
        return cls(str(data.get("clientId", "")), str(data.get("clientAddr", "")), str(data.get("language", "")),
                   int(data.get("version", 0)))


def _connections(data: object) -> list[Connection]:
    if not isinstance(data, list):
        return []
    return [Connection.from_json(item) for item in data if isinstance(item, dict)]


@dataclass
class ConsumerConnection:
    """The online consumers of a group on one broker, with the group's subscriptions and settings."""

    connection_set: list[Connection] = field(default_factory=list)
    subscription_table: dict[str, SubscriptionData] = field(default_factory=dict)
    consume_type: ConsumeType | None = None
    message_model: MessageModel | None = None
    consume_from_where: ConsumeFromWhere | None = None

    def compute_min_version(self) -> int:
        """The lowest version among the connections (Java's computeMinVersion)."""
        return min((connection.version for connection in self.connection_set), default=2147483647)

    def encode(self) -> bytes:
        value: dict[str, Any] = {"connectionSet": [connection.to_json() for connection in self.connection_set]}
        if self.consume_from_where is not None:
            value["consumeFromWhere"] = self.consume_from_where.value
        if self.consume_type is not None:
            value["consumeType"] = self.consume_type.value
        if self.message_model is not None:
            value["messageModel"] = self.message_model.value
        value["subscriptionTable"] = {topic: sub.to_json() for topic, sub in sorted(self.subscription_table.items())}
        return _encode(value)

    @classmethod
    def decode(cls, body: bytes | None) -> "ConsumerConnection":
        data = load_object(body, "ConsumerConnection")
        subscriptions = data.get("subscriptionTable") or {}
        return cls(
            _connections(data.get("connectionSet")),
            {str(topic): SubscriptionData.from_json(sub) for topic, sub in subscriptions.items()},
            ConsumeType(data["consumeType"]) if data.get("consumeType") else None,
            MessageModel(data["messageModel"]) if data.get("messageModel") else None,
            ConsumeFromWhere(data["consumeFromWhere"]) if data.get("consumeFromWhere") else None,
        )


@dataclass
class ProducerConnection:
    """The connected producers of a group on one broker."""

    connection_set: list[Connection] = field(default_factory=list)

    def encode(self) -> bytes:
        return _encode({"connectionSet": [connection.to_json() for connection in self.connection_set]})

    @classmethod
    def decode(cls, body: bytes | None) -> "ProducerConnection":
        return cls(_connections(load_object(body, "ProducerConnection").get("connectionSet")))


# --- groups of a topic (QUERY_TOPIC_CONSUME_BY_WHO) ----------------------------------------------------


@dataclass
class GroupList:
    """The consumer groups of a topic (those online and those holding offsets of it)."""

    group_list: set[str] = field(default_factory=set)

    def encode(self) -> bytes:
        return _encode({"groupList": sorted(self.group_list)})

    @classmethod
    def decode(cls, body: bytes | None) -> "GroupList":
        return cls({str(group) for group in load_object(body, "GroupList").get("groupList") or []})


# --- broker statistics (VIEW_BROKER_STATS_DATA) -------------------------------------------------------


@dataclass(frozen=True)
class BrokerStatsItem:
    """One window of a statistic: its ``sum``, ``tps`` (sum per second) and ``avgpt`` (sum per addition)."""

    sum: int = 0
    tps: float = 0.0
    avgpt: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"avgpt": self.avgpt, "sum": self.sum, "tps": self.tps}

    @classmethod
    def from_json(cls, data: object) -> "BrokerStatsItem":
        if not isinstance(data, dict):
            return cls()
        return cls(int(data.get("sum", 0)), float(data.get("tps", 0.0)), float(data.get("avgpt", 0.0)))


@dataclass(frozen=True)
class BrokerStatsData:
    """A statistic of a broker (``TOPIC_PUT_NUMS``, ``GROUP_GET_NUMS``, ...) over the last minute, hour
    and day."""

    stats_minute: BrokerStatsItem = BrokerStatsItem()
    stats_hour: BrokerStatsItem = BrokerStatsItem()
    stats_day: BrokerStatsItem = BrokerStatsItem()

    def compute_24_hour_sum(self) -> int:
        """The day's sum, else the hour's, else the minute's (Java's StatsAllSubCommand.compute24HourSum)."""
        for item in (self.stats_day, self.stats_hour, self.stats_minute):
            if item.sum != 0:
                return item.sum
        return 0

    def encode(self) -> bytes:
        return _encode({"statsDay": self.stats_day.to_json(), "statsHour": self.stats_hour.to_json(),
                        "statsMinute": self.stats_minute.to_json()})

    @classmethod
    def decode(cls, body: bytes | None) -> "BrokerStatsData":
        data = load_object(body, "BrokerStatsData")
        return cls(BrokerStatsItem.from_json(data.get("statsMinute")), BrokerStatsItem.from_json(data.get("statsHour")),
                   BrokerStatsItem.from_json(data.get("statsDay")))
