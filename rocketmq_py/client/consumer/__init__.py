"""Consumers: :class:`AsyncLitePullConsumer` (asyncio) and :class:`LitePullConsumer` (blocking)."""
from rocketmq_py.client.consumer.allocate import (
    AllocateMachineRoomNearby,
    AllocateMessageQueueAveragely,
    AllocateMessageQueueAveragelyByCircle,
    AllocateMessageQueueByConfig,
    AllocateMessageQueueByMachineRoom,
    AllocateMessageQueueConsistentHash,
    AllocateMessageQueueStrategy,
)
from rocketmq_py.client.consumer.blocking import LitePullConsumer
from rocketmq_py.client.consumer.config import LitePullConsumerConfig
from rocketmq_py.client.consumer.lite_pull import AsyncLitePullConsumer
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
    "ConsumeFromWhere",
    "ExpressionType",
    "LitePullConsumer",
    "LitePullConsumerConfig",
    "MessageModel",
    "MessageSelector",
]
