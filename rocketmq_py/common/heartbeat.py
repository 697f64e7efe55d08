"""The HEART_BEAT body (Java's common/protocol/heartbeat/HeartbeatData, ProducerData, ConsumerData).

fastjson writes bean properties in alphabetical order; the key of the client
id is ``clientID`` (from ``getClientID``).
"""
from __future__ import annotations

from typing import Any

from dataclasses import dataclass, field

from rocketmq_py import codec
from rocketmq_py.common.filter import SUBSCRIPTION_DATA_SHAPE
from rocketmq_py.common.heartbeat_consumer import ConsumeFromWhere, ConsumeType, MessageModel
from rocketmq_py.common.json_shape import check

#: The types of Java's HeartbeatData, for :mod:`rocketmq_py.common.json_shape` (the server checks them).
CONSUMER_DATA_SHAPE = {
    "groupName": str, "consumeType": ConsumeType, "messageModel": MessageModel,
    "consumeFromWhere": ConsumeFromWhere, "subscriptionDataSet": [SUBSCRIPTION_DATA_SHAPE], "unitMode": bool,
}
HEARTBEAT_SHAPE = {"clientID": str, "producerDataSet": [{"groupName": str}], "consumerDataSet": [CONSUMER_DATA_SHAPE]}


@dataclass
class HeartbeatData:
    client_id: str
    producer_groups: list[str] = field(default_factory=list)
    #: ConsumerData objects, already in their JSON form (consumers build them).
    consumer_data: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "clientID": self.client_id,
            "consumerDataSet": self.consumer_data,
            "producerDataSet": [{"groupName": group} for group in self.producer_groups],
        }

    def encode(self) -> bytes:
        return codec.json_dumps(self.to_json()).encode()

    @classmethod
    def decode(cls, body: bytes) -> "HeartbeatData":
        """Raises :class:`~rocketmq_py.errors.BadRequestError` when the body does not have HeartbeatData's types."""
        data = check(codec.json_loads(body), HEARTBEAT_SHAPE, "HeartbeatData")
        return cls(
            data.get("clientID", ""),
            [p.get("groupName", "") for p in data.get("producerDataSet") or []],
            list(data.get("consumerDataSet") or []),
        )
