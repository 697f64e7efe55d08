"""Producers: :class:`AsyncProducer` (asyncio) and :class:`Producer` (blocking), and their transactional twins."""
from __future__ import annotations

from typing import TYPE_CHECKING

from rocketmq_py._lazy import lazy_exports

#: public name -> the module that defines it (imported on first access, so a blocking producer does not
#: pay for the transactional one)
_LAZY_NAMES: dict[str, str] = {
    "AsyncProducer": "rocketmq_py.client.producer.core",
    "AsyncTransactionProducer": "rocketmq_py.client.producer.transaction",
    "TransactionListener": "rocketmq_py.client.producer.transaction",
    "TransactionProducer": "rocketmq_py.client.producer.transaction",
    "LocalTransactionState": "rocketmq_py.client.producer.result",
    "MessageQueueSelector": "rocketmq_py.client.producer.selector",
    "Producer": "rocketmq_py.client.producer.blocking",
    "SelectMessageQueueByHash": "rocketmq_py.client.producer.selector",
    "SelectMessageQueueByRandom": "rocketmq_py.client.producer.selector",
    "SendResult": "rocketmq_py.client.producer.result",
    "SendStatus": "rocketmq_py.client.producer.result",
    "TransactionSendResult": "rocketmq_py.client.producer.result",
    "create_reply_message": "rocketmq_py.client.producer.request",
    "send_reply": "rocketmq_py.client.producer.request",
}

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

if TYPE_CHECKING:
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

__getattr__, __dir__ = lazy_exports(__name__, _LAZY_NAMES)
