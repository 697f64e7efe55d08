"""The broker's Prometheus metrics and health, served on ``metricsPort``.

Metric names and labels are rocketmq-exporter's (its RMQMetricsCollector), with the values it computes from
the same admin requests, so dashboards built for the exporter work against one broker scraped directly:
``rocketmq_broker_tps``/``_qps`` (BROKER_PUT_NUMS/BROKER_GET_NUMS per second over the last minute),
``rocketmq_producer_tps``/``_message_size`` (TOPIC_PUT_NUMS/SIZE), ``rocketmq_consumer_tps``/``_message_size``
(GROUP_GET_NUMS/SIZE), ``rocketmq_producer_offset`` (a topic's messages), ``rocketmq_consumer_offset``,
``rocketmq_group_diff`` (lag), ``rocketmq_group_count`` and the ``rocketmq_brokeruntime_*`` figures.

The exporter only has rates; exact counts since the broker started are added under names of our own:
``rocketmq_topic_put_messages_total``, ``rocketmq_group_get_messages_total`` and their ``_bytes_total``
twins, the put latency histogram ``rocketmq_broker_put_latency_milliseconds`` and queue depths.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator

from rocketmq_py.broker.stats import PUT_LATENCY_BOUNDS_MS, WINDOWS_S
from rocketmq_py.broker.stats_manager import (
    BROKER_GET_NUMS,
    BROKER_PUT_NUMS,
    GROUP_GET_NUMS,
    GROUP_GET_SIZE,
    SNDBCK_PUT_NUMS,
    TOPIC_PUT_NUMS,
    TOPIC_PUT_SIZE,
)
from rocketmq_py.common.clock import now_ms
from rocketmq_py.common.heartbeat_consumer import MessageModel
from rocketmq_py.common.route import PermName
from rocketmq_py.common.topic import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX

if TYPE_CHECKING:
    from rocketmq_py.broker.controller import BrokerController

BROKER_LABELS = ["cluster", "brokerIP", "broker"]
TOPIC_LABELS = ["cluster", "broker", "topic"]
DLQ_LABELS = ["cluster", "broker", "group"]
GROUP_LABELS = ["cluster", "broker", "topic", "group"]
GROUP_DIFF_LABELS = ["group", "topic", "countOfOnlineConsumers", "msgModel"]
GROUP_COUNT_LABELS = ["caddr", "localaddr", "group"]
RUNTIME_LABELS = ["cluster", "brokerIP", "brokerHost", "des", "boottime", "broker_version"]
#: The exporter's rocketmq_brokeruntime_pmdt_* names, one per Java latency bucket.
_PMDT_SUFFIXES = ("0ms", "0to10ms", "10to50ms", "50to100ms", "100to200ms", "200to500ms", "500to1s", "1to2s",
                  "2to3s", "3to4s", "4to5s", "5to10s", "10stomore")
#: A broker that has not registered for this long is dropped by the name servers (Java: 2 minutes).
REGISTRATION_FRESH_MS = 120_000
#: The exporter's ordinals of MessageModel.
_MODEL_ORDINAL = {MessageModel.BROADCASTING: "0", MessageModel.CLUSTERING: "1"}


def _number(text: str | None) -> float:
    try:
        return float(text) if text else 0.0
    except ValueError:
        return 0.0


class BrokerMetrics:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    # --- /health ---------------------------------------------------------------------------------

    def health(self) -> tuple[bool, dict[str, Any]]:
        broker = self.broker
        store = broker.store
        writable = store.is_running and not store.disk_full and bool(broker.config.broker_permission & PermName.WRITE)
        namesrvs = broker.config.namesrv_addr_list
        now = now_ms()
        confirmed = {addr: at for addr, at in broker.outer_api.last_registered_ms.items() if addr in namesrvs}
        registered = not namesrvs or any(now - at < REGISTRATION_FRESH_MS for at in confirmed.values())
        details = {
            "storeWritable": writable,
            "registered": registered,
            "nameServers": {addr: confirmed.get(addr, 0) for addr in namesrvs},
            "brokerName": broker.config.broker_name,
            "brokerAddr": broker.broker_addr,
        }
        return writable and registered, details

    # --- /metrics --------------------------------------------------------------------------------

    def collect(self) -> Iterator[object]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

        broker = self.broker
        manager = broker.stats.manager
        cluster = broker.config.broker_cluster_name
        name = broker.config.broker_name
        addr = broker.broker_addr

        for metric, stats_name in (("rocketmq_broker_tps", BROKER_PUT_NUMS), ("rocketmq_broker_qps", BROKER_GET_NUMS)):
            family = GaugeMetricFamily(metric, f"{stats_name} per second over the last minute", labels=BROKER_LABELS)
            family.add_metric([cluster, addr, name], manager.minute(stats_name, cluster).tps)
            yield family

        producer_tps = GaugeMetricFamily("rocketmq_producer_tps", "TopicPutNums", labels=TOPIC_LABELS)
        producer_size = GaugeMetricFamily("rocketmq_producer_message_size", "TopicPutMessageSize", labels=TOPIC_LABELS)
        put_count = CounterMetricFamily("rocketmq_topic_put_messages", "Messages stored by topic since start",
                                        labels=TOPIC_LABELS)
        put_bytes = CounterMetricFamily("rocketmq_topic_put_bytes", "Bytes stored by topic since start",
                                        labels=TOPIC_LABELS)
        for item in manager.sets[TOPIC_PUT_NUMS]:
            labels = [cluster, name, item.key]
            producer_tps.add_metric(labels, item.in_minute().tps)
            put_count.add_metric(labels, item.value)
            size = manager.item(TOPIC_PUT_SIZE, item.key)
            producer_size.add_metric(labels, size.in_minute().tps if size else 0.0)
            put_bytes.add_metric(labels, size.value if size else 0)
        yield from (producer_tps, producer_size, put_count, put_bytes)

        consumer_tps = GaugeMetricFamily("rocketmq_consumer_tps", "GroupGetNums", labels=GROUP_LABELS)
        consumer_size = GaugeMetricFamily("rocketmq_consumer_message_size", "GroupGetMessageSize", labels=GROUP_LABELS)
        get_count = CounterMetricFamily("rocketmq_group_get_messages", "Messages pulled by topic and group since start",
                                        labels=GROUP_LABELS)
        get_bytes = CounterMetricFamily("rocketmq_group_get_bytes", "Bytes pulled by topic and group since start",
                                        labels=GROUP_LABELS)
        for item in manager.sets[GROUP_GET_NUMS]:
            topic, _, group = item.key.partition("@")
            labels = [cluster, name, topic, group]
            consumer_tps.add_metric(labels, item.in_minute().tps)
            get_count.add_metric(labels, item.value)
            size = manager.item(GROUP_GET_SIZE, item.key)
            consumer_size.add_metric(labels, size.in_minute().tps if size else 0.0)
            get_bytes.add_metric(labels, size.value if size else 0)
        send_back = GaugeMetricFamily("rocketmq_send_back_nums", "SendBackNums", labels=GROUP_LABELS)
        for item in manager.sets[SNDBCK_PUT_NUMS]:
            topic, _, group = item.key.partition("@")
            send_back.add_metric([cluster, name, topic, group], item.in_minute().sum)
        yield from (consumer_tps, consumer_size, get_count, get_bytes, send_back)

        yield from self._offsets(GaugeMetricFamily, cluster, name)
        yield from self._runtime(GaugeMetricFamily, HistogramMetricFamily, cluster, name, addr)

    def _offsets(self, gauge: Any, cluster: str, name: str) -> Iterator[object]:
        broker = self.broker
        store = broker.store
        topic_offset = gauge("rocketmq_producer_offset", "TopicOffset", labels=TOPIC_LABELS)
        retry_offset = gauge("rocketmq_topic_retry_offset", "TopicRetryOffset", labels=TOPIC_LABELS)
        dlq_offset = gauge("rocketmq_topic_dlq_offset", "TopicDLQOffset", labels=DLQ_LABELS)
        consumer_offset = gauge("rocketmq_consumer_offset", "GroupBrokerTotalOffset", labels=GROUP_LABELS)
        diff = gauge("rocketmq_group_diff", "GroupDiff", labels=GROUP_DIFF_LABELS)
        retry_diff = gauge("rocketmq_group_retrydiff", "GroupRetryDiff", labels=GROUP_DIFF_LABELS)
        dlq_diff = gauge("rocketmq_group_dlqdiff", "GroupDLQDiff", labels=GROUP_DIFF_LABELS)
        for topic, config in sorted(broker.topics.table.items()):
            max_offsets = {queue_id: max(store.get_max_offset_in_queue(topic, queue_id), 0)
                           for queue_id in range(config.read_queue_nums)}
            total = sum(max_offsets.values())
            if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                retry_offset.add_metric([cluster, name, topic], total)
            elif topic.startswith(DLQ_GROUP_TOPIC_PREFIX):
                dlq_offset.add_metric([cluster, name, topic[len(DLQ_GROUP_TOPIC_PREFIX):]], total)
            else:
                topic_offset.add_metric([cluster, name, topic], total)
            groups = broker.offsets.which_group_by_topic(topic) | broker.consumers.topic_consumed_by(topic)
            for group in sorted(groups):
                committed = sum(max(broker.offsets.query_offset(group, topic, queue_id), 0) for queue_id in max_offsets)
                lag = sum(max(end - max(broker.offsets.query_offset(group, topic, queue_id), 0), 0)
                          for queue_id, end in max_offsets.items())
                online = broker.consumers.group(group)
                model = online.message_model if online is not None else MessageModel.CLUSTERING
                count = len(online.channel_info_table) if online is not None else 0
                labels = [group, topic, str(count), _MODEL_ORDINAL[model]]
                if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                    retry_diff.add_metric(labels, lag)
                elif topic.startswith(DLQ_GROUP_TOPIC_PREFIX):
                    dlq_diff.add_metric(labels, lag)
                else:
                    consumer_offset.add_metric([cluster, name, topic, group], committed)
                    if model == MessageModel.CLUSTERING:
                        diff.add_metric(labels, lag)
        group_count = gauge("rocketmq_group_count", "GroupCount", labels=GROUP_COUNT_LABELS)
        for group, info in sorted(broker.consumers.consumer_table.items()):
            channels = list(info.channel_info_table.values())
            group_count.add_metric([",".join(channel.client_addr for channel in channels),
                                    ",".join(channel.client_id for channel in channels), group], len(channels))
        yield from (topic_offset, retry_offset, dlq_offset, consumer_offset, diff, retry_diff, dlq_diff, group_count)

    def _runtime(self, gauge: Any, histogram: Any, cluster: str, name: str, addr: str) -> Iterator[object]:
        broker = self.broker
        stats = broker.stats
        info = broker.admin_processor.runtime_info()
        labels = [cluster, addr, "", info.get("brokerVersionDesc", ""), info.get("bootTimestamp", ""),
                  info.get("brokerVersion", "")]

        def runtime(metric: str, value: float, text: str) -> object:
            family = gauge(f"rocketmq_brokeruntime_{metric}", text, labels=RUNTIME_LABELS)
            family.add_metric(labels, value)
            return family

        rates: dict[str, Callable[[int], float]] = {"put_tps": stats.put.tps, "gettransfered_tps": stats.get_transferred.tps,
                 "getfound_tps": stats.get_found.tps, "getmiss_tps": stats.get_miss.tps,
                 "gettotal_tps": lambda window: stats.get_found.tps(window) + stats.get_miss.tps(window)}
        for metric, rate in rates.items():
            for window in WINDOWS_S:
                yield runtime(f"{metric}{window}", rate(window), f"{metric} over {window} s")
        for key, metric in (("msgPutTotalTodayNow", "msg_put_total_today_now"),
                            ("msgGetTotalTodayNow", "msg_gettotal_today_now"),
                            ("msgPutTotalTodayMorning", "msg_puttotal_todaymorning"),
                            ("msgGetTotalTodayMorning", "msg_gettotal_todaymorning"),
                            ("dispatchBehindBytes", "dispatch_behind_bytes"),
                            ("pageCacheLockTimeMills", "pagecache_lock_time_mills"),
                            ("commitLogDiskRatio", "commitlog_disk_ratio"),
                            ("consumeQueueDiskRatio", "consumequeue_disk_ratio"),
                            ("putMessageEntireTimeMax", "putmessage_entire_time_max"),
                            ("getMessageEntireTimeMax", "getmessage_entire_time_max"),
                            ("putMessageTimesTotal", "putmessage_times_total"),
                            ("putMessageSizeTotal", "put_message_size_total"),
                            ("putMessageAverageSize", "put_message_average_size"),
                            ("commitLogMaxOffset", "commitlog_maxoffset"),
                            ("commitLogMinOffset", "commitlog_minoffset"),
                            ("earliestMessageTimeStamp", "earliest_message_timestamp"),
                            ("putLatency99", "put_latency_99"), ("putLatency999", "put_latency_999")):
            yield runtime(metric, _number(info.get(key)), key)
        for suffix, count in zip(_PMDT_SUFFIXES, stats.put_latency.last_minute()):
            yield runtime(f"pmdt_{suffix}", count, f"Puts that took {suffix} in the last whole minute")

        buckets = []
        cumulative = 0
        counts = stats.put_latency.all_time
        # Java's buckets hold whole milliseconds below their bound, so "le" is the bound minus one.
        for bound, count in zip((1,) + PUT_LATENCY_BOUNDS_MS[1:], counts):
            cumulative += count
            buckets.append((str(float(bound - 1)), cumulative))
        buckets.append(("+Inf", sum(counts)))
        latency = histogram("rocketmq_broker_put_latency_milliseconds", "Put latency since start (Java's buckets)",
                            labels=["cluster", "broker"])
        latency.add_metric([cluster, name], buckets, sum_value=stats.put_latency.total_ms)
        yield latency
        depth = gauge("rocketmq_broker_queue_depth", "Requests waiting in the broker, by kind",
                      labels=["cluster", "broker", "queue"])
        depth.add_metric([cluster, name, "suspendedPulls"], broker.hold_service.suspended)
        depth.add_metric([cluster, name, "flushBytes"], broker.store.bytes_to_flush())
        yield depth
