"""Messages as the broker hands them to the store (Java's MessageExtBrokerInner and MessageExtBatch).

The broker fills in what came on the wire plus the hosts; the store sets the
store time, the body CRC, the queue offset and the CommitLog offset.
Hosts are given as ``"ip:port"`` (``"[v6]:port"``) or ``(ip, port)`` and kept
packed, as the record holds them.
"""
from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Mapping

from rocketmq_py import codec
from rocketmq_py.common.message import MessageConst
from rocketmq_py.common.sysflag import TRANSACTION_TYPE_MASK


@lru_cache(maxsize=4096)
def pack_host(host: str | tuple[str, int]) -> bytes:
    """``"ip:port"`` / ``"[v6]:port"`` / ``(ip, port)`` as the record stores it: IP bytes then int32 port."""
    if isinstance(host, tuple):
        ip, port = host
    else:
        ip, _, port_text = host.rpartition(":")
        ip = ip.strip("[]")
        port = int(port_text)
    try:
        packed = ipaddress.ip_address(ip).packed
    except ValueError:
        raise ValueError(f"not an IP address: {ip!r} (the store records hosts as IP and port)") from None
    return packed + struct.pack(">i", port)


def unpack_host(packed: bytes) -> tuple[str, int]:
    (port,) = struct.unpack_from(">i", packed, len(packed) - 4)
    return ipaddress.ip_address(packed[:-4]).compressed, port


@dataclass
class StoreMessage:
    """One message to append (Java's MessageExtBrokerInner)."""

    topic: str
    body: bytes
    queue_id: int = 0
    flag: int = 0
    properties: dict[str, str] = field(default_factory=dict)
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: str | tuple[str, int] = "127.0.0.1:0"
    store_host: str | tuple[str, int] = "127.0.0.1:10911"
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    #: Set by the store: the properties as written (``None`` until then: encoded from ``properties``).
    properties_string: str | None = None

    @property
    def transaction_type(self) -> int:
        return self.sys_flag & TRANSACTION_TYPE_MASK

    @property
    def delay_time_level(self) -> int:
        try:
            return int(self.properties.get(MessageConst.DELAY_TIME_LEVEL, "0"))
        except ValueError:
            return 0

    @property
    def wait_store_msg_ok(self) -> bool:
        return self.properties.get(MessageConst.WAIT_STORE_MSG_OK) != "false"

    def encoded_properties(self) -> bytes:
        if self.properties_string is None:
            self.properties_string = codec.properties_to_string(self.properties)
        return self.properties_string.encode("utf-8")


@dataclass
class StoreMessageBatch:
    """A SEND_BATCH_MESSAGE body to append as one record per item (Java's MessageExtBatch).

    ``body`` is the batch body exactly as the producer sent it; ``properties``
    are the batch-level properties, added to every item's own.
    """

    topic: str
    body: bytes
    queue_id: int = 0
    properties: Mapping[str, str] = field(default_factory=dict)
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: str | tuple[str, int] = "127.0.0.1:0"
    store_host: str | tuple[str, int] = "127.0.0.1:10911"
    reconsume_times: int = 0

    @property
    def wait_store_msg_ok(self) -> bool:
        return self.properties.get(MessageConst.WAIT_STORE_MSG_OK) != "false"
