"""Headers of the name server RPCs (Java's common/protocol/header/namesrv)."""
from __future__ import annotations

from dataclasses import dataclass

from rocketmq_py.common.headers.base import CommandHeader, wire


@dataclass(slots=True)
class GetRouteInfoRequestHeader(CommandHeader):
    topic: str = wire("topic", required=True)
    accept_standard_json_only: bool | None = wire("acceptStandardJsonOnly")


@dataclass(slots=True)
class GetTopicsByClusterRequestHeader(CommandHeader):
    cluster: str = wire("cluster", required=True)


@dataclass(slots=True)
class GetKVConfigRequestHeader(CommandHeader):
    namespace: str = wire("namespace", required=True)
    key: str = wire("key", required=True)


@dataclass(slots=True)
class GetKVConfigResponseHeader(CommandHeader):
    value: str | None = wire("value")


@dataclass(slots=True)
class PutKVConfigRequestHeader(CommandHeader):
    namespace: str = wire("namespace", required=True)
    key: str = wire("key", required=True)
    value: str = wire("value", required=True)


@dataclass(slots=True)
class DeleteKVConfigRequestHeader(CommandHeader):
    namespace: str = wire("namespace", required=True)
    key: str = wire("key", required=True)


@dataclass(slots=True)
class GetKVListByNamespaceRequestHeader(CommandHeader):
    namespace: str = wire("namespace", required=True)


@dataclass(slots=True)
class RegisterBrokerRequestHeader(CommandHeader):
    broker_name: str = wire("brokerName", required=True)
    broker_addr: str = wire("brokerAddr", required=True)
    cluster_name: str = wire("clusterName", required=True)
    ha_server_addr: str = wire("haServerAddr", required=True)
    broker_id: int = wire("brokerId", required=True, bits=64)
    compressed: bool = wire("compressed", False)
    #: CRC32 of the body as sent, sign bit cleared; 0 means "do not check".
    body_crc32: int = wire("bodyCrc32", 0)


@dataclass(slots=True)
class RegisterBrokerResponseHeader(CommandHeader):
    ha_server_addr: str | None = wire("haServerAddr")
    master_addr: str | None = wire("masterAddr")


@dataclass(slots=True)
class UnRegisterBrokerRequestHeader(CommandHeader):
    broker_name: str = wire("brokerName", required=True)
    broker_addr: str = wire("brokerAddr", required=True)
    cluster_name: str = wire("clusterName", required=True)
    broker_id: int = wire("brokerId", required=True, bits=64)


@dataclass(slots=True)
class QueryDataVersionRequestHeader(CommandHeader):
    broker_name: str = wire("brokerName", required=True)
    broker_addr: str = wire("brokerAddr", required=True)
    cluster_name: str = wire("clusterName", required=True)
    broker_id: int = wire("brokerId", required=True, bits=64)


@dataclass(slots=True)
class QueryDataVersionResponseHeader(CommandHeader):
    changed: bool = wire("changed", required=True)


@dataclass(slots=True)
class WipeWritePermOfBrokerRequestHeader(CommandHeader):
    broker_name: str = wire("brokerName", required=True)


@dataclass(slots=True)
class WipeWritePermOfBrokerResponseHeader(CommandHeader):
    wipe_topic_count: int = wire("wipeTopicCount", required=True)


@dataclass(slots=True)
class AddWritePermOfBrokerRequestHeader(CommandHeader):
    broker_name: str = wire("brokerName", required=True)


@dataclass(slots=True)
class AddWritePermOfBrokerResponseHeader(CommandHeader):
    add_topic_count: int = wire("addTopicCount", required=True)


@dataclass(slots=True)
class DeleteTopicFromNamesrvRequestHeader(CommandHeader):
    topic: str = wire("topic", required=True)
    cluster_name: str | None = wire("clusterName")
