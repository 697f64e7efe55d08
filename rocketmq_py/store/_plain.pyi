"""Typed API of the compiled in-place put (``_plain.pyx``); the pure-Python twin ``_plain_py`` matches it."""
from rocketmq_py.store.message_store import MessageStore

IMPLEMENTATION: str

def index_keys(topic: str, keys: str | None, uniq_key: str | None) -> list[str]: ...
def append_in_place(store: MessageStore, topic: str, topic_bytes: bytes, queue_id: int, body: bytes,
                    properties: bytes, properties_text: str, flag: int, sys_flag: int, born_timestamp: int,
                    born_host: bytes, store_host: bytes, reconsume_times: int, tags_code: int, keys: str | None,
                    uniq_key: str | None) -> tuple[int, int, int, int] | None: ...
