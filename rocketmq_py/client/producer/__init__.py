"""Producers: :class:`AsyncProducer` (asyncio) and :class:`Producer` (blocking), and their transactional twins."""
from rocketmq_py.client.producer.blocking import Producer
from rocketmq_py.client.producer.core import AsyncProducer
from rocketmq_py.client.producer.request import create_reply_message, send_reply
from rocketmq_py.client.producer.result import LocalTransactionState, SendResult, SendStatus, TransactionSendResult
from rocketmq_py.client.producer.transaction import (
    AsyncTransactionProducer,
    TransactionListener,
    TransactionProducer,
)
from rocketmq_py.client.producer.selector import (
    MessageQueueSelector,
    SelectMessageQueueByHash,
    SelectMessageQueueByRandom,
)

__all__ = [
    "AsyncProducer",
    "AsyncTransactionProducer",
    "TransactionListener",
    "TransactionProducer",
    "LocalTransactionState",
    "MessageQueueSelector",
    "Producer",
    "SelectMessageQueueByHash",
    "SelectMessageQueueByRandom",
    "SendResult",
    "SendStatus",
    "TransactionSendResult",
    "create_reply_message",
    "send_reply",
]
