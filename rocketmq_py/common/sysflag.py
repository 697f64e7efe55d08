"""Message sysFlag bits (Java's common/sysflag/MessageSysFlag, 4.9.4+ layout)."""
from __future__ import annotations

COMPRESSED_FLAG = 0x1
MULTI_TAGS_FLAG = 0x2
TRANSACTION_NOT_TYPE = 0x0
TRANSACTION_PREPARED_TYPE = 0x4
TRANSACTION_COMMIT_TYPE = 0x8
TRANSACTION_ROLLBACK_TYPE = 0xC
TRANSACTION_TYPE_MASK = 0xC
BORNHOST_V6_FLAG = 0x10
STOREHOSTADDRESS_V6_FLAG = 0x20
COMPRESSION_TYPE_MASK = 0x700
COMPRESSION_TYPE_SHIFT = 8


def transaction_type(sys_flag: int) -> int:
    return sys_flag & TRANSACTION_TYPE_MASK


def with_transaction_type(sys_flag: int, kind: int) -> int:
    return (sys_flag & ~TRANSACTION_TYPE_MASK) | kind


def compressed_flag(compression: int) -> int:
    """The sysFlag bits a 4.9.4+ producer sets for a body compressed with ``compression`` (1 LZ4, 2 ZSTD, 3 ZLIB)."""
    return COMPRESSED_FLAG | (compression << COMPRESSION_TYPE_SHIFT)
