"""Byte layouts of the message store, in pure Python: the twin of the compiled ``_layout``.

Ports the byte-level parts of Java's store (rocketmq-all-4.9.8): the CommitLog
record of ``CommitLog.MessageExtEncoder`` / ``DefaultAppendMessageCallback``
(magic V1) with its end-of-file blank marker, ``checkMessageAndReturnSize``,
the 20-byte ConsumeQueue unit of ``ConsumeQueue`` and the slots, entries and
40-byte header of ``index/IndexFile``.

This module is the readable specification: the compiled ``_layout`` has the
same functions with the same results and the same errors, and the tests
check that the two agree. Buffers are anything with the buffer protocol
(``mmap``, ``bytearray``, ``bytes`` for reading); positions are absolute
within the buffer and ``limit`` is the first position not to touch. An
argument that points outside the buffer raises ``ValueError``; bytes that do
not hold a valid record are reported through :class:`RecordInfo`, never by
raising.

CommitLog record layout (big-endian)::

    int32 totalSize | int32 magic | int32 bodyCRC | int32 queueId | int32 flag
    int64 queueOffset | int64 physicalOffset | int32 sysFlag | int64 bornTimestamp
    bornHost (4 or 16 bytes IP + int32 port) | int64 storeTimestamp
    storeHost (4 or 16 bytes IP + int32 port) | int32 reconsumeTimes
    int64 preparedTransactionOffset | int32 bodyLength + body
    int8 topicLength + topic | int16 propertiesLength + properties
"""
from __future__ import annotations

import ctypes
import errno
import mmap
import os
import struct
import zlib
from typing import Any, Sequence

from rocketmq_py.codec import java_string_hash
from rocketmq_py.common.magic_codes import BLANK_MAGIC_CODE, MESSAGE_MAGIC_CODE
from rocketmq_py.common.message import MessageConst
from rocketmq_py.common.sysflag import BORNHOST_V6_FLAG, STOREHOSTADDRESS_V6_FLAG
from rocketmq_py.common.topic import RMQ_SYS_SCHEDULE_TOPIC

IMPLEMENTATION = "python"

#: Anything with the buffer protocol (mmap, bytearray, memoryview; bytes where only read).
Buffer = Any

END_FILE_MIN_BLANK_LENGTH = 8
CQ_UNIT_SIZE = 20
INDEX_HEADER_SIZE = 40
INDEX_SLOT_SIZE = 4
INDEX_ENTRY_SIZE = 20

QUEUE_OFFSET_POSITION = 20
PHYSICAL_OFFSET_POSITION = 28
SYSFLAG_POSITION = 36
BORN_HOST_POSITION = 48

#: check_record sizes that are not a record: the blank end-of-file marker, and bytes that are not valid.
RECORD_BLANK = 0
RECORD_INVALID = -1

MAX_TOPIC_LENGTH = 127
MAX_PROPERTIES_LENGTH = 32767
INT32_MAX = 0x7FFFFFFF
_NAME_VALUE_SEPARATOR = "\x01"
_PROPERTY_SEPARATOR = "\x02"

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_HEAD = struct.Struct(">iiiiiqqiq")  # size, magic, crc, queue id, flag, queue offset, physical offset, sysflag, born ts
_BLANK = struct.Struct(">ii")
_CQ_UNIT = struct.Struct(">qiq")
_INDEX_HEADER = struct.Struct(">qqqqii")
_INDEX_ENTRY = struct.Struct(">iqii")


