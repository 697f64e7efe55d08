"""Typed API of the store's compiled hot paths (``_hot_paths.pyx``); the pure-Python twin ``_hot_paths_py``
matches it."""
from rocketmq_py.store.consume_queue import UnitWindow
from rocketmq_py.store.message_store import MessageStore
from rocketmq_py.store.reads import MessageFilter, StoreReads
from rocketmq_py.store.results import GetMessageResult

IMPLEMENTATION: str

def index_keys(topic: str, keys: str | None, uniq_key: str | None) -> list[str]: ...
def append_in_place(store: MessageStore, topic: str, topic_bytes: bytes, queue_id: int, body: bytes,
                    properties: bytes, properties_text: str, flag: int, sys_flag: int, born_timestamp: int,
                    born_host: bytes, store_host: bytes, reconsume_times: int, tags_code: int, keys: str | None,
                    uniq_key: str | None) -> tuple[int, int, int, int] | None: ...
def set_queue_id(records: bytearray, queue_id: int) -> None: ...
def append_batch_in_place(store: MessageStore, topic: str, queue_id: int, records: bytearray,
                          count: int) -> tuple[int, int, int, int, list[int]] | None: ...
def collect(reads: StoreReads, result: GetMessageResult, units: UnitWindow, offset: int,
            max_msg_nums: int, message_filter: MessageFilter | None, memory: int) -> None: ...
