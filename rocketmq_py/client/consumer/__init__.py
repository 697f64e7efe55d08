"""Consumers: :class:`AsyncPushConsumer` and :class:`AsyncLitePullConsumer` (asyncio), :class:`PushConsumer` and
:class:`LitePullConsumer` (blocking)."""
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
