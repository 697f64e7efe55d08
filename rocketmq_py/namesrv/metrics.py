"""The name server's Prometheus metrics and health, served on ``metricsPort``.

rocketmq-exporter publishes nothing about name servers, so these names are our own: the clusters, brokers and
topics a name server knows, and how long ago each live broker last registered.
"""
from __future__ import annotations

from typing import Any, Iterator, TYPE_CHECKING

if TYPE_CHECKING:
    from rocketmq_py.namesrv.controller import NamesrvController


class NamesrvMetrics:
    def __init__(self, namesrv: NamesrvController) -> None:
        self.namesrv = namesrv

    def health(self) -> tuple[bool, dict[str, Any]]:
        routes = self.namesrv.routes
        return True, {"address": self.namesrv.address, "liveBrokers": len(routes.broker_live_table),
                      "topics": len(routes.topic_queue_table)}

    def collect(self) -> Iterator[object]:
        from prometheus_client.core import GaugeMetricFamily

        routes = self.namesrv.routes
        brokers = GaugeMetricFamily("rocketmq_namesrv_brokers", "Broker names registered, by cluster",
                                    labels=["cluster"])
        for cluster, names in sorted(routes.cluster_addr_table.items()):
            brokers.add_metric([cluster], len(names))
        yield brokers
        live = GaugeMetricFamily("rocketmq_namesrv_live_brokers", "Broker addresses whose registration is current")
        live.add_metric([], len(routes.broker_live_table))
        yield live
        topics = GaugeMetricFamily("rocketmq_namesrv_topics", "Topics with a route")
        topics.add_metric([], len(routes.topic_queue_table))
        yield topics
        now = routes.clock()
        age = GaugeMetricFamily("rocketmq_namesrv_broker_registration_age_seconds",
                                "Time since each live broker last registered", labels=["brokerAddr"])
        for addr, info in sorted(routes.broker_live_table.items()):
            age.add_metric([addr], max(now - info.last_update_timestamp, 0) / 1000)
        yield age
