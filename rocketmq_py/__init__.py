"""rocketmq-py: Apache RocketMQ 4.x, wire- and store-compatible with the Java 4.9 release.

The client API is importable from here (``from rocketmq_py import Producer, Message``). The names are
loaded on first use, so ``import rocketmq_py`` stays cheap and a producer does not pay for the consumers
(how the package keeps imports cheap: ``rocketmq_py/_lazy.py``).
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from rocketmq_py._lazy import lazy_exports
from rocketmq_py._version import __version__
from rocketmq_py.errors import (
    BrokerResponseError,
    ClientError,
    ClientStateError,
    InvalidArgumentError,
    NoMessageError,
    NoNameServerError,
    NoRouteInfoError,
    RemotingConnectError,
    RemotingError,
    RemotingTimeoutError,
    RequestTimeoutError,
    RocketMQError,
    SendFailedError,
    SendTimeoutError,
)

# A library adds no output of its own: the application configures logging (see docs/python-api.md, "Logging").
logging.getLogger(__name__).addHandler(logging.NullHandler())

#: public name -> the module that defines it (imported on first access)
_LAZY_NAMES: dict[str, str] = {
    "ClientConfig": "rocketmq_py.client.config",
    "ProducerConfig": "rocketmq_py.client.config",
    "AsyncProducer": "rocketmq_py.client.producer.core",
    "Producer": "rocketmq_py.client.producer.blocking",
    "AsyncTransactionProducer": "rocketmq_py.client.producer.transaction",
    "TransactionProducer": "rocketmq_py.client.producer.transaction",
    "TransactionListener": "rocketmq_py.client.producer.transaction",
    "SendResult": "rocketmq_py.client.producer.result",
    "SendStatus": "rocketmq_py.client.producer.result",
    "TransactionSendResult": "rocketmq_py.client.producer.result",
    "LocalTransactionState": "rocketmq_py.client.producer.result",
    "MessageQueueSelector": "rocketmq_py.client.producer.selector",
    "SelectMessageQueueByHash": "rocketmq_py.client.producer.selector",
    "SelectMessageQueueByRandom": "rocketmq_py.client.producer.selector",
    "AsyncPushConsumer": "rocketmq_py.client.consumer.push",
    "AsyncLitePullConsumer": "rocketmq_py.client.consumer.lite_pull",
    "PushConsumer": "rocketmq_py.client.consumer.blocking",
    "LitePullConsumer": "rocketmq_py.client.consumer.blocking",
    "PushConsumerConfig": "rocketmq_py.client.consumer.config",
    "LitePullConsumerConfig": "rocketmq_py.client.consumer.config",
    "RebalanceListener": "rocketmq_py.client.consumer.rebalance_listener",
    "ConsumeConcurrentlyStatus": "rocketmq_py.client.consumer.listener",
    "ConsumeOrderlyStatus": "rocketmq_py.client.consumer.listener",
    "ConsumeConcurrentlyContext": "rocketmq_py.client.consumer.listener",
    "ConsumeOrderlyContext": "rocketmq_py.client.consumer.listener",
    "MessageListenerConcurrently": "rocketmq_py.client.consumer.listener",
    "MessageListenerOrderly": "rocketmq_py.client.consumer.listener",
    "AllocateMessageQueueStrategy": "rocketmq_py.client.consumer.allocate",
    "AllocateMessageQueueAveragely": "rocketmq_py.client.consumer.allocate",
    "AllocateMessageQueueAveragelyByCircle": "rocketmq_py.client.consumer.allocate",
    "AllocateMessageQueueConsistentHash": "rocketmq_py.client.consumer.allocate",
    "Message": "rocketmq_py.common.message",
    "MessageExt": "rocketmq_py.common.message",
    "MessageQueue": "rocketmq_py.common.message_queue",
    "MessageSelector": "rocketmq_py.common.filter",
    "ExpressionType": "rocketmq_py.common.filter",
    "MessageModel": "rocketmq_py.common.heartbeat_consumer",
    "ConsumeFromWhere": "rocketmq_py.common.heartbeat_consumer",
    "TlsConfig": "rocketmq_py.remoting.tls",
    "AsyncAdmin": "rocketmq_py.admin.core",
    "Admin": "rocketmq_py.admin.blocking",
    "AdminConfig": "rocketmq_py.admin.config",
    "QueryResult": "rocketmq_py.client.mq_admin",
}

# Spelled out (not built from _LAZY_NAMES) so type checkers see what is exported.
__all__ = [
    "__version__",
    "BrokerResponseError",
    "ClientError",
    "ClientStateError",
    "InvalidArgumentError",
    "NoMessageError",
    "NoNameServerError",
    "NoRouteInfoError",
    "RemotingConnectError",
    "RemotingError",
    "RemotingTimeoutError",
    "RequestTimeoutError",
    "RocketMQError",
    "SendFailedError",
    "SendTimeoutError",
    "ClientConfig",
    "ProducerConfig",
    "AsyncProducer",
    "Producer",
    "AsyncTransactionProducer",
    "TransactionProducer",
    "TransactionListener",
    "SendResult",
    "SendStatus",
    "TransactionSendResult",
    "LocalTransactionState",
    "MessageQueueSelector",
    "SelectMessageQueueByHash",
    "SelectMessageQueueByRandom",
    "AsyncPushConsumer",
    "AsyncLitePullConsumer",
    "PushConsumer",
    "LitePullConsumer",
    "PushConsumerConfig",
    "LitePullConsumerConfig",
    "RebalanceListener",
    "ConsumeConcurrentlyStatus",
    "ConsumeOrderlyStatus",
    "ConsumeConcurrentlyContext",
    "ConsumeOrderlyContext",
    "MessageListenerConcurrently",
    "MessageListenerOrderly",
    "AllocateMessageQueueStrategy",
    "AllocateMessageQueueAveragely",
    "AllocateMessageQueueAveragelyByCircle",
    "AllocateMessageQueueConsistentHash",
    "Message",
    "MessageExt",
    "MessageQueue",
    "MessageSelector",
    "ExpressionType",
    "MessageModel",
    "ConsumeFromWhere",
    "TlsConfig",
    "AsyncAdmin",
    "Admin",
    "AdminConfig",
    "QueryResult",
]

if TYPE_CHECKING:
    from rocketmq_py.admin.blocking import Admin
    from rocketmq_py.admin.config import AdminConfig
    from rocketmq_py.admin.core import AsyncAdmin
    from rocketmq_py.client.config import ClientConfig, ProducerConfig
    from rocketmq_py.client.consumer.allocate import (
        AllocateMessageQueueAveragely,
        AllocateMessageQueueAveragelyByCircle,
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
    from rocketmq_py.client.consumer.rebalance_listener import RebalanceListener
    from rocketmq_py.client.mq_admin import QueryResult
    from rocketmq_py.client.producer.blocking import Producer
    from rocketmq_py.client.producer.core import AsyncProducer
    from rocketmq_py.client.producer.result import (
        LocalTransactionState,
        SendResult,
        SendStatus,
        TransactionSendResult,
    )
    from rocketmq_py.client.producer.selector import (
        MessageQueueSelector,
        SelectMessageQueueByHash,
        SelectMessageQueueByRandom,
    )
    from rocketmq_py.client.producer.transaction import (
        AsyncTransactionProducer,
        TransactionListener,
        TransactionProducer,
    )
    from rocketmq_py.common.filter import ExpressionType, MessageSelector
    from rocketmq_py.common.heartbeat_consumer import ConsumeFromWhere, MessageModel
    from rocketmq_py.common.message import Message, MessageExt
    from rocketmq_py.common.message_queue import MessageQueue
    from rocketmq_py.remoting.tls import TlsConfig


__getattr__, __dir__ = lazy_exports(__name__, _LAZY_NAMES)
