"""The blocking admin client: :class:`AsyncAdmin` run on the background loop of the blocking clients (shared with
the blocking producers and consumers, so clients of one client id share one client instance, as in Java)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, AsyncGenerator, Iterable, Iterator, Mapping

from rocketmq_py.admin.core import AsyncAdmin
from rocketmq_py.client.mq_admin import END_OF_TIME_MS, BlockingMQAdminMethods
from rocketmq_py.client.producer.blocking import BlockingFacade

if TYPE_CHECKING:
    from rocketmq_py.admin.config import AdminConfig
    from rocketmq_py.admin.results import MessageTrack, RollbackStats, TopicGroupStats
    from rocketmq_py.client.consumer.pull import PullResult
    from rocketmq_py.client.mq_admin import QueryResult
    from rocketmq_py.common.admin_body import (
        BrokerStatsData,
        ConsumeStats,
        ConsumerConnection,
        GroupList,
        ProducerConnection,
        TopicStatsTable,
    )
    from rocketmq_py.common.consumer_body import ConsumeMessageDirectlyResult, ConsumerRunningInfo
    from rocketmq_py.common.kv import KVTable
    from rocketmq_py.common.message import MessageExt
    from rocketmq_py.common.message_queue import MessageQueue
    from rocketmq_py.common.route import ClusterInfo, TopicList, TopicRouteData
    from rocketmq_py.common.subscription_group import SubscriptionGroupConfig
    from rocketmq_py.common.topic_config import TopicConfig, TopicConfigSerializeWrapper



class Admin(BlockingMQAdminMethods, BlockingFacade):
    """A blocking admin client; the same arguments and methods as :class:`AsyncAdmin`, without ``await``.

    ``with Admin(namesrv_addr="127.0.0.1:9876") as admin: admin.examine_topic_stats("TopicTest")``.
    """

    def __init__(self, *, config: AdminConfig | None = None, **options: Any) -> None:
        super().__init__()
        self._core: AsyncAdmin = self._run(_make(config, options))

    @property
    def core(self) -> AsyncAdmin:
        """The asyncio admin underneath (it lives on the background loop)."""
        return self._core

    @property
    def config(self) -> AdminConfig:
        """The settings (a copy made at construction; change them before :meth:`start`)."""
        return self._core.config

    def start(self) -> None:
        """Join the client instance (see :meth:`AsyncAdmin.start`); an admin starts once."""
        self._run(self._core.start())

    def shutdown(self) -> None:
        """Leave the client instance (see :meth:`AsyncAdmin.shutdown`)."""
        self._run(self._core.shutdown())

    def close(self) -> None:
        """The same as :meth:`shutdown`."""
        self.shutdown()

    def __enter__(self) -> "Admin":
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()

    # --- the plumbing's lookups ---------------------------------------------------------------------

    def name_server_addresses(self) -> list[str]:
        """The name server addresses this admin uses."""
        return self._core.name_server_addresses()

    def examine_broker_cluster_info(self) -> ClusterInfo:
        """The clusters, their brokers and the brokers' addresses, as the name server knows them."""
        return self._run(self._core.examine_broker_cluster_info())

    def examine_topic_route_info(self, topic: str) -> TopicRouteData:
        """The route of ``topic`` from the name server (see :meth:`AsyncAdmin.examine_topic_route_info`)."""
        return self._run(self._core.examine_topic_route_info(topic))

    def master_addrs_of_cluster(self, cluster: str) -> list[str]:
        """The master address of each broker of ``cluster``."""
        return self._run(self._core.master_addrs_of_cluster(cluster))

    def broker_addrs_of_cluster(self, cluster: str) -> dict[str, list[str]]:
        """Each master address of ``cluster`` with its slaves' addresses."""
        return self._run(self._core.broker_addrs_of_cluster(cluster))

    def broker_name_of_addr(self, addr: str) -> str:
        """The name of the broker at ``addr``."""
        return self._run(self._core.broker_name_of_addr(addr))

    # --- clusters and brokers -----------------------------------------------------------------------

    def fetch_broker_runtime_stats(self, broker_addr: str) -> KVTable:
        """The runtime statistics of the broker at ``broker_addr``."""
        return self._run(self._core.fetch_broker_runtime_stats(broker_addr))

    def get_broker_config(self, broker_addr: str) -> dict[str, str]:
        """Every configuration key of the broker at ``broker_addr`` with its value."""
        return self._run(self._core.get_broker_config(broker_addr))

    def update_broker_config(self, broker_addr: str, properties: Mapping[str, str]) -> None:
        """Change configuration keys of the broker at ``broker_addr`` while it runs."""
        self._run(self._core.update_broker_config(broker_addr, properties))

    # --- topics -------------------------------------------------------------------------------------

    def create_and_update_topic_config(self, broker_addr: str, config: TopicConfig) -> None:
        """Create or change the topic of ``config`` on the broker at ``broker_addr``."""
        self._run(self._core.create_and_update_topic_config(broker_addr, config))

    def create_or_update_order_conf(self, topic: str, order_conf: str, is_cluster: bool) -> None:
        """Record ``topic`` as ordered on the name servers (see :meth:`AsyncAdmin.create_or_update_order_conf`)."""
        self._run(self._core.create_or_update_order_conf(topic, order_conf, is_cluster))

    def delete_topic_in_broker(self, broker_addrs: Iterable[str], topic: str) -> None:
        """Delete ``topic`` on each of these brokers."""
        self._run(self._core.delete_topic_in_broker(list(broker_addrs), topic))

    def delete_topic_in_name_server(self, namesrv_addrs: Iterable[str] | None, topic: str,
                                    cluster: str | None = None) -> None:
        """Remove ``topic``'s route from these name servers (every configured one for None)."""
        self._run(self._core.delete_topic_in_name_server(None if namesrv_addrs is None else list(namesrv_addrs),
                                                         topic, cluster))

    def delete_topic(self, topic: str, cluster: str) -> list[str]:
        """Delete ``topic`` from every master of ``cluster`` and from every name server."""
        return self._run(self._core.delete_topic(topic, cluster))

    def fetch_all_topic_list(self) -> TopicList:
        """Every topic the name server knows."""
        return self._run(self._core.fetch_all_topic_list())

    def fetch_topics_by_cluster(self, cluster: str) -> TopicList:
        """The topics whose routes include a broker of ``cluster``."""
        return self._run(self._core.fetch_topics_by_cluster(cluster))

    def examine_topic_stats(self, topic: str) -> TopicStatsTable:
        """Each queue of ``topic``: min and max offset and last update time."""
        return self._run(self._core.examine_topic_stats(topic))

    def get_all_topic_config(self, broker_addr: str) -> TopicConfigSerializeWrapper:
        """Every topic configuration of the broker at ``broker_addr``."""
        return self._run(self._core.get_all_topic_config(broker_addr))

    def examine_topic_config(self, broker_addr: str, topic: str) -> TopicConfig | None:
        """The configuration of ``topic`` on the broker at ``broker_addr``; None when it has none."""
        return self._run(self._core.examine_topic_config(broker_addr, topic))

    def get_topic_cluster_list(self, topic: str) -> set[str]:
        """The clusters of the first broker of ``topic``'s route."""
        return self._run(self._core.get_topic_cluster_list(topic))

    def query_topic_consume_by_who(self, topic: str) -> GroupList:
        """The consumer groups of ``topic``."""
        return self._run(self._core.query_topic_consume_by_who(topic))

    # --- subscription groups ------------------------------------------------------------------------

    def create_and_update_subscription_group_config(self, broker_addr: str, config: SubscriptionGroupConfig) -> None:
        """Create or change the subscription group of ``config`` on the broker at ``broker_addr``."""
        self._run(self._core.create_and_update_subscription_group_config(broker_addr, config))

    def delete_subscription_group(self, broker_addr: str, group: str, remove_offset: bool = False) -> None:
        """Delete ``group`` on the broker at ``broker_addr`` (its offsets too, with ``remove_offset``)."""
        self._run(self._core.delete_subscription_group(broker_addr, group, remove_offset))

    def get_all_subscription_group(self, broker_addr: str) -> dict[str, SubscriptionGroupConfig]:
        """Every subscription group of the broker at ``broker_addr``, by name."""
        return self._run(self._core.get_all_subscription_group(broker_addr))

    def examine_subscription_group_config(self, broker_addr: str, group: str) -> SubscriptionGroupConfig | None:
        """The settings of ``group`` on the broker at ``broker_addr``; None when it has none."""
        return self._run(self._core.examine_subscription_group_config(broker_addr, group))

    # --- consumers and producers --------------------------------------------------------------------

    def examine_consume_stats(self, group: str, topic: str | None = None) -> ConsumeStats:
        """``group``'s progress on every queue it consumes, and its consume rate."""
        return self._run(self._core.examine_consume_stats(group, topic))

    def examine_consumer_connection_info(self, group: str, broker_addr: str | None = None) -> ConsumerConnection:
        """The online consumers of ``group`` with its subscriptions."""
        return self._run(self._core.examine_consumer_connection_info(group, broker_addr))

    def examine_producer_connection_info(self, group: str, topic: str) -> ProducerConnection:
        """The connected producers of ``group``, from a broker of ``topic``."""
        return self._run(self._core.examine_producer_connection_info(group, topic))

    def get_consumer_running_info(self, group: str, client_id: str, jstack: bool = False) -> ConsumerRunningInfo:
        """What the consumer ``client_id`` of ``group`` reports about itself."""
        return self._run(self._core.get_consumer_running_info(group, client_id, jstack))

    def reset_offset_by_timestamp(self, topic: str, group: str, timestamp_ms: int, force: bool = True,
                                  cpp: bool = False) -> dict[MessageQueue, int]:
        """Move ``group``'s offsets of ``topic`` to ``timestamp_ms`` through the brokers (see
        :meth:`AsyncAdmin.reset_offset_by_timestamp`)."""
        return self._run(self._core.reset_offset_by_timestamp(topic, group, timestamp_ms, force, cpp))

    def reset_offset_by_timestamp_old(self, group: str, topic: str, timestamp_ms: int,
                                      force: bool = True) -> list[RollbackStats]:
        """Move ``group``'s offsets of ``topic`` to ``timestamp_ms`` from here (see
        :meth:`AsyncAdmin.reset_offset_by_timestamp_old`)."""
        return self._run(self._core.reset_offset_by_timestamp_old(group, topic, timestamp_ms, force))

    def update_consume_offset(self, broker_addr: str, group: str, queue: MessageQueue, offset: int) -> None:
        """Set ``group``'s committed offset of ``queue`` on the broker at ``broker_addr``."""
        self._run(self._core.update_consume_offset(broker_addr, group, queue, offset))

    def skip_accumulated_message(self, group: str, topic: str,
                                 force: bool = True) -> dict[MessageQueue, int] | list[RollbackStats]:
        """Move ``group``'s offsets of ``topic`` to the end (see :meth:`AsyncAdmin.skip_accumulated_message`)."""
        return self._run(self._core.skip_accumulated_message(group, topic, force))

    # --- messages -----------------------------------------------------------------------------------

    def query_message_by_unique_key(self, topic: str, unique_key: str, max_num: int = 32, begin_ms: int = 0,
                                    end_ms: int = END_OF_TIME_MS) -> QueryResult:
        """The message of ``topic`` whose unique key is ``unique_key``."""
        return self._run(self._core.query_message_by_unique_key(topic, unique_key, max_num, begin_ms, end_ms))

    def pull_messages(self, queue: MessageQueue, offset: int, max_nums: int = 32,
                      sub_expression: str = "*") -> PullResult:
        """One pull of ``queue`` from ``offset`` (see :meth:`AsyncAdmin.pull_messages`)."""
        return self._run(self._core.pull_messages(queue, offset, max_nums, sub_expression))

    def pull_queue_messages(self, queue: MessageQueue, begin_offset: int, end_offset: int,
                            sub_expression: str = "*") -> Iterator[MessageExt]:
        """The messages of ``queue`` from ``begin_offset`` up to ``end_offset``, pulled as they are iterated."""
        pulled = self._core.pull_queue_messages(queue, begin_offset, end_offset, sub_expression)
        try:
            while (message := self._run(_next_or_none(pulled))) is not None:
                yield message
        finally:
            self._run(pulled.aclose())

    def query_message_by_topic(self, topic: str, begin_ms: int, end_ms: int, max_num: int = 2000) -> list[MessageExt]:
        """The messages of ``topic`` stored between ``begin_ms`` and ``end_ms``, newest first."""
        return self._run(self._core.query_message_by_topic(topic, begin_ms, end_ms, max_num))

    def consume_message_directly(self, group: str, client_id: str, msg_id: str,
                                 topic: str | None = None) -> ConsumeMessageDirectlyResult:
        """Have the consumer ``client_id`` of ``group`` consume the message ``msg_id`` again, now."""
        return self._run(self._core.consume_message_directly(group, client_id, msg_id, topic))

    def message_track_detail(self, message: MessageExt) -> list[MessageTrack]:
        """For each group of the message's topic, whether it consumed the message."""
        return self._run(self._core.message_track_detail(message))

    # --- the name server's KV config ----------------------------------------------------------------

    def create_and_update_kv_config(self, namespace: str, key: str, value: str) -> None:
        """Set ``key`` of ``namespace`` to ``value`` on every name server."""
        self._run(self._core.create_and_update_kv_config(namespace, key, value))

    def delete_kv_config(self, namespace: str, key: str) -> None:
        """Remove ``key`` of ``namespace`` from every name server."""
        self._run(self._core.delete_kv_config(namespace, key))

    def get_kv_config(self, namespace: str, key: str) -> str | None:
        """The value of ``key`` in ``namespace``."""
        return self._run(self._core.get_kv_config(namespace, key))

    def get_kv_list_by_namespace(self, namespace: str) -> KVTable:
        """Every key of ``namespace`` with its value."""
        return self._run(self._core.get_kv_list_by_namespace(namespace))

    # --- statistics ---------------------------------------------------------------------------------

    def view_broker_stats_data(self, broker_addr: str, stats_name: str, stats_key: str) -> BrokerStatsData:
        """One statistic of the broker at ``broker_addr`` over the last minute, hour and day."""
        return self._run(self._core.view_broker_stats_data(broker_addr, stats_name, stats_key))

    def stats_all(self, topic: str | None = None, active_only: bool = False) -> list[TopicGroupStats]:
        """The put and get rates and counts of every topic and group (see :meth:`AsyncAdmin.stats_all`)."""
        return self._run(self._core.stats_all(topic, active_only))


async def _make(config: AdminConfig | None, options: dict[str, Any]) -> AsyncAdmin:
    """Build the asyncio admin on the background loop."""
    return AsyncAdmin(config=config, **options)


async def _next_or_none(pulled: AsyncGenerator[MessageExt, None]) -> MessageExt | None:
    """The next message, or None at the end (StopAsyncIteration cannot cross into the calling thread as such)."""
    try:
        return await pulled.__anext__()
    except StopAsyncIteration:
        return None
