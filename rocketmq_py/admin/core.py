"""The asyncio admin client (Java's DefaultMQAdminExt): every area in one class."""
from __future__ import annotations

from rocketmq_py.admin.cluster import ClusterMethods
from rocketmq_py.admin.groups import GroupMethods
from rocketmq_py.admin.stats import StatsMethods


class AsyncAdmin(StatsMethods, ClusterMethods, GroupMethods):
    """An admin client on the running asyncio loop: what ``mqadmin`` and the dashboard do with Java's
    DefaultMQAdminExt, against Java's servers or ours.

    ``AsyncAdmin(namesrv_addr="127.0.0.1:9876")``; any :class:`AdminConfig` field can be given as a keyword
    (ACL keys, TLS, ``instance_name``, ``timeout_millis``, ...), or pass a whole ``config``. Use
    ``async with`` or :meth:`start` / :meth:`shutdown`. Results are dataclasses; a refusal is the typed error
    of its response code (:class:`rocketmq_py.BrokerResponseError` and its subclasses).

    The methods keep Java's names in Python spelling, by area: clusters and brokers
    (``examine_broker_cluster_info``, ``fetch_broker_runtime_stats``, ``get_broker_config``, ...), topics
    (``create_and_update_topic_config``, ``delete_topic``, ``examine_topic_stats``, ...), subscription
    groups, consumers (``examine_consume_stats``, ``reset_offset_by_timestamp``, ...), messages
    (``view_message``, ``query_message``, ``consume_message_directly``, ...), the name server's KV config
    and broker statistics (``stats_all``).
    """
