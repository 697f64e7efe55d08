"""Headers of the offset RPCs: QUERY/UPDATE_CONSUMER_OFFSET (14, 15), SEARCH_OFFSET_BY_TIMESTAMP (29),
GET_MAX_OFFSET (30), GET_MIN_OFFSET (31) and GET_EARLIEST_MSG_STORETIME (32)."""
from __future__ import annotations

from dataclasses import dataclass

from rocketmq_py.common.headers.base import CommandHeader, wire


@dataclass(slots=True)
class QueryConsumerOffsetRequestHeader(CommandHeader):
    consumer_group: str = wire("consumerGroup", required=True)
    topic: str = wire("topic", required=True)
    queue_id: int = wire("queueId", required=True)
    broker_name: str | None = wire("bname")


@dataclass(slots=True)
class UpdateConsumerOffsetRequestHeader(CommandHeader):
    consumer_group: str = wire("consumerGroup", required=True)
    topic: str = wire("topic", required=True)
    queue_id: int = wire("queueId", required=True)
    commit_offset: int = wire("commitOffset", required=True, bits=64)
    broker_name: str | None = wire("bname")


@dataclass(slots=True)
class QueueRequestHeader(CommandHeader):
    """GET_MAX_OFFSET, GET_MIN_OFFSET and GET_EARLIEST_MSG_STORETIME all carry a topic and a queue id."""

    topic: str = wire("topic", required=True)
    queue_id: int = wire("queueId", required=True)
    broker_name: str | None = wire("bname")


@dataclass(slots=True)
class SearchOffsetRequestHeader(CommandHeader):
    topic: str = wire("topic", required=True)
    queue_id: int = wire("queueId", required=True)
    timestamp: int = wire("timestamp", required=True, bits=64)
    broker_name: str | None = wire("bname")


@dataclass(slots=True)
class OffsetResponseHeader(CommandHeader):
    """The ``offset`` answer of QUERY_CONSUMER_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP, GET_MAX/MIN_OFFSET."""

    offset: int = wire("offset", required=True, bits=64)


@dataclass(slots=True)
class GetEarliestMsgStoretimeResponseHeader(CommandHeader):
    timestamp: int = wire("timestamp", required=True, bits=64)
