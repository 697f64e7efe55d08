"""Results of admin operations that no broker sends as such, but the admin client works out (Java's
common/admin RollbackStats, tools/admin/api MessageTrack and TrackType, and the rows of ``statsAll``).

The results brokers and name servers send are the wire classes themselves: :mod:`rocketmq_py.common.admin_body`
(TopicStatsTable, ConsumeStats, ConsumerConnection, ...), :mod:`rocketmq_py.common.consumer_body`
(ConsumerRunningInfo, ConsumeMessageDirectlyResult) and :mod:`rocketmq_py.common.route` (ClusterInfo,
TopicRouteData, TopicList).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass


@dataclass(frozen=True)
class RollbackStats:
    """One queue of an offset reset made by the admin itself (the old way): the broker's max offset, the
    group's offset before, the offset of the timestamp, and the offset the group has now."""

    broker_name: str
    queue_id: int
    broker_offset: int
    consumer_offset: int
    timestamp_offset: int
    rollback_offset: int


class TrackType(str, enum.Enum):
    """Where a message stands for one consumer group."""

    CONSUMED = "CONSUMED"
    CONSUMED_BUT_FILTERED = "CONSUMED_BUT_FILTERED"
    PULL = "PULL"
    NOT_CONSUME_YET = "NOT_CONSUME_YET"
    NOT_ONLINE = "NOT_ONLINE"
    UNKNOWN = "UNKNOWN"


@dataclass(frozen=True)
class MessageTrack:
    """Whether the consumer group ``consumer_group`` consumed a message, and why not when it could not tell."""

    consumer_group: str
    track_type: TrackType
    exception_desc: str | None = None


@dataclass(frozen=True)
class TopicGroupStats:
    """A row of ``statsAll``: a topic's put rate and count over 24 hours, and, per consumer group, its lag
    and get rate and count (``consumer_group`` is None for a topic nobody consumes)."""

    topic: str
    consumer_group: str | None
    accumulation: int
    in_tps: float
    in_msg_24_hour: int
    out_tps: float | None = None
    out_msg_24_hour: int | None = None
