"""Consumers: :class:`AsyncPushConsumer` and :class:`AsyncLitePullConsumer` (asyncio), :class:`PushConsumer` and
:class:`LitePullConsumer` (blocking)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from rocketmq_py._lazy import lazy_exports

#: public name -> the module that defines it (imported on first access, so a push consumer does not
#: pay for the lite pull one)
_LAZY_NAMES: dict[str, str] = {
    "AllocateMachineRoomNearby": "rocketmq_py.client.consumer.allocate",
    "AllocateMessageQueueAveragely": "rocketmq_py.client.consumer.allocate",
    "AllocateMessageQueueAveragelyByCircle": "rocketmq_py.client.consumer.allocate",
    "AllocateMessageQueueByConfig": "rocketmq_py.client.consumer.allocate",
    "AllocateMessageQueueByMachineRoom": "rocketmq_py.client.consumer.allocate",
    "AllocateMessageQueueConsistentHash": "rocketmq_py.client.consumer.allocate",
    "AllocateMessageQueueStrategy": "rocketmq_py.client.consumer.allocate",
    "AsyncLitePullConsumer": "rocketmq_py.client.consumer.lite_pull",
    "AsyncPushConsumer": "rocketmq_py.client.consumer.push",
    "ConsumeConcurrentlyContext": "rocketmq_py.client.consumer.listener",
    "ConsumeConcurrentlyStatus": "rocketmq_py.client.consumer.listener",
    "ConsumeFromWhere": "rocketmq_py.common.heartbeat_consumer",
    "ConsumeOrderlyContext": "rocketmq_py.client.consumer.listener",
    "ConsumeOrderlyStatus": "rocketmq_py.client.consumer.listener",
    "ExpressionType": "rocketmq_py.common.filter",
    "LitePullConsumer": "rocketmq_py.client.consumer.blocking",
    "LitePullConsumerConfig": "rocketmq_py.client.consumer.config",
    "MessageListenerConcurrently": "rocketmq_py.client.consumer.listener",
    "MessageListenerOrderly": "rocketmq_py.client.consumer.listener",
    "MessageModel": "rocketmq_py.common.heartbeat_consumer",
    "MessageSelector": "rocketmq_py.common.filter",
    "PushConsumer": "rocketmq_py.client.consumer.blocking",
    "PushConsumerConfig": "rocketmq_py.client.consumer.config",
}

__all__ = [
    "AllocateMachineRoomNearby",
    "AllocateMessageQueueAveragely",
    "AllocateMessageQueueAveragelyByCircle",
    "AllocateMessageQueueByConfig",
    "AllocateMessageQueueByMachineRoom",
    "AllocateMessageQueueConsistentHash",
    "AllocateMessageQueueStrategy",
    "AsyncLitePullConsumer",
    "AsyncPushConsumer",
    "ConsumeConcurrentlyContext",
    "ConsumeConcurrentlyStatus",
    "ConsumeFromWhere",
    "ConsumeOrderlyContext",
    "ConsumeOrderlyStatus",
    "ExpressionType",
    "LitePullConsumer",
    "LitePullConsumerConfig",
    "MessageListenerConcurrently",
    "MessageListenerOrderly",
    "MessageModel",
    "MessageSelector",
    "PushConsumer",
    "PushConsumerConfig",
]

if TYPE_CHECKING:
    from rocketmq_py.client.consumer.allocate import (
        AllocateMachineRoomNearby,
        AllocateMessageQueueAveragely,
        AllocateMessageQueueAveragelyByCircle,
        AllocateMessageQueueByConfig,
        AllocateMessageQueueByMachineRoom,
        AllocateMessageQueueConsistentHash,
        AllocateMessageQueueStrategy,
    )
    from rocketmq_py.client.consumer.blocking import LitePullConsumer, PushConsumer
    from rocketmq_py.client.consumer.config import LitePullConsumerConfig, PushConsumerConfig
    from rocketmq_py.client.consumer.lite_pull import AsyncLitePullConsumer
    from rocketmq_py.client.consumer.listener import (
        ConsumeConcurrentlyContext,
        ConsumeConcurrentlyStatus,
        ConsumeOrderlyContext,
        ConsumeOrderlyStatus,
        MessageListenerConcurrently,
        MessageListenerOrderly,
    )
    from rocketmq_py.client.consumer.push import AsyncPushConsumer
    from rocketmq_py.common.filter import ExpressionType, MessageSelector
    from rocketmq_py.common.heartbeat_consumer import ConsumeFromWhere, MessageModel

__getattr__, __dir__ = lazy_exports(__name__, _LAZY_NAMES)
