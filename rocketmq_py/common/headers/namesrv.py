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


@dataclass
class PutKVConfigRequestHeader(CommandHeader):
    namespace: str = wire("namespace", required=True)
    key: str = wire("key", required=True)
    value: str = wire("value", required=True)


@dataclass
class DeleteKVConfigRequestHeader(CommandHeader):
    namespace: str = wire("namespace", required=True)
    key: str = wire("key", required=True)


@dataclass
class GetKVListByNamespaceRequestHeader(CommandHeader):
    namespace: str = wire("namespace", required=True)


@dataclass
class RegisterBrokerRequestHeader(CommandHeader):
    broker_name: str = wire("brokerName", required=True)
    broker_addr: str = wire("brokerAddr", required=True)
    cluster_name: str = wire("clusterName", required=True)
    ha_server_addr: str = wire("haServerAddr", required=True)
    broker_id: int = wire("brokerId", required=True, bits=64)
    compressed: bool = wire("compressed", False)
    #: CRC32 of the body as sent, sign bit cleared; 0 means "do not check".
    body_crc32: int = wire("bodyCrc32", 0)


@dataclass
class RegisterBrokerResponseHeader(CommandHeader):
    ha_server_addr: str | None = wire("haServerAddr")
    master_addr: str | None = wire("masterAddr")


@dataclass
class UnRegisterBrokerRequestHeader(CommandHeader):
    broker_name: str = wire("brokerName", required=True)
    broker_addr: str = wire("brokerAddr", required=True)
    cluster_name: str = wire("clusterName", required=True)
    broker_id: int = wire("brokerId", required=True, bits=64)


@dataclass
class QueryDataVersionRequestHeader(CommandHeader):
    broker_name: str = wire("brokerName", required=True)
    broker_addr: str = wire("brokerAddr", required=True)
    cluster_name: str = wire("clusterName", required=True)
    broker_id: int = wire("brokerId", required=True, bits=64)


@dataclass
class QueryDataVersionResponseHeader(CommandHeader):
    changed: bool = wire("changed", required=True)


@dataclass
class WipeWritePermOfBrokerRequestHeader(CommandHeader):
    broker_name: str = wire("brokerName", required=True)


@dataclass
class WipeWritePermOfBrokerResponseHeader(CommandHeader):
    wipe_topic_count: int = wire("wipeTopicCount", required=True)


@dataclass
class AddWritePermOfBrokerRequestHeader(CommandHeader):
    broker_name: str = wire("brokerName", required=True)


@dataclass
class AddWritePermOfBrokerResponseHeader(CommandHeader):
    add_topic_count: int = wire("addTopicCount", required=True)


@dataclass
class DeleteTopicFromNamesrvRequestHeader(CommandHeader):
    topic: str = wire("topic", required=True)
    cluster_name: str | None = wire("clusterName")
