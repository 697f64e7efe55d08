"""The message store: CommitLog, ConsumeQueue, index, checkpoint, flush and clean services.

Python control flow over the byte layouts of :mod:`rocketmq_py.store.layout`;
the broker talks to :class:`MessageStore`.
"""
from rocketmq_py.store.config import ASYNC_FLUSH, SYNC_FLUSH, MessageStoreConfig
from rocketmq_py.errors import StoreError
from rocketmq_py.store.message import StoreMessage, StoreMessageBatch
from rocketmq_py.store.message_store import MessageStore
from rocketmq_py.store.reads import MessageFilter, TagCodeFilter
from rocketmq_py.store.results import (
    AppendMessageResult,
    GetMessageResult,
    GetMessageStatus,
    PutMessageResult,
    PutMessageStatus,
    QueryMessageResult,
)

__all__ = [
    "ASYNC_FLUSH",
    "SYNC_FLUSH",
    "AppendMessageResult",
    "GetMessageResult",
    "GetMessageStatus",
    "MessageFilter",
    "MessageStore",
    "MessageStoreConfig",
    "PutMessageResult",
    "PutMessageStatus",
    "QueryMessageResult",
    "StoreError",
    "StoreMessage",
    "StoreMessageBatch",
    "TagCodeFilter",
]
