"""Headers of the name server RPCs (Java's common/protocol/header/namesrv)."""
from __future__ import annotations

from dataclasses import dataclass

from rocketmq_py.common.headers.base import CommandHeader, wire


@dataclass
class GetRouteInfoRequestHeader(CommandHeader):
    topic: str = wire("topic", required=True)
    accept_standard_json_only: bool | None = wire("acceptStandardJsonOnly")


@dataclass
class GetTopicsByClusterRequestHeader(CommandHeader):
    cluster: str = wire("cluster", required=True)


@dataclass
class GetKVConfigRequestHeader(CommandHeader):
    namespace: str = wire("namespace", required=True)
    key: str = wire("key", required=True)


@dataclass
class GetKVConfigResponseHeader(CommandHeader):
    value: str | None = wire("value")
