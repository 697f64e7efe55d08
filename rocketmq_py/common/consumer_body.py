"""JSON bodies of the consumer RPCs (Java's common/protocol/body: LockBatchRequestBody, LockBatchResponseBody,
UnlockBatchRequestBody, GetConsumerListByGroupResponseBody, ResetOffsetBody, GetConsumerStatusBody,
ConsumerRunningInfo, ProcessQueueInfo, ConsumeStatus and ConsumeMessageDirectlyResult). The last four go
both ways: a consumer encodes them, an admin client decodes them.

fastjson writes bean properties in alphabetical order, and a map keyed by
MessageQueue with the queue object itself as the key (``{{"brokerName":..}:5}``);
:class:`JsonObjectKey` carries such keys both ways.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from rocketmq_py import codec
from rocketmq_py.codec import JsonObjectKey
from rocketmq_py.common.filter import SubscriptionData
from rocketmq_py.common.message_queue import MessageQueue


def queue_key(queue: MessageQueue) -> JsonObjectKey:
    return JsonObjectKey(queue.to_json())


def queue_from_key(key: object) -> MessageQueue:
    if isinstance(key, JsonObjectKey):
        return MessageQueue.from_json(key.to_dict())
    if isinstance(key, dict):
        return MessageQueue.from_json(key)
    raise ValueError(f"a message queue key must be a JSON object, got {key!r}")


def encode_queue_table(table: Mapping[MessageQueue, object]) -> dict[Any, Any]:
    return {queue_key(queue): value for queue, value in sorted(table.items())}


def decode_queue_table(table: object) -> dict[MessageQueue, int]:
    if not isinstance(table, dict):
        return {}
    return {queue_from_key(key): int(value) for key, value in table.items()}


def load_object(body: bytes | None, what: str) -> dict[str, Any]:
    """The JSON object of a ``body`` (``{}`` when there is none); ValueError when it is not one."""
    data = codec.json_loads(body or b"{}")
    if not isinstance(data, dict):
        raise ValueError(f"a {what} body must be a JSON object")
    return data


def lock_batch_request(consumer_group: str, client_id: str, queues: Iterable[MessageQueue]) -> bytes:
    """LockBatchRequestBody and UnlockBatchRequestBody have the same shape."""
    value = {
        "clientId": client_id,
        "consumerGroup": consumer_group,
        "mqSet": [queue.to_json() for queue in sorted(queues)],
    }
    return codec.json_dumps(value).encode()


def decode_lock_batch_response(body: bytes | None) -> set[MessageQueue]:
    if not body:
        return set()
    data = load_object(body, "LockBatchResponseBody")
    return {MessageQueue.from_json(item) for item in data.get("lockOKMQSet") or []}


def decode_consumer_id_list(body: bytes | None) -> list[str]:
    if not body:
        return []
    data = load_object(body, "GetConsumerListByGroupResponseBody")
    return [str(item) for item in data.get("consumerIdList") or []]


def decode_reset_offset_body(body: bytes | None) -> dict[MessageQueue, int]:
    if not body:
        return {}
    return decode_queue_table(load_object(body, "ResetOffsetBody").get("offsetTable"))


def encode_consumer_status_body(table: Mapping[MessageQueue, int]) -> bytes:
    value = {"consumerTable": {}, "messageQueueTable": encode_queue_table(table)}
    return codec.json_dumps(value).encode()


class CMResult(str, enum.Enum):
    CR_SUCCESS = "CR_SUCCESS"
    CR_LATER = "CR_LATER"
    CR_ROLLBACK = "CR_ROLLBACK"
    CR_COMMIT = "CR_COMMIT"
    CR_THROW_EXCEPTION = "CR_THROW_EXCEPTION"
    CR_RETURN_NULL = "CR_RETURN_NULL"


@dataclass
class ConsumeMessageDirectlyResult:
    order: bool = False
    auto_commit: bool = True
    consume_result: CMResult | None = None
    remark: str | None = None
    spent_time_mills: int = 0

    def encode(self) -> bytes:
        value: dict[str, Any] = {"autoCommit": self.auto_commit}
        if self.consume_result is not None:
            value["consumeResult"] = self.consume_result.value
        value["order"] = self.order
        if self.remark is not None:
            value["remark"] = self.remark
        value["spentTimeMills"] = self.spent_time_mills
        return codec.json_dumps(value).encode()

    @classmethod
    def decode(cls, body: bytes | None) -> "ConsumeMessageDirectlyResult":
        data = load_object(body, "ConsumeMessageDirectlyResult")
        result = data.get("consumeResult")
        return cls(bool(data.get("order", False)), bool(data.get("autoCommit", True)),
                   CMResult(result) if result else None, data.get("remark"), int(data.get("spentTimeMills", 0)))


@dataclass
class ProcessQueueInfo:
    commit_offset: int = 0
    cached_msg_min_offset: int = 0
    cached_msg_max_offset: int = 0
    cached_msg_count: int = 0
    cached_msg_size_in_mib: int = 0
    transaction_msg_min_offset: int = 0
    transaction_msg_max_offset: int = 0
    transaction_msg_count: int = 0
    locked: bool = False
    try_unlock_times: int = 0
    last_lock_timestamp: int = 0
    droped: bool = False
    last_pull_timestamp: int = 0
    last_consume_timestamp: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "cachedMsgCount": self.cached_msg_count,
            "cachedMsgMaxOffset": self.cached_msg_max_offset,
            "cachedMsgMinOffset": self.cached_msg_min_offset,
            "cachedMsgSizeInMiB": self.cached_msg_size_in_mib,
            "commitOffset": self.commit_offset,
            "droped": self.droped,
            "lastConsumeTimestamp": self.last_consume_timestamp,
            "lastLockTimestamp": self.last_lock_timestamp,
            "lastPullTimestamp": self.last_pull_timestamp,
            "locked": self.locked,
            "transactionMsgCount": self.transaction_msg_count,
            "transactionMsgMaxOffset": self.transaction_msg_max_offset,
            "transactionMsgMinOffset": self.transaction_msg_min_offset,
            "tryUnlockTimes": self.try_unlock_times,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "ProcessQueueInfo":
        values: dict[str, Any] = {name: kind(data[key]) for name, key, kind in _PROCESS_QUEUE_FIELDS if key in data}
        return cls(**values)


@dataclass
class ConsumeStatus:
    pull_rt: float = 0.0
    pull_tps: float = 0.0
    consume_rt: float = 0.0
    consume_ok_tps: float = 0.0
    consume_failed_tps: float = 0.0
    consume_failed_msgs: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "consumeFailedMsgs": self.consume_failed_msgs,
            "consumeFailedTPS": self.consume_failed_tps,
            "consumeOKTPS": self.consume_ok_tps,
            "consumeRT": self.consume_rt,
            "pullRT": self.pull_rt,
            "pullTPS": self.pull_tps,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "ConsumeStatus":
        return cls(float(data.get("pullRT", 0.0)), float(data.get("pullTPS", 0.0)), float(data.get("consumeRT", 0.0)),
                   float(data.get("consumeOKTPS", 0.0)), float(data.get("consumeFailedTPS", 0.0)),
                   int(data.get("consumeFailedMsgs", 0)))


#: (field, JSON key, type) of ProcessQueueInfo.
_PROCESS_QUEUE_FIELDS = (
    ("commit_offset", "commitOffset", int), ("cached_msg_min_offset", "cachedMsgMinOffset", int),
    ("cached_msg_max_offset", "cachedMsgMaxOffset", int), ("cached_msg_count", "cachedMsgCount", int),
    ("cached_msg_size_in_mib", "cachedMsgSizeInMiB", int),
    ("transaction_msg_min_offset", "transactionMsgMinOffset", int),
    ("transaction_msg_max_offset", "transactionMsgMaxOffset", int),
    ("transaction_msg_count", "transactionMsgCount", int), ("locked", "locked", bool),
    ("try_unlock_times", "tryUnlockTimes", int), ("last_lock_timestamp", "lastLockTimestamp", int),
    ("droped", "droped", bool), ("last_pull_timestamp", "lastPullTimestamp", int),
    ("last_consume_timestamp", "lastConsumeTimestamp", int),
)

#: Property names of ConsumerRunningInfo.
PROP_NAMESERVER_ADDR = "PROP_NAMESERVER_ADDR"
PROP_THREADPOOL_CORE_SIZE = "PROP_THREADPOOL_CORE_SIZE"
PROP_CONSUME_ORDERLY = "PROP_CONSUMEORDERLY"
PROP_CONSUME_TYPE = "PROP_CONSUME_TYPE"
PROP_CLIENT_VERSION = "PROP_CLIENT_VERSION"
PROP_CONSUMER_START_TIMESTAMP = "PROP_CONSUMER_START_TIMESTAMP"


@dataclass
class ConsumerRunningInfo:
    properties: dict[str, str] = field(default_factory=dict)
    subscription_set: list[SubscriptionData] = field(default_factory=list)
    mq_table: dict[MessageQueue, ProcessQueueInfo] = field(default_factory=dict)
    status_table: dict[str, ConsumeStatus] = field(default_factory=dict)
    jstack: str | None = None

    def encode(self) -> bytes:
        subscriptions = sorted(self.subscription_set, key=lambda s: f"{s.topic}@{s.sub_string}")
        value: dict[str, Any] = {}
        if self.jstack is not None:
            value["jstack"] = self.jstack
        value["mqTable"] = {queue_key(queue): info.to_json() for queue, info in sorted(self.mq_table.items())}
        value["properties"] = {str(k): str(v) for k, v in sorted(self.properties.items())}
        value["statusTable"] = {topic: status.to_json() for topic, status in sorted(self.status_table.items())}
        value["subscriptionSet"] = [sub.to_json() for sub in subscriptions]
        return codec.json_dumps(value).encode()

    @classmethod
    def decode(cls, body: bytes | None) -> "ConsumerRunningInfo":
        data = load_object(body, "ConsumerRunningInfo")
        mq_table = data.get("mqTable") or {}
        status_table = data.get("statusTable") or {}
        return cls(
            {str(key): str(value) for key, value in (data.get("properties") or {}).items()},
            [SubscriptionData.from_json(sub) for sub in data.get("subscriptionSet") or []],
            {queue_from_key(key): ProcessQueueInfo.from_json(info) for key, info in mq_table.items()},
            {str(topic): ConsumeStatus.from_json(status) for topic, status in status_table.items()},
            data.get("jstack"),
        )