class RecordInfo:
    """What ``check_record`` learned about the record at a position (Java's DispatchRequest).

    ``size`` is the record length when valid, :data:`RECORD_BLANK` (0) at the
    end-of-file marker, :data:`RECORD_INVALID` (-1) otherwise; the other
    fields are meaningful only for a valid record. ``tags_code`` is the Java
    hash of the TAGS property (0 without tags); ``delay_level`` is the DELAY
    property of a SCHEDULE_TOPIC_XXXX record (0 otherwise), so the caller can
    turn ``tags_code`` into the delivery time.
    """

    __slots__ = ("size", "topic", "queue_id", "physical_offset", "tags_code", "store_timestamp", "queue_offset",
                 "keys", "uniq_key", "sys_flag", "prepared_transaction_offset", "delay_level", "properties")

    def __init__(self, size: int, topic: str = "", queue_id: int = 0, physical_offset: int = 0, tags_code: int = 0,
                 store_timestamp: int = 0, queue_offset: int = 0, keys: str | None = None,
                 uniq_key: str | None = None, sys_flag: int = 0, prepared_transaction_offset: int = 0,
                 delay_level: int = 0, properties: str = "") -> None:
        self.size = size
        self.topic = topic
        self.queue_id = queue_id
        self.physical_offset = physical_offset
        self.tags_code = tags_code
        self.store_timestamp = store_timestamp
        self.queue_offset = queue_offset
        self.keys = keys
        self.uniq_key = uniq_key
        self.sys_flag = sys_flag
        self.prepared_transaction_offset = prepared_transaction_offset
        self.delay_level = delay_level
        self.properties = properties

    def as_tuple(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __repr__(self) -> str:
        return "RecordInfo(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__) + ")"


# --- helpers ------------------------------------------------------------------------------------


def _view(buffer: Buffer, writable: bool = False) -> memoryview:
    view = memoryview(buffer).cast("B")
    if writable and view.readonly:
        raise ValueError("the destination buffer is read-only")
    return view


def _check_span(view: memoryview, position: int, limit: int) -> None:
    if position < 0 or limit < position or limit > len(view):
        raise ValueError(f"span [{position}, {limit}) does not fit a buffer of {len(view)} bytes")


def _host_length(host: bytes, what: str) -> int:
    if len(host) not in (8, 20):
        raise ValueError(f"{what} must be a 4- or 16-byte IP plus a 4-byte port, got {len(host)} bytes")
    return len(host)


def _int(value: int, bits: int, name: str) -> int:
    """``value`` when it fits a signed Java integer of ``bits`` bits; OverflowError otherwise (as the compiled twin)."""
    limit = 1 << (bits - 1)
    if not -limit <= value < limit:
        raise OverflowError(f"{name}={value} does not fit a signed {bits}-bit integer")
    return value


def _wrap64(value: int) -> int:
    """``value`` wrapped to a signed 64-bit integer, as Java's long arithmetic overflows."""
    return ((value + (1 << 63)) & 0xFFFFFFFFFFFFFFFF) - (1 << 63)


def index_key_hash(key: str) -> int:
    """The index slot hash of Java's IndexFile: ``abs(key.hashCode())``, and 0 for ``Integer.MIN_VALUE``."""
    h = java_string_hash(key)
    return 0 if h == -0x80000000 else abs(h)


def _body_crc(data: Buffer) -> int:
    return zlib.crc32(data) & 0x7FFFFFFF


def record_length(sys_flag: int, body_length: int, topic_length: int, properties_length: int) -> int:
    """The total size of a record (Java's ``CommitLog.calMsgLength``)."""
    born = 20 if sys_flag & BORNHOST_V6_FLAG else 8
    store = 20 if sys_flag & STOREHOSTADDRESS_V6_FLAG else 8
    return (4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + born + 8 + store + 4 + 8
            + 4 + max(body_length, 0) + 1 + topic_length + 2 + max(properties_length, 0))


def store_timestamp_position(sys_flag: int) -> int:
    """Where STORETIMESTAMP sits in a record with this sysFlag."""
    return BORN_HOST_POSITION + (20 if sys_flag & BORNHOST_V6_FLAG else 8)


def _host_flags(sys_flag: int, born_host: bytes, store_host: bytes) -> int:
    sys_flag &= ~(BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG)
    if _host_length(born_host, "born_host") == 20:
        sys_flag |= BORNHOST_V6_FLAG
    if _host_length(store_host, "store_host") == 20:
        sys_flag |= STOREHOSTADDRESS_V6_FLAG
    return sys_flag


