"""Topics: create and update, delete, list, route, status and the clusters and groups of a topic (what
``mqadmin updateTopic``, ``deleteTopic``, ``topicList``, ``topicRoute``, ``topicStatus`` and
``topicClusterList`` ask)."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Iterable

from rocketmq_py.admin.namesrv import KVConfigMethods
from rocketmq_py.common.kv import NAMESPACE_ORDER_TOPIC_CONFIG
from rocketmq_py.errors import ClientError, RocketMQError

if TYPE_CHECKING:
    from rocketmq_py.common.admin_body import GroupList, TopicStatsTable
    from rocketmq_py.common.route import TopicList
    from rocketmq_py.common.topic_config import TopicConfig, TopicConfigSerializeWrapper

_log = logging.getLogger(__name__)


class TopicMethods(KVConfigMethods):
    async def create_and_update_topic_config(self, broker_addr: str, config: TopicConfig) -> None:
        """Create the topic of ``config`` on the broker at ``broker_addr``, or change its queues, permission and
        flags; the broker registers it with the name servers."""
        await self._api.create_topic(broker_addr, self.config.create_topic_key, config, self._timeout)

    async def create_or_update_order_conf(self, topic: str, order_conf: str, is_cluster: bool) -> None:
        """Record ``topic`` as ordered on the name servers: ``order_conf`` is ``brokerName:queueNums`` pairs
        separated by ``;``. With ``is_cluster`` it replaces what was recorded; else it is merged into it, one
        entry per broker name."""
        if not is_cluster:
            try:
                old = await self.get_kv_config(NAMESPACE_ORDER_TOPIC_CONFIG, topic)
            except RocketMQError as error:
                _log.debug("no order conf of %s yet: %s", topic, error)
                old = None
            entries = {entry.split(":")[0]: entry for entry in (old or "").split(";") if entry.strip()}
            entries[order_conf.split(":")[0]] = order_conf
            order_conf = ";".join(entries.values())
        await self._on_every_namesrv(
            lambda addr: self._api.put_kv_config(addr, NAMESPACE_ORDER_TOPIC_CONFIG, topic, order_conf, self._timeout))

    async def delete_topic_in_broker(self, broker_addrs: Iterable[str], topic: str) -> None:
        """Delete ``topic`` (its configuration, queues and statistics) on each of these brokers."""
        for addr in broker_addrs:
            await self._api.delete_topic_in_broker(addr, topic, self._timeout)

    async def delete_topic_in_name_server(self, namesrv_addrs: Iterable[str] | None, topic: str,
                                          cluster: str | None = None) -> None:
        """Remove ``topic``'s route from these name servers (every configured one for None); with ``cluster``
        only the route to that cluster's brokers."""
        for addr in self.name_server_addresses() if namesrv_addrs is None else namesrv_addrs:
            await self._api.delete_topic_in_namesrv(addr, topic, cluster, self._timeout)

    async def delete_topic(self, topic: str, cluster: str) -> list[str]:
        """Delete ``topic`` from every master of ``cluster`` and from every name server, as ``mqadmin
        deleteTopic`` does; the broker addresses it was deleted on."""
        masters = await self.master_addrs_of_cluster(cluster)
        await self.delete_topic_in_broker(masters, topic)
        await self.delete_topic_in_name_server(None, topic, cluster)
        return masters

    async def fetch_all_topic_list(self) -> TopicList:
        """Every topic the name server knows (system, retry and DLQ topics included)."""
        return await self._running_instance().call_namesrv(
            lambda addr: self._api.get_all_topics(addr, self._timeout))

    async def fetch_topics_by_cluster(self, cluster: str) -> TopicList:
        """The topics whose routes include a broker of ``cluster``."""
        return await self._running_instance().call_namesrv(
            lambda addr: self._api.get_topics_by_cluster(addr, cluster, self._timeout))

    async def examine_topic_stats(self, topic: str) -> TopicStatsTable:
        """Each queue of ``topic`` on every broker of its route: min and max offset and last update time.
        ClientError when no broker knows the topic."""
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.common.admin_body import TopicStatsTable

        merged = TopicStatsTable()
        for _, addr in await self._broker_addrs_of_topic(topic):
            stats = await self._api.get_topic_stats_info(addr, topic, self._timeout)
            merged.offset_table.update(stats.offset_table)
        if not merged.offset_table:
            raise ClientError(f"Not found the topic stats info of {topic!r}: no broker of its route holds it")
        return merged

    async def get_all_topic_config(self, broker_addr: str) -> TopicConfigSerializeWrapper:
        """Every topic configuration of the broker at ``broker_addr``."""
        return await self._api.get_all_topic_config(broker_addr, self._timeout)

    async def examine_topic_config(self, broker_addr: str, topic: str) -> TopicConfig | None:
        """The configuration of ``topic`` on the broker at ``broker_addr``; None when it has none."""
        return (await self.get_all_topic_config(broker_addr)).topic_config_table.get(topic)

    async def get_topic_cluster_list(self, topic: str) -> set[str]:
        """The clusters of the first broker of ``topic``'s route (Java's getTopicClusterList)."""
        info = await self.examine_broker_cluster_info()
        route = await self.examine_topic_route_info(topic)
        if not route.broker_datas:
            return set()
        broker_name = route.broker_datas[0].broker_name
        return {cluster for cluster, names in info.cluster_addr_table.items() if broker_name in names}

    async def query_topic_consume_by_who(self, topic: str) -> GroupList:
        """The consumer groups of ``topic``, as the first broker of its route knows them (online ones and those
        holding offsets)."""
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.common.admin_body import GroupList

        for _, addr in await self._broker_addrs_of_topic(topic):
            return await self._api.query_topic_consume_by_who(addr, topic, self._timeout)
        return GroupList()
