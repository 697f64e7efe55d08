"""Typed API of the store's compiled write path (``_write_path.pyx``); the pure-Python twin ``_write_path_py``
matches it."""
import threading

from rocketmq_py.store.consume_queue import ConsumeQueue
from rocketmq_py.store.layout import RecordInfo
from rocketmq_py.store.message_store import MessageStore
from rocketmq_py.store.results import PutMessageStatus

IMPLEMENTATION: str

class PutRecordsResult:
    status: PutMessageStatus
    physical_offsets: list[int]
    queue_offsets: list[int]
    store_timestamp: int
    wrote_bytes: int
    def __init__(self, status: PutMessageStatus, physical_offsets: list[int] | None = None,
                 queue_offsets: list[int] | None = None, store_timestamp: int = 0, wrote_bytes: int = 0) -> None: ...

class StoreWriter:
    lock: threading.RLock
    def __init__(self, store: MessageStore) -> None: ...
    def put(self, records: bytes | bytearray) -> PutRecordsResult: ...
    def dispatch(self, infos: list[RecordInfo]) -> list[tuple[str, int, int, int, int, str]]: ...

def put_unit(consume_queue: ConsumeQueue, physical_offset: int, size: int, tags_code: int,
             queue_offset: int) -> bool: ...
