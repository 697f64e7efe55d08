"""The HEART_BEAT body (Java's common/protocol/heartbeat/HeartbeatData, ProducerData, ConsumerData).

fastjson writes bean properties in alphabetical order; the key of the client
id is ``clientID`` (from ``getClientID``).
"""
from __future__ import annotations

from typing import Any

from dataclasses import dataclass, field

from rocketmq_py import codec


@dataclass
class HeartbeatData:
    client_id: str
    producer_groups: list[str] = field(default_factory=list)
    #: ConsumerData objects, already in their JSON form (consumers build them).
    consumer_data: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "clientID": self.client_id,
            "consumerDataSet": self.consumer_data,
            "producerDataSet": [{"groupName": group} for group in self.producer_groups],
        }

    def encode(self) -> bytes:
        return codec.json_dumps(self.to_json()).encode()

    @classmethod
    def decode(cls, body: bytes) -> "HeartbeatData":
        data = codec.json_loads(body)
        if not isinstance(data, dict):
            raise ValueError("a heartbeat body must be a JSON object")
        return cls(
            data.get("clientID", ""),
            [p.get("groupName", "") for p in data.get("producerDataSet") or []],
            list(data.get("consumerDataSet") or []),
        )