def _write_blank(view: memoryview, position: int, limit: int) -> None:
    if limit - position >= END_FILE_MIN_BLANK_LENGTH:
        _BLANK.pack_into(view, position, limit - position, BLANK_MAGIC_CODE)


def _record_parts(topic: bytes, body: Buffer, properties: bytes, queue_id: int, flag: int, queue_offset: int,
                  physical_offset: int, sys_flag: int, born_timestamp: int, born_host: bytes, store_timestamp: int,
                  store_host: bytes, reconsume_times: int, prepared_transaction_offset: int,
                  body_crc: int) -> list[bytes]:
    for value, bits, name in ((queue_id, 32, "queue_id"), (flag, 32, "flag"), (queue_offset, 64, "queue_offset"),
                              (physical_offset, 64, "physical_offset"), (sys_flag, 32, "sys_flag"),
                              (born_timestamp, 64, "born_timestamp"), (store_timestamp, 64, "store_timestamp"),
                              (reconsume_times, 32, "reconsume_times"),
                              (prepared_transaction_offset, 64, "prepared_transaction_offset"),
                              (body_crc, 32, "body_crc")):
        _int(value, bits, name)
    if len(topic) > MAX_TOPIC_LENGTH:
        raise ValueError(f"a topic of {len(topic)} bytes is longer than {MAX_TOPIC_LENGTH}")
    if len(properties) > MAX_PROPERTIES_LENGTH:
        raise ValueError(f"properties of {len(properties)} bytes are longer than {MAX_PROPERTIES_LENGTH}")
    sys_flag = _host_flags(sys_flag, born_host, store_host)
    size = record_length(sys_flag, len(body), len(topic), len(properties))
    return [
        _HEAD.pack(size, MESSAGE_MAGIC_CODE, body_crc, queue_id, flag, queue_offset, physical_offset, sys_flag,
                   born_timestamp),
        bytes(born_host), _I64.pack(store_timestamp), bytes(store_host),
        _I32.pack(reconsume_times), _I64.pack(prepared_transaction_offset),
        _I32.pack(len(body)), bytes(body),
        bytes((len(topic),)), bytes(topic),
        _I16.pack(len(properties)), bytes(properties),
    ]


# --- CommitLog records ---------------------------------------------------------------------------


def encode_record(topic: bytes, body: Buffer, properties: bytes, queue_id: int, flag: int, sys_flag: int,
                  born_timestamp: int, born_host: bytes, store_host: bytes, reconsume_times: int,
                  prepared_transaction_offset: int) -> bytearray:
    """One message as a record, with its body CRC, ready for :func:`append_records`.

    The queue offset, the physical offset and the store timestamp are left 0: the store sets them when it
    places the record. The sysFlag host bits follow the lengths of ``born_host`` and ``store_host``. A topic
    over 127 bytes, properties over 32767 bytes or a host that is not 8 or 20 bytes raise ``ValueError``.
    """
    return bytearray(b"".join(_record_parts(topic, body, properties, queue_id, flag, 0, 0, sys_flag, born_timestamp,
                                            born_host, 0, store_host, reconsume_times, prepared_transaction_offset,
                                            _body_crc(body))))


def set_queue_id(records: bytearray, queue_id: int) -> None:
    """Write ``queue_id`` into every record of ``records`` (encoded before a random queue was drawn)."""
    _int(queue_id, 32, "queue_id")
    position = 0
    value = _I32.pack(queue_id)
    while position + 16 <= len(records):
        records[position + 12:position + 16] = value
        (size,) = _I32.unpack_from(records, position)
        if size <= 0:
            raise ValueError(f"record at byte {position} declares a bad size {size}")
        position += size


def _join_properties(own: bytes, batch: bytes) -> bytes:
    if own and batch and own[-1:] != b"\x02":
        return own + b"\x02" + batch
    return own + batch


