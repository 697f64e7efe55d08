"""Typed API of the store's compiled read path (``_read_path.pyx``); the pure-Python twin ``_read_path_py``
matches it."""
from rocketmq_py.store.consume_queue import UnitWindow
from rocketmq_py.store.reads import MessageFilter, StoreReads
from rocketmq_py.store.results import GetMessageResult

IMPLEMENTATION: str

def collect(reads: StoreReads, result: GetMessageResult, units: UnitWindow, offset: int,
            max_msg_nums: int, message_filter: MessageFilter | None, memory: int) -> None: ...
