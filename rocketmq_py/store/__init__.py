"""The message store: CommitLog, ConsumeQueue, index, checkpoint, flush and clean services.

Python control flow over the byte layouts of :mod:`rocketmq_py.store.layout`. The broker talks to
:class:`MessageStore` and the public names below, and imports nothing else from this package
(tests/test_store_boundary.py holds it to that). Records go in one way (see docs/design-store-write-path.md):
``put_message`` / ``put_messages`` for the records the store builds from a message or a batch body,
``put_records`` (or ``append_records``) for records built elsewhere with :func:`encode_record` /
:func:`encode_batch`. Beside it: the roles and flush types of its config, the broker's config files (the
store keeps them, as Java's does, under ``storePathRootDir/config``), its HA service and client, and what
a message filter reads of a record.
"""
from rocketmq_py.errors import StoreError
from rocketmq_py.store.clean import disk_used_ratio
from rocketmq_py.store.config import (
    ASYNC_FLUSH,
    ASYNC_MASTER,
    SLAVE,
    SYNC_FLUSH,
    SYNC_MASTER,
    MessageStoreConfig,
    StoreKeysWithoutEffect,
)
from rocketmq_py.store.config_files import (
    TOPIC_GROUP_SEPARATOR,
    ConsumerOffsetTable,
    DelayOffsetTable,
    SubscriptionGroupTable,
    TopicConfigTable,
)
from rocketmq_py.store.ha import HAClient, HAService
from rocketmq_py.store.layout import CQ_UNIT_SIZE, MAX_PROPERTIES_LENGTH, encode_batch, encode_record, set_queue_id
from rocketmq_py.store.message import StoreMessage, StoreMessageBatch, pack_host
from rocketmq_py.store.message_store import MessageStore
from rocketmq_py.store.reads import MessageFilter, TagCodeFilter, record_properties
from rocketmq_py.store.results import (
    AppendMessageResult,
    Arrival,
    GetMessageResult,
    GetMessageStatus,
    PutMessageResult,
    PutMessageStatus,
    QueryMessageResult,
)
from rocketmq_py.store.write_path import PutRecordsResult

__all__ = [
    "ASYNC_FLUSH",
    "ASYNC_MASTER",
    "CQ_UNIT_SIZE",
    "MAX_PROPERTIES_LENGTH",
    "SLAVE",
    "SYNC_FLUSH",
    "SYNC_MASTER",
    "TOPIC_GROUP_SEPARATOR",
    "AppendMessageResult",
    "Arrival",
    "ConsumerOffsetTable",
    "DelayOffsetTable",
    "GetMessageResult",
    "GetMessageStatus",
    "HAClient",
    "HAService",
    "MessageFilter",
    "MessageStore",
    "MessageStoreConfig",
    "PutMessageResult",
    "PutMessageStatus",
    "PutRecordsResult",
    "QueryMessageResult",
    "StoreError",
    "StoreMessage",
    "StoreKeysWithoutEffect",
    "StoreMessageBatch",
    "SubscriptionGroupTable",
    "TagCodeFilter",
    "TopicConfigTable",
    "disk_used_ratio",
    "encode_batch",
    "encode_record",
    "pack_host",
    "record_properties",
    "set_queue_id",
]
