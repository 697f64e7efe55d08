"""The body of REGISTER_BROKER (Java's common/protocol/body/RegisterBrokerBody).

Plain form: ``{"filterServerList":[...],"topicConfigSerializeWrapper":{...}}``.
Compressed form (broker option ``compressedRegister``): a zlib stream holding
``int32 len + DataVersion JSON``, ``int32 topicCount``, per topic ``int32 len +
compact TopicConfig``, then ``int32 len + filter server list JSON``.
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from typing import cast

from rocketmq_py import codec
from rocketmq_py.common import json_shape
from rocketmq_py.common.data_version import DataVersion
from rocketmq_py.common.topic_config import TOPIC_CONFIG_WRAPPER_SHAPE, TopicConfig, TopicConfigSerializeWrapper
from rocketmq_py.errors import BadRequestError, CodecError

_INT32 = struct.Struct(">i")
#: A decompressed registration larger than this is refused (about 1M topics).
MAX_DECOMPRESSED_SIZE = 256 * 1024 * 1024
#: The types of the plain form, for :mod:`rocketmq_py.common.json_shape`.
REGISTER_BROKER_BODY_SHAPE = {"filterServerList": [str], "topicConfigSerializeWrapper": TOPIC_CONFIG_WRAPPER_SHAPE}


@dataclass
class RegisterBrokerBody:
    topic_config_wrapper: TopicConfigSerializeWrapper = field(default_factory=TopicConfigSerializeWrapper)
    filter_server_list: list[str] = field(default_factory=list)

    def encode(self, compressed: bool = False) -> bytes:
        if not compressed:
            value = {"filterServerList": self.filter_server_list,
                     "topicConfigSerializeWrapper": self.topic_config_wrapper.to_json()}
            return codec.json_dumps(value).encode()
        parts = [_chunk(self.topic_config_wrapper.data_version.encode())]
        table = self.topic_config_wrapper.topic_config_table
        parts.append(_INT32.pack(len(table)))
        parts.extend(_chunk(config.encode_compact().encode()) for config in table.values())
        parts.append(_chunk(codec.json_dumps(self.filter_server_list).encode()))
        return zlib.compress(b"".join(parts), 9)

    @classmethod
    def decode(cls, body: bytes, compressed: bool = False) -> "RegisterBrokerBody":
        """Raises :class:`CodecError` when the body is not a registration."""
        if not compressed:
            data = json_shape.decode(body, REGISTER_BROKER_BODY_SHAPE, "RegisterBrokerBody")
            try:
                wrapper = TopicConfigSerializeWrapper.from_json(data.get("topicConfigSerializeWrapper") or {})
            except (ValueError, TypeError) as error:
                raise BadRequestError(f"bad register broker body: {error}") from None
            return cls(wrapper, list(data.get("filterServerList") or []))
        return cls._decode_compressed(body)

    @classmethod
    def _decode_compressed(cls, body: bytes) -> "RegisterBrokerBody":
        inflater = zlib.decompressobj()
        try:
            data = inflater.decompress(body, MAX_DECOMPRESSED_SIZE)
        except zlib.error as error:
            raise CodecError(f"compressed register broker body does not inflate: {error}") from None
        if inflater.unconsumed_tail:
            raise CodecError(f"compressed register broker body inflates beyond {MAX_DECOMPRESSED_SIZE} bytes")
        reader = _Reader(data)
        try:
            version = DataVersion.decode(reader.chunk())
            count = reader.int32()
            if count < 0:
                raise ValueError(f"negative topic count {count}")
            table = {}
            for _ in range(count):
                config = TopicConfig.decode_compact(reader.chunk().decode("utf-8"))
                table[config.topic_name] = config
            filters_json = reader.chunk()
        except (ValueError, UnicodeDecodeError) as error:
            raise BadRequestError(f"bad compressed register broker body: {error}") from None
        try:
            filters = [str(s) for s in cast(list[object], codec.json_loads(filters_json) or [])]
        except (CodecError, ValueError, TypeError):
            filters = []  # Java logs an unreadable filter server list and registers without it
        return cls(TopicConfigSerializeWrapper(table, version), filters)


def _chunk(data: bytes) -> bytes:
    return _INT32.pack(len(data)) + data


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.position = 0

    def int32(self) -> int:
        if self.position + 4 > len(self.data):
            raise ValueError("the body ends inside a length field")
        (value,) = _INT32.unpack_from(self.data, self.position)
        self.position += 4
        return int(value)

    def chunk(self) -> bytes:
        length = self.int32()
        if length < 0 or self.position + length > len(self.data):
            raise ValueError(f"a field of {length} bytes runs past the end of the body")
        start = self.position
        self.position += length
        return self.data[start:self.position]
