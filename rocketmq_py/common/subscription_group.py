"""A consumer group's settings on a broker (Java's common/subscription/SubscriptionGroupConfig)."""
from __future__ import annotations

from typing import Any

from dataclasses import dataclass

from rocketmq_py.common.json_shape import INT, LONG

MASTER_ID = 0


#: The types of Java's SubscriptionGroupConfig, for :mod:`rocketmq_py.common.json_shape`.
SUBSCRIPTION_GROUP_SHAPE = {
    "groupName": str, "consumeEnable": bool, "consumeFromMinEnable": bool, "consumeBroadcastEnable": bool,
    "retryQueueNums": INT, "retryMaxTimes": INT, "brokerId": LONG, "whichBrokerWhenConsumeSlowly": LONG,
    "notifyConsumerIdsChangedEnable": bool,
}

@dataclass
class SubscriptionGroupConfig:
    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = MASTER_ID
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerId": self.broker_id,
            "consumeBroadcastEnable": self.consume_broadcast_enable,
            "consumeEnable": self.consume_enable,
            "consumeFromMinEnable": self.consume_from_min_enable,
            "groupName": self.group_name,
            "notifyConsumerIdsChangedEnable": self.notify_consumer_ids_changed_enable,
            "retryMaxTimes": self.retry_max_times,
            "retryQueueNums": self.retry_queue_nums,
            "whichBrokerWhenConsumeSlowly": self.which_broker_when_consume_slowly,
        }

    @classmethod
    def from_json(cls, data: object) -> "SubscriptionGroupConfig":
        if not isinstance(data, dict):
            raise ValueError(f"a subscription group config must be a JSON object, not {type(data).__name__}")
        return cls(
            group_name=data.get("groupName") or "",
            consume_enable=bool(data.get("consumeEnable", True)),
            consume_from_min_enable=bool(data.get("consumeFromMinEnable", True)),
            consume_broadcast_enable=bool(data.get("consumeBroadcastEnable", True)),
            retry_queue_nums=int(data.get("retryQueueNums", 1)),
            retry_max_times=int(data.get("retryMaxTimes", 16)),
            broker_id=int(data.get("brokerId", MASTER_ID)),
            which_broker_when_consume_slowly=int(data.get("whichBrokerWhenConsumeSlowly", 1)),
            notify_consumer_ids_changed_enable=bool(data.get("notifyConsumerIdsChangedEnable", True)),
        )


def decode_subscription_group_wrapper(body: bytes | None) -> dict[str, SubscriptionGroupConfig]:
    """The groups of a GET_ALL_SUBSCRIPTIONGROUP_CONFIG answer (Java's SubscriptionGroupWrapper), by name."""
    # lazy: a broker that only stores groups does not need the JSON codec for this
    from rocketmq_py import codec

    data = codec.json_loads(body or b"{}")
    if not isinstance(data, dict):
        raise ValueError("a SubscriptionGroupWrapper body must be a JSON object")
    table = data.get("subscriptionGroupTable") or {}
    return {str(name): SubscriptionGroupConfig.from_json(group) for name, group in table.items()}
