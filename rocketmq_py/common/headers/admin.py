"""Headers of the broker admin RPCs that mqadmin and the admin client send (Java's CreateTopicRequestHeader,
DeleteTopicRequestHeader, GetTopicStatsInfoRequestHeader, GetConsumeStatsRequestHeader,
GetConsumerConnectionListRequestHeader, GetProducerConnectionListRequestHeader,
DeleteSubscriptionGroupRequestHeader, QueryTopicConsumeByWhoRequestHeader, QueryConsumeTimeSpanRequestHeader,
CloneGroupOffsetRequestHeader, GetBrokerConfigResponseHeader, ViewBrokerStatsDataRequestHeader,
GetConsumeStatsInBrokerHeader, QueryConsumeQueueRequestHeader, QueryCorrectionOffsetHeader and
ResumeCheckHalfMessageRequestHeader)."""
from __future__ import annotations

from dataclasses import dataclass

from rocketmq_py.common.headers.base import CommandHeader, wire


@dataclass(slots=True)
class CreateTopicRequestHeader(CommandHeader):
    """UPDATE_AND_CREATE_TOPIC (17); ``topic_filter_type`` is ``SINGLE_TAG`` or ``MULTI_TAG``."""

    topic: str = wire("topic", required=True)
    default_topic: str = wire("defaultTopic", required=True)
    read_queue_nums: int = wire("readQueueNums", required=True)
    write_queue_nums: int = wire("writeQueueNums", required=True)
    perm: int = wire("perm", required=True)
    topic_filter_type: str = wire("topicFilterType", required=True)
    topic_sys_flag: int | None = wire("topicSysFlag")
    order: bool = wire("order", False, required=True)


@dataclass(slots=True)
class TopicRequestHeader(CommandHeader):
    """DELETE_TOPIC_IN_BROKER (215), GET_TOPIC_STATS_INFO (202) and QUERY_TOPIC_CONSUME_BY_WHO (300)."""

    topic: str = wire("topic", required=True)


@dataclass(slots=True)
class GetConsumeStatsRequestHeader(CommandHeader):
    consumer_group: str = wire("consumerGroup", required=True)
    topic: str | None = wire("topic")


@dataclass(slots=True)
class GetConsumerConnectionListRequestHeader(CommandHeader):
    consumer_group: str = wire("consumerGroup", required=True)


@dataclass(slots=True)
class GetProducerConnectionListRequestHeader(CommandHeader):
    producer_group: str = wire("producerGroup", required=True)


@dataclass(slots=True)
class DeleteSubscriptionGroupRequestHeader(CommandHeader):
    group_name: str = wire("groupName", required=True)
    remove_offset: bool = wire("removeOffset", False)


@dataclass(slots=True)
class QueryConsumeTimeSpanRequestHeader(CommandHeader):
    topic: str = wire("topic", required=True)
    group: str = wire("group", required=True)


@dataclass(slots=True)
class CloneGroupOffsetRequestHeader(CommandHeader):
    src_group: str = wire("srcGroup", required=True)
    dest_group: str = wire("destGroup", required=True)
    topic: str | None = wire("topic")
    offline: bool = wire("offline", False)


@dataclass(slots=True)
class GetBrokerConfigResponseHeader(CommandHeader):
    """GET_BROKER_CONFIG (26): ``version`` is the configuration's DataVersion JSON."""

    version: str = wire("version", required=True)


@dataclass(slots=True)
class ViewBrokerStatsDataRequestHeader(CommandHeader):
    """VIEW_BROKER_STATS_DATA (315): ``stats_name`` is a BrokerStatsManager statistic (``TOPIC_PUT_NUMS``, ...)."""

    stats_name: str = wire("statsName", required=True)
    stats_key: str = wire("statsKey", required=True)


@dataclass(slots=True)
class GetConsumeStatsInBrokerHeader(CommandHeader):
    """GET_BROKER_CONSUME_STATS (317): Java's field is ``isOrder``, and extFields take the field name."""

    is_order: bool = wire("isOrder", False, required=True)


@dataclass(slots=True)
class QueryConsumeQueueRequestHeader(CommandHeader):
    """QUERY_CONSUME_QUEUE (321): ``count`` units of ``topic``'s queue from queue offset ``index``."""

    topic: str = wire("topic", required=True)
    queue_id: int = wire("queueId", required=True)
    index: int = wire("index", required=True)
    count: int = wire("count", required=True)
    consumer_group: str | None = wire("consumerGroup")


@dataclass(slots=True)
class QueryCorrectionOffsetHeader(CommandHeader):
    """QUERY_CORRECTION_OFFSET (308): ``filter_groups`` is a comma-separated list of groups to leave out."""

    topic: str = wire("topic", required=True)
    compare_group: str = wire("compareGroup", required=True)
    filter_groups: str | None = wire("filterGroups")


@dataclass(slots=True)
class ResumeCheckHalfMessageRequestHeader(CommandHeader):
    """RESUME_CHECK_HALF_MESSAGE (323): ``msg_id`` is the offset message id of a half message."""

    msg_id: str | None = wire("msgId")
