"""A DLedger log entry and its two byte layouts: the entry in the ``data`` files, its unit in the ``index`` files.

Ports ``entry/DLedgerEntry.java`` and ``entry/DLedgerEntryCoder.java`` (dledger-all-0.3.1.2). An entry in
a data file is a 48-byte header, then the body, all big-endian::

    offset  size  field
         0     4  magic       1 (MAGIC_1) for an entry; -1 (BLANK_MAGIC_CODE) starts the padding that ends a file
         4     4  size        the whole entry: 48 + body length
         8     8  index       the entry's place in the log, from 0
        16     8  term        the leader's term when it was appended
        24     8  pos         the entry's own offset in the data files (the file name + position in the file)
        32     4  channel     reserved, always 0
        36     4  chain CRC   reserved, always 0 (0.3.1.2 never computes it)
        40     4  body CRC    reserved, always 0 (0.3.1.2 never computes it)
        44     4  body length
        48     -  body

The padding at the end of a file (when the next entry and an 8-byte blank do not fit) is ``-1`` then the
padding's length, then zeros to the end of the file. An index unit is 32 bytes at ``index * 32`` of the
index files: magic (4), pos (8), size (4), index (8), term (8).
"""
from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from typing import Union

from rocketmq_py.dledger.codes import ResponseCode
from rocketmq_py.dledger.errors import DLedgerError

__all__ = [
    "MAGIC_1",
    "CURRENT_MAGIC",
    "BLANK_MAGIC_CODE",
    "MIN_BLANK_LEN",
    "POS_OFFSET",
    "HEADER_SIZE",
    "BODY_OFFSET",
    "INDEX_UNIT_SIZE",
    "DLedgerEntry",
    "IndexUnit",
    "encode_entry",
    "decode_entry",
    "decode_header",
    "set_pos",
    "encode_index_unit",
    "decode_index_unit",
    "encode_blank",
    "Buffer",
]

MAGIC_1 = 1
CURRENT_MAGIC = MAGIC_1
#: The magic of the padding that fills the rest of a data file.
BLANK_MAGIC_CODE = -1
#: Room a data file keeps after an entry for the padding's magic and length.
MIN_BLANK_LEN = 8
POS_OFFSET = 4 + 4 + 8 + 8
#: Java's HEADER_SIZE: the header up to the body length field.
HEADER_SIZE = POS_OFFSET + 8 + 4 + 4 + 4
#: Where the body starts: the header and the body length. A CommitLog record in a body is at ``pos + 48``.
BODY_OFFSET = HEADER_SIZE + 4
INDEX_UNIT_SIZE = 32

_HEADER = struct.Struct(">iiqqqiiii")
_INDEX_UNIT = struct.Struct(">iqiqq")
_POS = struct.Struct(">q")
_BLANK = struct.Struct(">ii")
_INT_MAX = (1 << 31) - 1

#: What the decoders read: bytes, or a mapped file directly.
Buffer = Union[bytes, bytearray, memoryview, mmap.mmap]


@dataclass
class DLedgerEntry:
    """One log entry. ``size`` is the entry's bytes (48 + body) once it has been encoded or read."""

    index: int = 0
    term: int = 0
    pos: int = 0
    body: bytes | None = None
    magic: int = 0
    size: int = 0
    channel: int = 0
    chain_crc: int = 0
    body_crc: int = 0

    def same_as(self, other: DLedgerEntry | None) -> bool:
        """Java's ``DLedgerEntry.equals``: the same size, magic, index, term, channel, pos and body (the CRCs
        are not compared). A follower and a leader agree on an entry when this holds."""
        return (other is not None and self.size == other.size and self.magic == other.magic
                and self.index == other.index and self.term == other.term and self.channel == other.channel
                and self.pos == other.pos and self.body == other.body)

    def compute_size(self) -> int:
        """Set and return ``size`` from the body, as Java's ``computeSizeInBytes`` does when it encodes."""
        self.size = BODY_OFFSET + len(self.body or b"")
        return self.size