def encode_batch(batch_body: Buffer, topic: bytes, queue_id: int, sys_flag: int, born_timestamp: int, born_host: bytes,
                 store_timestamp: int, store_host: bytes, reconsume_times: int,
                 batch_properties: bytes) -> tuple[bytearray, int]:
    """Records for the messages of a SEND_BATCH_MESSAGE body, back to back, and their count.

    Each item of the body (``int32 size, int32 magic, int32 crc, int32 flag,
    int32 bodyLength + body, int16 propertiesLength + properties``) becomes a
    record of ``topic``/``queue_id`` with its own body CRC and with
    ``batch_properties`` appended to its properties, as Java's
    ``MessageExtEncoder.encode(MessageExtBatch)`` does. Queue and physical
    offsets are left 0 for :func:`append_records`. A body that does not parse
    raises ``ValueError``.
    """
    data = bytes(batch_body)
    out = bytearray()
    count = 0
    position = 0
    while position < len(data):
        if len(data) - position < 20:
            raise ValueError(f"batch item at byte {position} ends inside its fixed head")
        flag, body_length = struct.unpack_from(">ii", data, position + 12)
        position += 20
        if body_length < 0 or len(data) - position < body_length + 2:
            raise ValueError(f"batch item body of {body_length} bytes runs past the end at byte {position}")
        body = data[position:position + body_length]
        position += body_length
        (properties_length,) = _I16.unpack_from(data, position)
        position += 2
        if properties_length < 0 or len(data) - position < properties_length:
            raise ValueError(f"batch item properties of {properties_length} bytes run past the end")
        own = data[position:position + properties_length]
        position += properties_length
        properties = _join_properties(own, bytes(batch_properties))
        out += b"".join(_record_parts(topic, body, properties, queue_id, flag, 0, 0, sys_flag, born_timestamp,
                                      born_host, store_timestamp, store_host, reconsume_times, 0, _body_crc(body)))
        count += 1
    return out, count


def append_records(dst: Buffer, position: int, limit: int, records: Buffer, queue_offsets: Sequence[int],
                   physical_offset: int, store_timestamp: int) -> int:
    """Copy encoded records to ``position``; return how many were written.

    Record ``i`` gets ``queue_offsets[i]`` (one per record), its own physical
    offset (``physical_offset`` + its distance from the first) and
    ``store_timestamp``. When they do not all fit with the 8-byte blank
    marker, write only the blank marker and return 0 (the records move to
    the next file together). Malformed ``records``, or a number of queue
    offsets that is not the number of records, raise ``ValueError``.
    """
    for value, name in ((physical_offset, "physical_offset"), (store_timestamp, "store_timestamp")):
        _int(value, 64, name)
    view = _view(dst, writable=True)
    _check_span(view, position, limit)
    source = bytearray(records)
    sizes = []
    offset = 0
    while offset < len(source):
        if len(source) - offset < BORN_HOST_POSITION:
            raise ValueError(f"record at byte {offset} of the input ends inside its fixed head")
        (size,) = _I32.unpack_from(source, offset)
        (sys_flag,) = _I32.unpack_from(source, offset + SYSFLAG_POSITION)
        if size < store_timestamp_position(sys_flag) + 8 or size > len(source) - offset:
            raise ValueError(f"record at byte {offset} of the input declares a bad size {size}")
        sizes.append((offset, size, sys_flag))
        offset += size
    if len(queue_offsets) != len(sizes):
        raise ValueError(f"{len(queue_offsets)} queue offsets for {len(sizes)} records")
    for value in queue_offsets:
        _int(value, 64, "queue offset")
    if len(source) + END_FILE_MIN_BLANK_LENGTH > limit - position:
        _write_blank(view, position, limit)
        return 0
    for (start, _size, sys_flag), queue_offset in zip(sizes, queue_offsets):
        _I64.pack_into(source, start + QUEUE_OFFSET_POSITION, queue_offset)
        _I64.pack_into(source, start + PHYSICAL_OFFSET_POSITION, _wrap64(physical_offset + start))
        _I64.pack_into(source, start + store_timestamp_position(sys_flag), store_timestamp)
    view[position:position + len(source)] = source
    return len(sizes)


