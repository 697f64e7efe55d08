"""Topic routes and cluster layout, as the name server serves them.

Ports Java's ``common/protocol/route/TopicRouteData.java``, ``BrokerData``,
``QueueData``, ``body/ClusterInfo.java`` and ``body/TopicList.java``. Bodies
are fastjson: ``brokerAddrs`` maps a Long broker id to an address and comes
with unquoted keys (``{0:"ip:port"}``) from old name servers and for cluster
info, and with quoted keys for a 4.9.4+ requester; both are read here.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from rocketmq_py import codec

MASTER_ID = 0


class PermName:
    """Topic and broker permission bits (Java's PermName)."""

    PRIORITY = 8
    READ = 4
    WRITE = 2
    INHERIT = 1

    @staticmethod
    def is_readable(perm: int) -> bool:
        return bool(perm & PermName.READ)

    @staticmethod
    def is_writeable(perm: int) -> bool:
        return bool(perm & PermName.WRITE)

    @staticmethod
    def to_string(perm: int) -> str:
        return ("R" if perm & PermName.READ else "-") + ("W" if perm & PermName.WRITE else "-") + (
            "X" if perm & PermName.INHERIT else "-")


def _id_keyed(table: dict[str, Any] | None) -> dict[int, str]:
    return {int(key): value for key, value in (table or {}).items()}


@dataclass
class BrokerData:
    cluster: str
    broker_name: str
    broker_addrs: dict[int, str] = field(default_factory=dict)

    @property
    def master_addr(self) -> str | None:
        return self.broker_addrs.get(MASTER_ID)

    def select_broker_addr(self) -> str | None:
        """The master's address, else a random slave's (Java's BrokerData.selectBrokerAddr); None for none."""
        master = self.broker_addrs.get(MASTER_ID)
        if master is not None or not self.broker_addrs:
            return master
        return random.choice(list(self.broker_addrs.values()))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "BrokerData":
        return cls(data.get("cluster", ""), data.get("brokerName", ""), _id_keyed(data.get("brokerAddrs")))

    def to_json(self) -> dict[str, Any]:
        return {"brokerAddrs": dict(sorted(self.broker_addrs.items())), "brokerName": self.broker_name,
                "cluster": self.cluster}


@dataclass
class QueueData:
    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "QueueData":
        return cls(data.get("brokerName", ""), int(data.get("readQueueNums", 0)),
                   int(data.get("writeQueueNums", 0)), int(data.get("perm", 0)),
                   int(data.get("topicSysFlag", data.get("topicSynFlag", 0))))

    def to_json(self) -> dict[str, Any]:
        return {"brokerName": self.broker_name, "perm": self.perm, "readQueueNums": self.read_queue_nums,
                "topicSysFlag": self.topic_sys_flag, "writeQueueNums": self.write_queue_nums}


@dataclass
class TopicRouteData:
    queue_datas: list[QueueData] = field(default_factory=list)
    broker_datas: list[BrokerData] = field(default_factory=list)
    order_topic_conf: str | None = None
    filter_server_table: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def decode(cls, body: bytes) -> "TopicRouteData":
        data = codec.json_loads(body)
        if not isinstance(data, dict):
            raise ValueError("a topic route body must be a JSON object")
        return cls(
            [QueueData.from_json(q) for q in data.get("queueDatas") or []],
            [BrokerData.from_json(b) for b in data.get("brokerDatas") or []],
            data.get("orderTopicConf"),
            dict(data.get("filterServerTable") or {}),
        )

    def encode(self, standard_json: bool = True, pretty: bool = False) -> bytes:
        """fastjson's form; ``standard_json`` quotes the broker id keys (for 4.9.4+ requesters), ``pretty``
        indents it as Java's ``toJson(true)`` (what ``mqadmin topicRoute`` prints)."""
        value: dict[str, Any] = {
            "brokerDatas": [b.to_json() for b in self.broker_datas],
            "filterServerTable": self.filter_server_table,
        }
        if self.order_topic_conf is not None:
            value["orderTopicConf"] = self.order_topic_conf
        value["queueDatas"] = [q.to_json() for q in self.queue_datas]
        return codec.json_dumps(value, quote_keys=standard_json, pretty=pretty).encode()


@dataclass
class ClusterInfo:
    broker_addr_table: dict[str, BrokerData] = field(default_factory=dict)
    cluster_addr_table: dict[str, set[str]] = field(default_factory=dict)

    @classmethod
    def decode(cls, body: bytes) -> "ClusterInfo":
        data = codec.json_loads(body)
        if not isinstance(data, dict):
            raise ValueError("a cluster info body must be a JSON object")
        return cls(
            {name: BrokerData.from_json(b) for name, b in (data.get("brokerAddrTable") or {}).items()},
            {name: set(brokers) for name, brokers in (data.get("clusterAddrTable") or {}).items()},
        )

    def encode(self) -> bytes:
        value = {
            "brokerAddrTable": {name: b.to_json() for name, b in sorted(self.broker_addr_table.items())},
            "clusterAddrTable": {name: sorted(b) for name, b in sorted(self.cluster_addr_table.items())},
        }
        return codec.json_dumps(value).encode()


@dataclass
class TopicList:
    topics: set[str] = field(default_factory=set)
    broker_addr: str | None = None

    @classmethod
    def decode(cls, body: bytes) -> "TopicList":
        data = codec.json_loads(body)
        if not isinstance(data, dict):
            raise ValueError("a topic list body must be a JSON object")
        return cls(set(data.get("topicList") or []), data.get("brokerAddr"))

    def encode(self) -> bytes:
        value: dict[str, Any] = {}
        if self.broker_addr is not None:
            value["brokerAddr"] = self.broker_addr
        value["topicList"] = sorted(self.topics)
        return codec.json_dumps(value).encode()