@dataclass(frozen=True)
class IndexUnit:
    """One 32-byte unit of the index files."""

    magic: int
    pos: int
    size: int
    index: int
    term: int


def _bad(message: str) -> DLedgerError:
    return DLedgerError(ResponseCode.DISK_ERROR, message)


def encode_entry(entry: DLedgerEntry) -> bytearray:
    """The entry's bytes in a data file; sets ``entry.size`` (48 + body), as Java's encoder does."""
    body = entry.body
    if body is None:
        raise DLedgerError(ResponseCode.UNEXPECTED_ARGUMENT, f"entry {entry.index} has no body")
    if len(body) > _INT_MAX - BODY_OFFSET:
        raise DLedgerError(ResponseCode.UNEXPECTED_ARGUMENT, f"entry body of {len(body)} bytes is too large")
    size = entry.compute_size()
    out = bytearray(size)
    try:
        _HEADER.pack_into(out, 0, entry.magic, size, entry.index, entry.term, entry.pos, entry.channel,
                          entry.chain_crc, entry.body_crc, len(body))
    except struct.error as error:
        raise DLedgerError(ResponseCode.UNEXPECTED_ARGUMENT,
                           f"entry {entry.index} has a header field out of range: {error}") from None
    out[BODY_OFFSET:] = body
    return out


def decode_header(data: Buffer, offset: int = 0) -> DLedgerEntry:
    """The header fields at ``offset`` (no body); raises DISK_ERROR when fewer than 48 bytes are there."""
    if offset < 0 or offset + BODY_OFFSET > len(data):
        raise _bad(f"an entry header at {offset} needs {BODY_OFFSET} bytes, {len(data) - offset} are there")
    magic, size, index, term, pos, channel, chain_crc, body_crc, _ = _HEADER.unpack_from(data, offset)
    return DLedgerEntry(index=index, term=term, pos=pos, magic=magic, size=size, channel=channel,
                        chain_crc=chain_crc, body_crc=body_crc)


def decode_entry(data: Buffer, offset: int = 0) -> DLedgerEntry:
    """The whole entry at ``offset``; raises DISK_ERROR when its lengths do not agree or point past the data."""
    entry = decode_header(data, offset)
    (body_length,) = struct.unpack_from(">i", data, offset + HEADER_SIZE)
    if body_length < 0 or entry.size != BODY_OFFSET + body_length:
        raise _bad(f"the entry at {offset} has size {entry.size} and body length {body_length}, "
                   f"which do not agree")
    end = offset + BODY_OFFSET + body_length
    if end > len(data):
        raise _bad(f"the entry at {offset} has a body of {body_length} bytes but only "
                   f"{len(data) - offset - BODY_OFFSET} follow")
    entry.body = bytes(data[offset + BODY_OFFSET:end])
    return entry


def set_pos(encoded: bytearray, pos: int) -> None:
    """Write ``pos`` into an encoded entry (the leader learns it only when it places the entry)."""
    _POS.pack_into(encoded, POS_OFFSET, pos)


def encode_index_unit(pos: int, size: int, magic: int, index: int, term: int) -> bytes:
    """The 32-byte index unit of an entry."""
    return _INDEX_UNIT.pack(magic, pos, size, index, term)


def decode_index_unit(data: Buffer, offset: int = 0) -> IndexUnit:
    """The index unit at ``offset``; raises DISK_ERROR when fewer than 32 bytes are there."""
    if offset < 0 or offset + INDEX_UNIT_SIZE > len(data):
        raise _bad(f"an index unit at {offset} needs {INDEX_UNIT_SIZE} bytes, {len(data) - offset} are there")
    return IndexUnit(*_INDEX_UNIT.unpack_from(data, offset))


def encode_blank(length: int) -> bytes:
    """The padding that fills the last ``length`` bytes of a data file (``length`` >= 8)."""
    if length < MIN_BLANK_LEN:
        raise ValueError(f"a blank needs at least {MIN_BLANK_LEN} bytes, not {length}")
    return _BLANK.pack(BLANK_MAGIC_CODE, length) + bytes(length - MIN_BLANK_LEN)
