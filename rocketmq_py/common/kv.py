"""Key/value tables (Java's common/protocol/body/KVTable): ``{"table":{"k":"v"}}``.

The name server answers GET_KVLIST_BY_NAMESPACE and REGISTER_BROKER with one;
a broker answers GET_BROKER_RUNTIME_INFO with one.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from rocketmq_py import codec

#: The name server namespace that holds ``topic -> "brokerName:queueNums;..."`` for ordered topics.
NAMESPACE_ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"


@dataclass
class KVTable:
    table: dict[str, str] = field(default_factory=dict)

    def encode(self) -> bytes:
        return codec.json_dumps({"table": dict(sorted(self.table.items()))}).encode()

    @classmethod
    def decode(cls, body: bytes | str) -> "KVTable":
        data = codec.json_loads(body)
        if not isinstance(data, dict):
            raise ValueError("a KV table body must be a JSON object")
        return cls({str(k): str(v) for k, v in (data.get("table") or {}).items()})
