"""Headers of the message lookups: QUERY_MESSAGE (12) and VIEW_MESSAGE_BY_ID (33) (Java's
QueryMessageRequestHeader, QueryMessageResponseHeader and ViewMessageRequestHeader)."""
from __future__ import annotations

from dataclasses import dataclass

from rocketmq_py.common.headers.base import CommandHeader, wire

#: The extField a client adds to a QUERY_MESSAGE by UNIQ_KEY (MixAll.UNIQUE_MSG_QUERY_FLAG).
UNIQUE_MSG_QUERY_FLAG = "_UNIQUE_KEY_QUERY"


@dataclass(slots=True)
class QueryMessageRequestHeader(CommandHeader):
    topic: str = wire("topic", required=True)
    key: str = wire("key", required=True)
    max_num: int = wire("maxNum", required=True)
    begin_timestamp: int = wire("beginTimestamp", required=True, bits=64)
    end_timestamp: int = wire("endTimestamp", required=True, bits=64)


@dataclass(slots=True)
class QueryMessageResponseHeader(CommandHeader):
    index_last_update_timestamp: int = wire("indexLastUpdateTimestamp", required=True, bits=64)
    index_last_update_phyoffset: int = wire("indexLastUpdatePhyoffset", required=True, bits=64)


@dataclass(slots=True)
class ViewMessageRequestHeader(CommandHeader):
    """``offset`` is the CommitLog offset of the record."""

    offset: int = wire("offset", required=True, bits=64)
