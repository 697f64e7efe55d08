"""The consumer part of a HEART_BEAT body (Java's common/protocol/heartbeat/ConsumerData, ConsumeType,
MessageModel and common/consumer/ConsumeFromWhere); enums travel by name."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rocketmq_py.common.filter import SubscriptionData


# The members of each enum are in Java's declaration order, which gives the ordinals fastjson accepts.
class ConsumeType(str, enum.Enum):
    CONSUME_ACTIVELY = "CONSUME_ACTIVELY"
    CONSUME_PASSIVELY = "CONSUME_PASSIVELY"


class MessageModel(str, enum.Enum):
    """CLUSTERING: each message goes to one consumer of the group; BROADCASTING: to every consumer."""

    BROADCASTING = "BROADCASTING"
    CLUSTERING = "CLUSTERING"


class ConsumeFromWhere(str, enum.Enum):
    """Where a group with no committed offset starts on a queue (Java's ConsumeFromWhere)."""

    # Java's declaration order: fastjson reads a number as the ordinal in this order (the C++ client
    # sends numbers), so the members must stay in it.
    CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST = "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST"
    CONSUME_FROM_MIN_OFFSET = "CONSUME_FROM_MIN_OFFSET"
    CONSUME_FROM_MAX_OFFSET = "CONSUME_FROM_MAX_OFFSET"
    CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


@dataclass
class ConsumerData:
    group_name: str
    consume_type: ConsumeType
    message_model: MessageModel
    consume_from_where: ConsumeFromWhere
    subscription_data_set: list[SubscriptionData] = field(default_factory=list)
    unit_mode: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "consumeFromWhere": self.consume_from_where.value,
            "consumeType": self.consume_type.value,
            "groupName": self.group_name,
            "messageModel": self.message_model.value,
            "subscriptionDataSet": [sub.to_json() for sub in self.subscription_data_set],
            "unitMode": self.unit_mode,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "ConsumerData":
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.common.filter import SubscriptionData

        return cls(
            data.get("groupName", ""),
            ConsumeType(data.get("consumeType", ConsumeType.CONSUME_PASSIVELY.value)),
            MessageModel(data.get("messageModel", MessageModel.CLUSTERING.value)),
            ConsumeFromWhere(data.get("consumeFromWhere", ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET.value)),
            [SubscriptionData.from_json(sub) for sub in data.get("subscriptionDataSet") or []],
            bool(data.get("unitMode", False)),
        )
