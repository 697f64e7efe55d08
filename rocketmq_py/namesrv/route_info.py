"""The name server's view of the cluster (Java's namesrv/routeinfo/RouteInfoManager).

Five tables: topic -> broker name -> queue data; broker name -> broker data
(cluster and addresses by broker id); cluster -> broker names; live brokers by
address (last registration, data version, connection, HA address); filter
servers by broker address. A broker that stops registering for
``expired_millis`` is dropped by :meth:`scan_not_active_broker`; a broker whose
connection closes is dropped at once by :meth:`on_channel_destroy`.

All methods run on the name server's event loop, so no locking is needed.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable, Iterable

from rocketmq_py.common.clock import now_ms
from rocketmq_py.common.data_version import DataVersion
from rocketmq_py.common.route import MASTER_ID, BrokerData, ClusterInfo, PermName, QueueData, TopicList, TopicRouteData
from rocketmq_py.common.topic_config import TopicConfig, TopicConfigSerializeWrapper

_log = logging.getLogger(__name__)

BROKER_CHANNEL_EXPIRED_MILLIS = 120_000

#: TopicSysFlag bits
_UNIT_FLAG = 0x1
_UNIT_SUB_FLAG = 0x2


@dataclass
class BrokerLiveInfo:
    last_update_timestamp: int
    data_version: DataVersion
    channel: object
    ha_server_addr: str


@dataclass
class RegisterBrokerResult:
    ha_server_addr: str | None = None
    master_addr: str | None = None


@dataclass
class RouteInfoManager:
    expired_millis: int = BROKER_CHANNEL_EXPIRED_MILLIS
    clock: Callable[[], int] = now_ms
    topic_queue_table: dict[str, dict[str, QueueData]] = field(default_factory=dict)
    broker_addr_table: dict[str, BrokerData] = field(default_factory=dict)
    cluster_addr_table: dict[str, set[str]] = field(default_factory=dict)
    broker_live_table: dict[str, BrokerLiveInfo] = field(default_factory=dict)
    filter_server_table: dict[str, list[str]] = field(default_factory=dict)

    # --- registration ------------------------------------------------------------------------

    def register_broker(
        self,
        cluster_name: str,
        broker_addr: str,
        broker_name: str,
        broker_id: int,
        ha_server_addr: str,
        topic_config_wrapper: TopicConfigSerializeWrapper,
        filter_server_list: list[str] | None,
        channel: object,
    ) -> RegisterBrokerResult:
        result = RegisterBrokerResult()
        self.cluster_addr_table.setdefault(cluster_name, set()).add(broker_name)

        broker_data = self.broker_addr_table.get(broker_name)
        register_first = broker_data is None
        if broker_data is None:
            broker_data = BrokerData(cluster_name, broker_name, {})
            self.broker_addr_table[broker_name] = broker_data
        # One address has one role: a slave promoted to master drops its old id first.
        for stale_id in [i for i, a in broker_data.broker_addrs.items() if a == broker_addr and i != broker_id]:
            del broker_data.broker_addrs[stale_id]
        old_addr = broker_data.broker_addrs.get(broker_id)
        broker_data.broker_addrs[broker_id] = broker_addr
        if broker_id == MASTER_ID and old_addr != broker_addr:
            _log.info("cluster [%s] broker [%s] master address changed from %s to %s",
                      cluster_name, broker_name, old_addr, broker_addr)
        register_first = register_first or old_addr is None

        version = topic_config_wrapper.data_version
        if broker_id == MASTER_ID and (register_first or self.is_broker_topic_config_changed(broker_addr, version)):
            for config in topic_config_wrapper.topic_config_table.values():
                self._create_and_update_queue_data(broker_name, config)

        previous = self.broker_live_table.get(broker_addr)
        self.broker_live_table[broker_addr] = BrokerLiveInfo(self.clock(), version, channel, ha_server_addr)
        if previous is None:
            _log.info("new broker registered: %s (%s/%s id %d), HA server %s",
                      broker_addr, cluster_name, broker_name, broker_id, ha_server_addr)

        if filter_server_list is not None:
            if filter_server_list:
                self.filter_server_table[broker_addr] = list(filter_server_list)
            else:
                self.filter_server_table.pop(broker_addr, None)

        if broker_id != MASTER_ID:
            master_addr = broker_data.broker_addrs.get(MASTER_ID)
            master_live = self.broker_live_table.get(master_addr) if master_addr else None
            if master_live is not None:
                result.ha_server_addr = master_live.ha_server_addr
                result.master_addr = master_addr
        return result

    def _create_and_update_queue_data(self, broker_name: str, config: TopicConfig) -> None:
        queue_data = QueueData(broker_name, config.read_queue_nums, config.write_queue_nums,
                               config.perm, config.topic_sys_flag)
        queues = self.topic_queue_table.setdefault(config.topic_name, {})
        old = queues.get(broker_name)
        queues[broker_name] = queue_data
        if old is None:
            _log.info("new topic registered: %s %s", config.topic_name, queue_data)
        elif old != queue_data:
            _log.info("topic changed: %s from %s to %s", config.topic_name, old, queue_data)

    def is_broker_topic_config_changed(self, broker_addr: str, version: DataVersion) -> bool:
        previous = self.query_broker_topic_config(broker_addr)
        return previous is None or previous != version

    def query_broker_topic_config(self, broker_addr: str) -> DataVersion | None:
        live = self.broker_live_table.get(broker_addr)
        return live.data_version if live is not None else None

    def update_broker_info_update_timestamp(self, broker_addr: str, timestamp: int | None = None) -> None:
        live = self.broker_live_table.get(broker_addr)
        if live is not None:
            live.last_update_timestamp = self.clock() if timestamp is None else timestamp

    def unregister_broker(self, cluster_name: str, broker_addr: str, broker_name: str, broker_id: int) -> None:
        removed = self.broker_live_table.pop(broker_addr, None)
        _log.info("unregister broker %s (%s/%s id %d): %s", broker_addr, cluster_name, broker_name, broker_id,
                  "was live" if removed is not None else "was not live")
        self.filter_server_table.pop(broker_addr, None)
        broker_data = self.broker_addr_table.get(broker_name)
        if broker_data is None:
            return
        broker_data.broker_addrs.pop(broker_id, None)
        if broker_data.broker_addrs:
            return
        del self.broker_addr_table[broker_name]
        names = self.cluster_addr_table.get(cluster_name)
        if names is not None:
            names.discard(broker_name)
            if not names:
                del self.cluster_addr_table[cluster_name]
        self._remove_topics_of_broker(broker_name)

    def _remove_topics_of_broker(self, broker_name: str) -> None:
        for topic in list(self.topic_queue_table):
            queues = self.topic_queue_table[topic]
            if queues.pop(broker_name, None) is not None:
                _log.info("topic %s is no longer served by broker %s", topic, broker_name)
            if not queues:
                del self.topic_queue_table[topic]

    # --- expiry ------------------------------------------------------------------------------

    def scan_not_active_broker(self) -> list[str]:
        """Drop brokers that have not registered within the expiry time; return their addresses."""
        deadline = self.clock() - self.expired_millis
        expired = [(addr, live) for addr, live in self.broker_live_table.items()
                   if live.last_update_timestamp < deadline]
        for addr, live in expired:
            _log.warning("broker %s expired: no registration for %d ms", addr, self.expired_millis)
            self.broker_live_table.pop(addr, None)
            _close_channel(live.channel)
            self.on_channel_destroy(addr, live.channel)
        return [addr for addr, _ in expired]

    def on_channel_destroy(self, remote_addr: str | None, channel: object) -> None:
        """Forget the broker that used ``channel`` (or, if none did, the broker at ``remote_addr``)."""
        found = None
        if channel is not None:
            found = next((addr for addr, live in self.broker_live_table.items() if live.channel is channel), None)
        if found is None:
            found = remote_addr
        else:
            _log.info("connection of broker %s closed; removing it from the routes", found)
        if not found:
            return
        self.broker_live_table.pop(found, None)
        self.filter_server_table.pop(found, None)
        broker_name = None
        for name, broker_data in list(self.broker_addr_table.items()):
            ids = [i for i, a in broker_data.broker_addrs.items() if a == found]
            if not ids:
                continue
            broker_name = name
            del broker_data.broker_addrs[ids[0]]
            if not broker_data.broker_addrs:
                del self.broker_addr_table[name]
                self._forget_broker_name(name)
            break
        if broker_name is not None:
            _log.info("removed broker address %s of %s", found, broker_name)

    def _forget_broker_name(self, broker_name: str) -> None:
        for cluster, names in list(self.cluster_addr_table.items()):
            if broker_name in names:
                names.discard(broker_name)
                if not names:
                    del self.cluster_addr_table[cluster]
                break
        self._remove_topics_of_broker(broker_name)

    # --- queries -----------------------------------------------------------------------------

    def pickup_topic_route_data(self, topic: str) -> TopicRouteData | None:
        queues = self.topic_queue_table.get(topic)
        if not queues:
            return None
        route = TopicRouteData(queue_datas=[_copy_queue(q) for _, q in sorted(queues.items())])
        for broker_name in sorted(queues):
            broker_data = self.broker_addr_table.get(broker_name)
            if broker_data is None:
                continue
            route.broker_datas.append(BrokerData(broker_data.cluster, broker_data.broker_name,
                                                 dict(broker_data.broker_addrs)))
            for addr in broker_data.broker_addrs.values():
                servers = self.filter_server_table.get(addr)
                if servers is not None:
                    route.filter_server_table[addr] = list(servers)
        return route if route.broker_datas else None

    def get_all_cluster_info(self) -> ClusterInfo:
        return ClusterInfo(
            {name: BrokerData(b.cluster, b.broker_name, dict(b.broker_addrs))
             for name, b in self.broker_addr_table.items()},
            {cluster: set(names) for cluster, names in self.cluster_addr_table.items()},
        )

    def get_all_topic_list(self) -> TopicList:
        return TopicList(set(self.topic_queue_table))

    def get_topics_by_cluster(self, cluster: str) -> TopicList:
        names = self.cluster_addr_table.get(cluster, set())
        return TopicList({topic for topic, queues in self.topic_queue_table.items() if names & queues.keys()})

    def get_system_topic_list(self) -> TopicList:
        """Cluster names and broker names (each is a topic), plus the address of one broker."""
        topics: set[str] = set()
        for cluster, names in self.cluster_addr_table.items():
            topics.add(cluster)
            topics.update(names)
        result = TopicList(topics)
        for broker_data in self.broker_addr_table.values():
            if broker_data.broker_addrs:
                result.broker_addr = next(iter(broker_data.broker_addrs.values()))
                break
        return result

    def get_unit_topics(self) -> TopicList:
        return self._topics_where(lambda flag: bool(flag & _UNIT_FLAG))

    def get_has_unit_sub_topic_list(self) -> TopicList:
        return self._topics_where(lambda flag: bool(flag & _UNIT_SUB_FLAG))

    def get_has_unit_sub_un_unit_topic_list(self) -> TopicList:
        return self._topics_where(lambda flag: not flag & _UNIT_FLAG and bool(flag & _UNIT_SUB_FLAG))

    def _topics_where(self, test: Callable[[int], bool]) -> TopicList:
        return TopicList({topic for topic, queues in self.topic_queue_table.items()
                          if queues and test(next(iter(queues.values())).topic_sys_flag)})

    # --- changes -----------------------------------------------------------------------------

    def delete_topic(self, topic: str, cluster_name: str | None = None) -> None:
        if not cluster_name:
            self.topic_queue_table.pop(topic, None)
            return
        queues = self.topic_queue_table.get(topic)
        if queues is None:
            return
        for broker_name in self.cluster_addr_table.get(cluster_name, ()):
            queues.pop(broker_name, None)
        if not queues:
            del self.topic_queue_table[topic]

    def wipe_write_perm_of_broker(self, broker_name: str) -> int:
        """Clear the write permission of every topic on ``broker_name``; return how many topics changed."""
        return self._change_perm(broker_name, lambda perm: perm & ~PermName.WRITE)

    def add_write_perm_of_broker(self, broker_name: str) -> int:
        """Give every topic on ``broker_name`` read and write permission; return how many topics changed."""
        return self._change_perm(broker_name, lambda perm: PermName.READ | PermName.WRITE)

    def _change_perm(self, broker_name: str, change: Callable[[int], int]) -> int:
        count = 0
        for queues in self.topic_queue_table.values():
            queue_data = queues.get(broker_name)
            if queue_data is not None:
                queue_data.perm = change(queue_data.perm)
                count += 1
        return count

    def live_broker_addresses(self) -> Iterable[str]:
        return list(self.broker_live_table)


def _copy_queue(queue: QueueData) -> QueueData:
    return QueueData(queue.broker_name, queue.read_queue_nums, queue.write_queue_nums, queue.perm,
                     queue.topic_sys_flag)


def _close_channel(channel: object) -> None:
    close = getattr(channel, "close", None)
    if callable(close):
        try:
            close()
        except Exception:
            _log.debug("closing the channel of an expired broker failed", exc_info=True)
