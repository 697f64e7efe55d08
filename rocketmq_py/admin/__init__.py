"""Administration of a RocketMQ 4.9 cluster from Python (Java's DefaultMQAdminExt): :class:`AsyncAdmin` and its
blocking twin :class:`Admin`, and the result classes they return.

Names load on first use, as for the top-level package (rocketmq_py/_lazy.py).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from rocketmq_py._lazy import lazy_exports

_LAZY_NAMES: dict[str, str] = {
    "AsyncAdmin": "rocketmq_py.admin.core",
    "Admin": "rocketmq_py.admin.blocking",
    "AdminConfig": "rocketmq_py.admin.config",
    "RollbackStats": "rocketmq_py.admin.results",
    "MessageTrack": "rocketmq_py.admin.results",
    "TrackType": "rocketmq_py.admin.results",
    "TopicGroupStats": "rocketmq_py.admin.results",
    "QueryResult": "rocketmq_py.client.mq_admin",
    "TopicOffset": "rocketmq_py.common.admin_body",
    "TopicStatsTable": "rocketmq_py.common.admin_body",
    "OffsetWrapper": "rocketmq_py.common.admin_body",
    "ConsumeStats": "rocketmq_py.common.admin_body",
    "Connection": "rocketmq_py.common.admin_body",
    "ConsumerConnection": "rocketmq_py.common.admin_body",
    "ProducerConnection": "rocketmq_py.common.admin_body",
    "GroupList": "rocketmq_py.common.admin_body",
    "BrokerStatsData": "rocketmq_py.common.admin_body",
    "BrokerStatsItem": "rocketmq_py.common.admin_body",
    "ConsumerRunningInfo": "rocketmq_py.common.consumer_body",
    "ConsumeMessageDirectlyResult": "rocketmq_py.common.consumer_body",
    "ClusterInfo": "rocketmq_py.common.route",
    "TopicRouteData": "rocketmq_py.common.route",
    "TopicList": "rocketmq_py.common.route",
    "KVTable": "rocketmq_py.common.kv",
    "TopicConfig": "rocketmq_py.common.topic_config",
    "SubscriptionGroupConfig": "rocketmq_py.common.subscription_group",
}

__all__ = [
    "AsyncAdmin", "Admin", "AdminConfig", "RollbackStats", "MessageTrack", "TrackType", "TopicGroupStats",
    "QueryResult", "TopicOffset", "TopicStatsTable", "OffsetWrapper", "ConsumeStats", "Connection",
    "ConsumerConnection", "ProducerConnection", "GroupList", "BrokerStatsData", "BrokerStatsItem",
    "ConsumerRunningInfo", "ConsumeMessageDirectlyResult", "ClusterInfo", "TopicRouteData", "TopicList", "KVTable",
    "TopicConfig", "SubscriptionGroupConfig",
]

if TYPE_CHECKING:
    from rocketmq_py.admin.blocking import Admin
    from rocketmq_py.admin.config import AdminConfig
    from rocketmq_py.admin.core import AsyncAdmin
    from rocketmq_py.admin.results import MessageTrack, RollbackStats, TopicGroupStats, TrackType
    from rocketmq_py.client.mq_admin import QueryResult
    from rocketmq_py.common.admin_body import (
        BrokerStatsData,
        BrokerStatsItem,
        Connection,
        ConsumeStats,
        ConsumerConnection,
        GroupList,
        OffsetWrapper,
        ProducerConnection,
        TopicOffset,
        TopicStatsTable,
    )
    from rocketmq_py.common.consumer_body import ConsumeMessageDirectlyResult, ConsumerRunningInfo
    from rocketmq_py.common.kv import KVTable
    from rocketmq_py.common.route import ClusterInfo, TopicList, TopicRouteData
    from rocketmq_py.common.subscription_group import SubscriptionGroupConfig
    from rocketmq_py.common.topic_config import TopicConfig

__getattr__, __dir__ = lazy_exports(__name__, _LAZY_NAMES)
