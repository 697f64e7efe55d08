"""JSON bodies of the broker's admin answers (Java's common/protocol/body TopicStatsTable, ConsumeStats,
ConsumerConnection, ProducerConnection, Connection, GroupList, QueryConsumeTimeSpanBody, ResetOffsetBody,
BrokerStatsData, ConsumeStatsList, QueryConsumeQueueResponseBody, GetConsumerStatusBody, QueryCorrectionOffsetBody).

The bodies an admin client also reads are classes of :mod:`rocketmq_py.common.admin_body`, built here from
the broker's tables. fastjson writes bean properties in alphabetical order, and maps keyed by a
MessageQueue with the queue object itself as the key; both are kept here.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, TYPE_CHECKING

from rocketmq_py import codec
from rocketmq_py.common.admin_body import (
    BrokerStatsData,
    BrokerStatsItem,
    ConsumeStats,
    Connection,
    ConsumerConnection,
    GroupList,
    OffsetWrapper,
    ProducerConnection,
    TopicOffset,
    TopicStatsTable,
)
from rocketmq_py.common.consumer_body import queue_key
from rocketmq_py.common.message_queue import MessageQueue
from rocketmq_py.common.stats import StatsSnapshot

if TYPE_CHECKING:
    from rocketmq_py.broker.clients import ClientChannelInfo, ConsumerGroupInfo


def _encode(value: object) -> bytes:
    return codec.json_dumps(value).encode()


def language_name(code: int) -> str:
    names = codec.LANGUAGE_NAMES
    return names[code] if 0 <= code < len(names) else "OTHER"


def connection(info: ClientChannelInfo) -> Connection:
    return Connection(info.client_id, info.client_addr, language_name(info.language), info.version)


def topic_stats_table(offsets: Mapping[MessageQueue, tuple[int, int, int]]) -> bytes:
    """``offsets``: queue -> (min offset, max offset, last update timestamp)."""
    return TopicStatsTable({queue: TopicOffset(*values) for queue, values in offsets.items()}).encode()


def consume_stats_json(offsets: Mapping[MessageQueue, tuple[int, int, int]], consume_tps: float) -> dict[str, Any]:
    """``offsets``: queue -> (broker offset, consumer offset, last timestamp)."""
    return ConsumeStats({queue: OffsetWrapper(*values) for queue, values in offsets.items()}, consume_tps).to_json()


def consume_stats(offsets: Mapping[MessageQueue, tuple[int, int, int]], consume_tps: float) -> bytes:
    return _encode(consume_stats_json(offsets, consume_tps))


def consume_stats_list(broker_addr: str, groups: list[dict[str, list[dict[str, Any]]]], total_diff: int) -> bytes:
    """ConsumeStatsList: one ``{group: [ConsumeStats per topic]}`` map per subscription group."""
    return _encode({"brokerAddr": broker_addr, "consumeStatsList": groups, "totalDiff": total_diff})


def broker_stats_data(minute: StatsSnapshot, hour: StatsSnapshot, day: StatsSnapshot) -> bytes:
    items = (BrokerStatsItem(snapshot.sum, snapshot.tps, snapshot.avgpt) for snapshot in (minute, hour, day))
    return BrokerStatsData(*items).encode()


def query_consume_queue(min_index: int, max_index: int, units: list[tuple[int, int, int]] | None,
                        subscription: dict[str, Any] | None, filter_data: str | None) -> bytes:
    """QueryConsumeQueueResponseBody; ``units`` are (physic offset, size, tags code), None when not read."""
    value: dict[str, Any] = {}
    if filter_data is not None:
        value["filterData"] = filter_data
    value["maxQueueIndex"] = max_index
    value["minQueueIndex"] = min_index
    if units is not None:
        value["queueData"] = [{"eval": False, "physicOffset": offset, "physicSize": size, "tagsCode": tags_code}
                              for offset, size, tags_code in units]
    if subscription is not None:
        value["subscriptionData"] = subscription
    return _encode(value)


def consumer_status(table: Mapping[str, Mapping[MessageQueue, int]]) -> bytes:
    """GetConsumerStatusBody as the broker answers it: offsets by client id, ``messageQueueTable`` empty."""
    consumers = {client_id: {queue_key(queue): offset for queue, offset in sorted(offsets.items())}
                 for client_id, offsets in sorted(table.items())}
    return _encode({"consumerTable": consumers, "messageQueueTable": {}})


def correction_offsets(offsets: Mapping[int, int]) -> bytes:
    return _encode({"correctionOffsets": dict(sorted(offsets.items()))})


def consumer_connection(group: ConsumerGroupInfo) -> bytes:
    return ConsumerConnection([connection(info) for info in group.channel_info_table.values()],
                              dict(group.subscription_table), group.consume_type, group.message_model,
                              group.consume_from_where).encode()


def producer_connection(infos: Iterable[ClientChannelInfo]) -> bytes:
    return ProducerConnection([connection(info) for info in infos]).encode()


def producer_table(groups: Mapping[str, Iterable[ClientChannelInfo]]) -> bytes:
    data = {group: [{"clientId": info.client_id, "language": language_name(info.language),
                     "lastUpdateTimestamp": info.last_update_timestamp, "remoteIP": info.client_addr,
                     "version": info.version} for info in infos]
            for group, infos in sorted(groups.items())}
    return _encode({"data": data})


def group_list(groups: Iterable[str]) -> bytes:
    return GroupList(set(groups)).encode()


def topic_list(topic_names: Iterable[str]) -> bytes:
    return _encode({"topicList": sorted(topic_names)})


def consume_time_span(spans: list[dict[str, Any]]) -> bytes:
    return _encode({"consumeTimeSpanSet": spans})


def reset_offset_body(offsets: Mapping[MessageQueue, int]) -> bytes:
    return _encode({"offsetTable": {queue_key(queue): offset for queue, offset in sorted(offsets.items())}})
