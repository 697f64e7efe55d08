"""The version stamp of a broker's topic table (Java's common/DataVersion).

JSON form ``{"counter":N,"timestamp":T}``; two versions are equal when both
numbers are.
"""
from __future__ import annotations

from typing import Any

from dataclasses import dataclass, field

from rocketmq_py import codec
from rocketmq_py.common.clock import now_ms


@dataclass
class DataVersion:
    timestamp: int = field(default_factory=now_ms)
    counter: int = 0

    def next_version(self) -> None:
        self.timestamp = now_ms()
        self.counter += 1

    def assign(self, other: "DataVersion") -> None:
        self.timestamp = other.timestamp
        self.counter = other.counter

    def to_json(self) -> dict[str, Any]:
        return {"counter": self.counter, "timestamp": self.timestamp}

    @classmethod
    def from_json(cls, data: object) -> "DataVersion":
        if not isinstance(data, dict):
            raise ValueError(f"a data version must be a JSON object, not {type(data).__name__}")
        return cls(int(data.get("timestamp", 0)), int(data.get("counter", 0)))

    def encode(self) -> bytes:
        return codec.json_dumps(self.to_json()).encode()

    @classmethod
    def decode(cls, body: bytes | str) -> "DataVersion":
        return cls.from_json(codec.json_loads(body))
