"""Typed API of the compiled store layouts (``_layout.pyx``); the pure-Python twin ``_layout_py`` matches it."""
from typing import Any, Sequence

IMPLEMENTATION: str
MESSAGE_MAGIC_CODE: int
BLANK_MAGIC_CODE: int
END_FILE_MIN_BLANK_LENGTH: int
CQ_UNIT_SIZE: int
INDEX_HEADER_SIZE: int
INDEX_SLOT_SIZE: int
INDEX_ENTRY_SIZE: int
QUEUE_OFFSET_POSITION: int
PHYSICAL_OFFSET_POSITION: int
SYSFLAG_POSITION: int
BORN_HOST_POSITION: int
RECORD_BLANK: int
RECORD_INVALID: int
MAX_TOPIC_LENGTH: int
MAX_PROPERTIES_LENGTH: int
INT32_MAX: int

Buffer = Any  # anything with the buffer protocol: mmap, bytearray, memoryview, bytes (read only)

#: "folding" (carry-less multiplication, x86-64) or "table": how this process computes a body CRC.
CRC_METHOD: str

def crc32(data: Buffer) -> int:
    """``zlib.crc32(data)``: the compiled store's own CRC-32 (compiled only; the twin uses zlib)."""

class RecordInfo:
    size: int
    topic: str
    queue_id: int
    physical_offset: int
    tags_code: int
    store_timestamp: int
    queue_offset: int
    keys: str | None
    uniq_key: str | None
    sys_flag: int
    prepared_transaction_offset: int
    delay_level: int
    properties: str
    def as_tuple(self) -> tuple[Any, ...]: ...

def index_key_hash(key: str) -> int: ...
def record_length(sys_flag: int, body_length: int, topic_length: int, properties_length: int) -> int: ...
def store_timestamp_position(sys_flag: int) -> int: ...
def encode_record(topic: bytes, body: Buffer, properties: bytes, queue_id: int, flag: int, sys_flag: int,
                  born_timestamp: int, born_host: bytes, store_host: bytes, reconsume_times: int,
                  prepared_transaction_offset: int) -> bytearray: ...
def set_queue_id(records: bytearray, queue_id: int) -> None: ...
def encode_batch(batch_body: Buffer, topic: bytes, queue_id: int, sys_flag: int, born_timestamp: int,
                 born_host: bytes, store_timestamp: int, store_host: bytes, reconsume_times: int,
                 batch_properties: bytes) -> tuple[bytearray, int]: ...
def append_records(dst: Buffer, position: int, limit: int, records: Buffer, queue_offsets: Sequence[int],
                   physical_offset: int, store_timestamp: int) -> int: ...
def check_record(buffer: Buffer, position: int, limit: int, check_crc: bool = True) -> RecordInfo: ...
def scan_valid_end(buffer: Buffer, position: int, limit: int, check_crc: bool = True) -> tuple[int, bool]: ...
def read_store_timestamp(buffer: Buffer, position: int, limit: int) -> int: ...
def cq_put_unit(dst: Buffer, position: int, physical_offset: int, size: int, tags_code: int) -> None: ...
def cq_fill_blank(dst: Buffer, position: int, limit: int) -> None: ...
def cq_read_units(buffer: Buffer, position: int, limit: int, max_units: int) -> list[tuple[int, int, int]]: ...
def cq_valid_end(buffer: Buffer, position: int, limit: int) -> tuple[int, int]: ...
def index_file_size(hash_slot_num: int, index_num: int) -> int: ...
def index_header(buffer: Buffer) -> tuple[int, int, int, int, int, int]: ...
def index_start(dst: Buffer, end_phy_offset: int, end_timestamp: int) -> None: ...
def index_put(dst: Buffer, hash_slot_num: int, index_num: int, key_hash: int, physical_offset: int,
              store_timestamp: int) -> bool: ...
def index_select(buffer: Buffer, hash_slot_num: int, index_num: int, key_hash: int, max_num: int, begin: int,
                 end: int) -> list[int]: ...

def populate_for_writing(dst: Buffer, position: int, length: int) -> bool: ...
