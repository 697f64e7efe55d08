"""JSON bodies of the broker's admin answers (Java's common/protocol/body TopicStatsTable, ConsumeStats,
ConsumerConnection, ProducerConnection, Connection, GroupList, QueryConsumeTimeSpanBody, ResetOffsetBody,
BrokerStatsData, ConsumeStatsList, QueryConsumeQueueResponseBody, GetConsumerStatusBody, QueryCorrectionOffsetBody).

fastjson writes bean properties in alphabetical order, and maps keyed by a
MessageQueue with the queue object itself as the key; both are kept here.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, TYPE_CHECKING

from rocketmq_py import codec
from rocketmq_py.codec import JsonObjectKey
from rocketmq_py.common.message_queue import MessageQueue
from rocketmq_py.common.stats import StatsSnapshot

if TYPE_CHECKING:
    from rocketmq_py.broker.clients import ClientChannelInfo, ConsumerGroupInfo


def _encode(value: object) -> bytes:
    return codec.json_dumps(value).encode()


def queue_key(queue: MessageQueue) -> JsonObjectKey:
    return JsonObjectKey(queue.to_json())


def language_name(code: int) -> str:
    names = codec.LANGUAGE_NAMES
    return names[code] if 0 <= code < len(names) else "OTHER"


def connection(info: ClientChannelInfo) -> dict[str, Any]:
    return {"clientAddr": info.client_addr, "clientId": info.client_id, "language": language_name(info.language),
            "version": info.version}


def topic_stats_table(offsets: Mapping[MessageQueue, tuple[int, int, int]]) -> bytes:
    """``offsets``: queue -> (min offset, max offset, last update timestamp)."""
    table = {queue_key(queue): {"lastUpdateTimestamp": last, "maxOffset": max_offset, "minOffset": min_offset}
             for queue, (min_offset, max_offset, last) in sorted(offsets.items())}
    return _encode({"offsetTable": table})


def consume_stats_json(offsets: Mapping[MessageQueue, tuple[int, int, int]], consume_tps: float) -> dict[str, Any]:
    """``offsets``: queue -> (broker offset, consumer offset, last timestamp)."""
    table = {queue_key(queue): {"brokerOffset": broker_offset, "consumerOffset": consumer_offset,
                                "lastTimestamp": last}
             for queue, (broker_offset, consumer_offset, last) in sorted(offsets.items())}
    return {"consumeTps": float(consume_tps), "offsetTable": table}


def consume_stats(offsets: Mapping[MessageQueue, tuple[int, int, int]], consume_tps: float) -> bytes:
    return _encode(consume_stats_json(offsets, consume_tps))


def consume_stats_list(broker_addr: str, groups: list[dict[str, list[dict[str, Any]]]], total_diff: int) -> bytes:
    """ConsumeStatsList: one ``{group: [ConsumeStats per topic]}`` map per subscription group."""
    return _encode({"brokerAddr": broker_addr, "consumeStatsList": groups, "totalDiff": total_diff})


def broker_stats_data(minute: StatsSnapshot, hour: StatsSnapshot, day: StatsSnapshot) -> bytes:
    return _encode({"statsDay": day.to_json(), "statsHour": hour.to_json(), "statsMinute": minute.to_json()})


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
    connections = [connection(info) for info in group.channel_info_table.values()]
    return _encode({
        "connectionSet": connections,
        "consumeFromWhere": group.consume_from_where.value,
        "consumeType": group.consume_type.value,
        "messageModel": group.message_model.value,
        "subscriptionTable": {topic: sub.to_json() for topic, sub in sorted(group.subscription_table.items())},
    })


def producer_connection(infos: Iterable[ClientChannelInfo]) -> bytes:
    return _encode({"connectionSet": [connection(info) for info in infos]})


def producer_table(groups: Mapping[str, Iterable[ClientChannelInfo]]) -> bytes:
    data = {group: [{"clientId": info.client_id, "language": language_name(info.language),
                     "lastUpdateTimestamp": info.last_update_timestamp, "remoteIP": info.client_addr,
                     "version": info.version} for info in infos]
            for group, infos in sorted(groups.items())}
    return _encode({"data": data})


def group_list(groups: Iterable[str]) -> bytes:
    return _encode({"groupList": sorted(groups)})


def topic_list(topic_names: Iterable[str]) -> bytes:
    return _encode({"topicList": sorted(topic_names)})


def consume_time_span(spans: list[dict[str, Any]]) -> bytes:
    return _encode({"consumeTimeSpanSet": spans})


def reset_offset_body(offsets: Mapping[MessageQueue, int]) -> bytes:
    return _encode({"offsetTable": {queue_key(queue): offset for queue, offset in sorted(offsets.items())}})