# --- CommitLog scan -----------------------------------------------------------------------------


def _properties_map(text: str) -> dict[str, str]:
    """Java's ``MessageDecoder.string2messageProperties``: a pair needs a separator strictly inside it."""
    result = {}
    for item in text.split(_PROPERTY_SEPARATOR):
        split = item.find(_NAME_VALUE_SEPARATOR)
        if 0 < split < len(item) - 1:
            result[item[:split]] = item[split + 1:]
    return result


def _parse_java_int(text: str) -> int | None:
    """``Integer.parseInt``: an optional sign then ASCII digits, within 32 bits; ``None`` when Java would throw."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or not all("0" <= c <= "9" for c in digits):
        return None
    value = int(text)
    return value if -0x80000000 <= value <= INT32_MAX else None


def check_record(buffer: Buffer, position: int, limit: int, check_crc: bool = True) -> RecordInfo:
    """Validate the record at ``position`` (Java's ``checkMessageAndReturnSize``).

    Invalid: a magic other than the record or blank one, a record that runs
    past ``limit``, a size that disagrees with the field lengths, a negative
    topic length, a body CRC mismatch (with ``check_crc``), or a
    SCHEDULE_TOPIC_XXXX record whose DELAY is not a number.
    """
    view = _view(buffer)
    _check_span(view, position, limit)
    available = limit - position
    if available < 8:
        return RecordInfo(RECORD_INVALID)
    size, magic = _BLANK.unpack_from(view, position)
    if magic == BLANK_MAGIC_CODE:
        return RecordInfo(RECORD_BLANK)
    if magic != MESSAGE_MAGIC_CODE or size < BORN_HOST_POSITION or size > available:
        return RecordInfo(RECORD_INVALID)
    record = bytes(view[position:position + size])
    (_, _, body_crc, queue_id, _flag, queue_offset, physical_offset, sys_flag, _born) = _HEAD.unpack_from(record, 0)
    cursor = store_timestamp_position(sys_flag)
    store_host_length = 20 if sys_flag & STOREHOSTADDRESS_V6_FLAG else 8
    if cursor + 8 + store_host_length + 4 + 8 + 4 > size:
        return RecordInfo(RECORD_INVALID)
    (store_timestamp,) = _I64.unpack_from(record, cursor)
    cursor += 8 + store_host_length + 4
    (prepared_offset,) = _I64.unpack_from(record, cursor)
    cursor += 8
    (body_length,) = _I32.unpack_from(record, cursor)
    cursor += 4
    if body_length > 0:
        if body_length > size - cursor:
            return RecordInfo(RECORD_INVALID)
        if check_crc and _body_crc(record[cursor:cursor + body_length]) != body_crc:
            return RecordInfo(RECORD_INVALID)
        cursor += body_length
    if cursor + 1 > size:
        return RecordInfo(RECORD_INVALID)
    topic_length = record[cursor]
    cursor += 1
    if topic_length > MAX_TOPIC_LENGTH or cursor + topic_length + 2 > size:
        return RecordInfo(RECORD_INVALID)
    topic = record[cursor:cursor + topic_length].decode("utf-8", "replace")
    cursor += topic_length
    (properties_length,) = _I16.unpack_from(record, cursor)
    cursor += 2
    if properties_length > size - cursor:
        return RecordInfo(RECORD_INVALID)
    if record_length(sys_flag, body_length, topic_length, properties_length) != size:
        return RecordInfo(RECORD_INVALID)
    info = RecordInfo(size, topic, queue_id, physical_offset, 0, store_timestamp, queue_offset, None, None,
                      sys_flag, prepared_offset)
    if properties_length > 0:
        info.properties = record[cursor:cursor + properties_length].decode("utf-8", "replace")
        properties = _properties_map(info.properties)
        info.keys = properties.get(MessageConst.KEYS)
        info.uniq_key = properties.get(MessageConst.UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        tags = properties.get(MessageConst.TAGS)
        if tags:
            info.tags_code = java_string_hash(tags)
        delay = properties.get(MessageConst.DELAY_TIME_LEVEL)
        if topic == RMQ_SYS_SCHEDULE_TOPIC and delay is not None:
            level = _parse_java_int(delay)
            if level is None:
                return RecordInfo(RECORD_INVALID)
            info.delay_level = level
    return info


def scan_valid_end(buffer: Buffer, position: int, limit: int, check_crc: bool = True) -> tuple[int, bool]:
    """Walk valid records from ``position``: ``(end of the last valid one, whether a blank marker follows)``."""
    while True:
        info = check_record(buffer, position, limit, check_crc)
        if info.size > 0:
            position += info.size
            continue
        return position, info.size == RECORD_BLANK


def read_store_timestamp(buffer: Buffer, position: int, limit: int) -> int:
    """The STORETIMESTAMP of the record at ``position``, or -1 when no record header is there."""
    view = _view(buffer)
    _check_span(view, position, limit)
    if limit - position < SYSFLAG_POSITION + 4:
        return -1
    (magic,) = _I32.unpack_from(view, position + 4)
    (sys_flag,) = _I32.unpack_from(view, position + SYSFLAG_POSITION)
    at = position + store_timestamp_position(sys_flag)
    if magic != MESSAGE_MAGIC_CODE or at + 8 > limit:
        return -1
    timestamp: int = _I64.unpack_from(view, at)[0]
    return timestamp


# --- faulting pages in ahead of their writes ----------------------------------------------------------

#: Linux's MADV_POPULATE_WRITE (5.14); Python's mmap module names it only from 3.13 on.
MADV_POPULATE_WRITE = 23
#: Linux's MS_SYNC, which Python's mmap module does not name.
_MS_SYNC = 4
_libc = ctypes.CDLL(None, use_errno=True)
_libc.msync.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
_libc.msync.restype = ctypes.c_int


def populate_for_writing(dst: Buffer, position: int, length: int) -> bool:
    """Fault in, writable, the pages of the mapping ``dst`` under ``[position, position + length)`` without
    writing to them (Linux's MADV_POPULATE_WRITE). True when done; False when the kernel cannot, having changed
    nothing. ``mmap.madvise`` holds the GIL while the kernel works: only the compiled form lets the putting
    thread run meanwhile."""
    view = _view(dst, writable=True)
    if length < 0:
        raise ValueError(f"a length of {length} bytes")
    _check_span(view, position, position + length)
    if length == 0:
        return True
    start = position - position % mmap.PAGESIZE
    try:
        dst.madvise(MADV_POPULATE_WRITE, start, position + length - start)
    except OSError as error:
        if error.errno == errno.EINVAL:
            return False
        raise
    return True


def write_back(dst: Buffer, length: int) -> None:
    """Write back the changed pages of the mapping ``dst`` under its first ``length`` bytes and wait for them
    (msync MS_SYNC: for a file, its data and what reading it needs, as fdatasync).

    The pages after them are left alone. A store file's pages past its write position are the ones the
    CommitLog's prefault service made writable ahead of the writes (``rocketmq_py.store.prefault``): written
    back while still zeros, they would be written twice, and the kernel would make them read-only again, so
    that the putting thread took a fault on each one anyway. ``mmap.flush`` holds the GIL while the kernel
    writes; this calls msync through ctypes, which lets the other threads run meanwhile."""
    view = _view(dst, writable=True)
    if length < 0:
        raise ValueError(f"a length of {length} bytes")
    _check_span(view, 0, length)
    if length == 0:
        return
    end = min(len(view), -(-length // mmap.PAGESIZE) * mmap.PAGESIZE)
    pages = (ctypes.c_char * end).from_buffer(dst)
    try:
        if _libc.msync(ctypes.addressof(pages), end, _MS_SYNC) != 0:
            error = ctypes.get_errno()
            raise OSError(error, os.strerror(error))
    finally:
        del pages


# --- ConsumeQueue ---------------------------------------------------------------------------------


def cq_put_unit(dst: Buffer, position: int, physical_offset: int, size: int, tags_code: int) -> None:
    """Write one unit: ``int64 commitLogOffset, int32 size, int64 tagsCode``."""
    _int(physical_offset, 64, "physical_offset")
    _int(size, 32, "size")
    _int(tags_code, 64, "tags_code")
    view = _view(dst, writable=True)
    _check_span(view, position, position + CQ_UNIT_SIZE)
    _CQ_UNIT.pack_into(view, position, physical_offset, size, tags_code)


def cq_fill_blank(dst: Buffer, position: int, limit: int) -> None:
    """Fill whole units from ``position`` to ``limit`` with the padding unit ``(0, Integer.MAX_VALUE, 0)``."""
    view = _view(dst, writable=True)
    _check_span(view, position, limit)
    unit = _CQ_UNIT.pack(0, INT32_MAX, 0)
    while limit - position >= CQ_UNIT_SIZE:
        view[position:position + CQ_UNIT_SIZE] = unit
        position += CQ_UNIT_SIZE


def cq_read_units(buffer: Buffer, position: int, limit: int, max_units: int) -> list[tuple[int, int, int]]:
    """Up to ``max_units`` whole units from ``position`` as ``(offset, size, tags_code)``, as stored."""
    view = _view(buffer)
    _check_span(view, position, limit)
    count = min(max(max_units, 0), (limit - position) // CQ_UNIT_SIZE)
    return [_CQ_UNIT.unpack_from(view, position + i * CQ_UNIT_SIZE) for i in range(count)]


def cq_valid_end(buffer: Buffer, position: int, limit: int) -> tuple[int, int]:
    """Walk units while ``offset >= 0 and size > 0``: ``(end of the last valid unit, its offset + size or -1)``."""
    view = _view(buffer)
    _check_span(view, position, limit)
    max_physical = -1
    while limit - position >= CQ_UNIT_SIZE:
        offset, size, _tags = _CQ_UNIT.unpack_from(view, position)
        if offset < 0 or size <= 0:
            break
        max_physical = _wrap64(offset + size)
        position += CQ_UNIT_SIZE
    return position, max_physical


# --- IndexFile -------------------------------------------------------------------------------------


def index_file_size(hash_slot_num: int, index_num: int) -> int:
    return INDEX_HEADER_SIZE + hash_slot_num * INDEX_SLOT_SIZE + index_num * INDEX_ENTRY_SIZE


def _index_view(buffer: Buffer, hash_slot_num: int, index_num: int, key_hash: int, writable: bool = False) -> memoryview:
    if key_hash < 0 or key_hash > INT32_MAX:
        raise ValueError(f"an index key hash is a non-negative int32, got {key_hash}")
    view = _view(buffer, writable)
    if hash_slot_num <= 0 or index_num <= 0 or len(view) < index_file_size(hash_slot_num, index_num):
        raise ValueError(f"an index of {hash_slot_num} slots and {index_num} entries needs "
                         f"{index_file_size(hash_slot_num, index_num)} bytes, the buffer has {len(view)}")
    return view


def index_header(buffer: Buffer) -> tuple[int, int, int, int, int, int]:
    """``(beginTimestamp, endTimestamp, beginPhyOffset, endPhyOffset, hashSlotCount, indexCount)``.

    An index count of 0 or less reads as 1, as Java loads it (entry 0 means "none").
    """
    view = _view(buffer)
    if len(view) < INDEX_HEADER_SIZE:
        raise ValueError("an index header needs 40 bytes")
    begin_timestamp, end_timestamp, begin_phy_offset, end_phy_offset, slots, count = _INDEX_HEADER.unpack_from(view, 0)
    return begin_timestamp, end_timestamp, begin_phy_offset, end_phy_offset, slots, max(count, 1)


def index_start(dst: Buffer, end_phy_offset: int, end_timestamp: int) -> None:
    """Begin a new index file where the previous one ended (Java's IndexFile constructor)."""
    _int(end_phy_offset, 64, "end_phy_offset")
    _int(end_timestamp, 64, "end_timestamp")
    view = _view(dst, writable=True)
    if len(view) < INDEX_HEADER_SIZE:
        raise ValueError("an index header needs 40 bytes")
    if end_phy_offset > 0:
        struct.pack_into(">qq", view, 16, end_phy_offset, end_phy_offset)
    if end_timestamp > 0:
        struct.pack_into(">qq", view, 0, end_timestamp, end_timestamp)


def index_put(dst: Buffer, hash_slot_num: int, index_num: int, key_hash: int, physical_offset: int,
              store_timestamp: int) -> bool:
    """Add an entry for ``key_hash`` (see :func:`index_key_hash`); False when the file is full."""
    _int(physical_offset, 64, "physical_offset")
    _int(store_timestamp, 64, "store_timestamp")
    view = _index_view(dst, hash_slot_num, index_num, key_hash, writable=True)
    begin_ts, _end_ts, _begin_phy, _end_phy, slot_count, index_count = index_header(view)
    if index_count >= index_num:
        return False
    slot_position = INDEX_HEADER_SIZE + (key_hash % hash_slot_num) * INDEX_SLOT_SIZE
    (slot_value,) = _I32.unpack_from(view, slot_position)
    if slot_value <= 0 or slot_value > index_count:
        slot_value = 0
    elapsed = store_timestamp - begin_ts
    time_diff = 0 if begin_ts <= 0 or elapsed < 0 else min(elapsed // 1000, INT32_MAX)
    entry = INDEX_HEADER_SIZE + hash_slot_num * INDEX_SLOT_SIZE + index_count * INDEX_ENTRY_SIZE
    _INDEX_ENTRY.pack_into(view, entry, key_hash, physical_offset, time_diff, slot_value)
    _I32.pack_into(view, slot_position, index_count)
    if index_count <= 1:
        struct.pack_into(">q", view, 16, physical_offset)
        struct.pack_into(">q", view, 0, store_timestamp)
    if slot_value == 0:
        _I32.pack_into(view, 32, slot_count + 1)
    _I32.pack_into(view, 36, index_count + 1)
    struct.pack_into(">q", view, 24, physical_offset)
    struct.pack_into(">q", view, 8, store_timestamp)
    return True


def index_select(buffer: Buffer, hash_slot_num: int, index_num: int, key_hash: int, max_num: int, begin: int,
                 end: int) -> list[int]:
    """Physical offsets of entries for ``key_hash`` stored within ``[begin, end]`` ms, newest first."""
    view = _index_view(buffer, hash_slot_num, index_num, key_hash)
    begin_ts, _end_ts, _begin_phy, _end_phy, _slots, index_count = index_header(view)
    result: list[int] = []
    (slot_value,) = _I32.unpack_from(view, INDEX_HEADER_SIZE + (key_hash % hash_slot_num) * INDEX_SLOT_SIZE)
    if slot_value <= 0 or slot_value > index_count or index_count <= 1:
        return result
    next_index = slot_value
    while len(result) < max_num:
        if next_index >= index_num:
            break
        entry = INDEX_HEADER_SIZE + hash_slot_num * INDEX_SLOT_SIZE + next_index * INDEX_ENTRY_SIZE
        hash_read, phy_read, time_diff, prev_index = _INDEX_ENTRY.unpack_from(view, entry)
        if time_diff < 0:
            break
        time_read = _wrap64(begin_ts + time_diff * 1000)
        if hash_read == key_hash and begin <= time_read <= end:
            result.append(phy_read)
        if prev_index <= 0 or prev_index > index_count or prev_index == next_index or time_read < begin:
            break
        next_index = prev_index
    return result
