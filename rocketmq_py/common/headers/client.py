"""Headers of the client registration RPCs (Java's UnregisterClientRequestHeader)."""
from __future__ import annotations

from dataclasses import dataclass

from rocketmq_py.common.headers.base import CommandHeader, wire


@dataclass(slots=True)
class UnregisterClientRequestHeader(CommandHeader):
    client_id: str = wire("clientID", required=True)
    producer_group: str | None = wire("producerGroup")
    consumer_group: str | None = wire("consumerGroup")
