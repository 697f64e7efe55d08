"""The message store: CommitLog, ConsumeQueue, index, checkpoint, flush and clean services.

Python control flow over the byte layouts of :mod:`rocketmq_py.store.layout`. The broker talks to
:class:`MessageStore` and the public types below, and to nothing else in this package. Records go in one way
(see docs/design-store-write-path.md): ``put_message`` / ``put_messages`` for the records the store builds
from a message or a batch body, ``put_records`` (or ``append_records``) for records built elsewhere with
:func:`encode_record` / :func:`encode_batch`.
"""
from rocketmq_py.store.config import ASYNC_FLUSH, SYNC_FLUSH, MessageStoreConfig
from rocketmq_py.errors import StoreError
from rocketmq_py.store.layout import encode_batch, encode_record, set_queue_id
from rocketmq_py.store.message import StoreMessage, StoreMessageBatch, pack_host
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
from rocketmq_py.store.write_path import PutRecordsResult

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
    "PutRecordsResult",
    "QueryMessageResult",
    "StoreError",
    "StoreMessage",
    "StoreMessageBatch",
    "TagCodeFilter",
    "encode_batch",
    "encode_record",
    "pack_host",
    "set_queue_id",
]
