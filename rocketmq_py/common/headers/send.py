"""Headers of the send RPCs (Java's SendMessageRequestHeader, SendMessageRequestHeaderV2,
SendMessageResponseHeader and ReplyMessageRequestHeader)."""
from __future__ import annotations

from dataclasses import dataclass

from rocketmq_py.common.headers.base import CommandHeader, wire


@dataclass(slots=True)
class SendMessageRequestHeaderV2(CommandHeader):
    """SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320) and SEND_REPLY_MESSAGE_V2 (325): the short names a..n."""

    fast_codes = True  # a FastCodesHeader in Java

    producer_group: str = wire("a", required=True)
    topic: str = wire("b", required=True)
    default_topic: str = wire("c", required=True)
    default_topic_queue_nums: int = wire("d", required=True)
    queue_id: int = wire("e", required=True)
    sys_flag: int = wire("f", required=True)
    born_timestamp: int = wire("g", required=True, bits=64)
    flag: int = wire("h", required=True)
    properties: str | None = wire("i")
    reconsume_times: int | None = wire("j")
    unit_mode: bool = wire("k", False)
    max_reconsume_times: int | None = wire("l")
    batch: bool = wire("m", False)
    broker_name: str | None = wire("n")


@dataclass(slots=True)
class SendMessageRequestHeader(CommandHeader):
    """SEND_MESSAGE (10) and SEND_REPLY_MESSAGE (324): the same fields as V2 under their long names."""

    producer_group: str = wire("producerGroup", required=True)
    topic: str = wire("topic", required=True)
    default_topic: str = wire("defaultTopic", required=True)
    default_topic_queue_nums: int = wire("defaultTopicQueueNums", required=True)
    queue_id: int = wire("queueId", required=True)
    sys_flag: int = wire("sysFlag", required=True)
    born_timestamp: int = wire("bornTimestamp", required=True, bits=64)
    flag: int = wire("flag", required=True)
    properties: str | None = wire("properties")
    reconsume_times: int | None = wire("reconsumeTimes")
    unit_mode: bool = wire("unitMode", False)
    max_reconsume_times: int | None = wire("maxReconsumeTimes")
    batch: bool = wire("batch", False)
    broker_name: str | None = wire("bname")


@dataclass(slots=True)
class SendMessageResponseHeader(CommandHeader):
    fast_codes = True  # a FastCodesHeader in Java

    msg_id: str = wire("msgId", required=True)
    queue_id: int = wire("queueId", required=True)
    queue_offset: int = wire("queueOffset", required=True, bits=64)
    transaction_id: str | None = wire("transactionId")


@dataclass(slots=True)
class ReplyMessageRequestHeader(CommandHeader):
    """PUSH_REPLY_MESSAGE_TO_CLIENT (326), broker to client: the long send names plus hosts and store time."""

    producer_group: str = wire("producerGroup", required=True)
    topic: str = wire("topic", required=True)
    default_topic: str = wire("defaultTopic", required=True)
    default_topic_queue_nums: int = wire("defaultTopicQueueNums", required=True)
    queue_id: int = wire("queueId", required=True)
    sys_flag: int = wire("sysFlag", required=True)
    born_timestamp: int = wire("bornTimestamp", required=True, bits=64)
    flag: int = wire("flag", required=True)
    properties: str | None = wire("properties")
    reconsume_times: int | None = wire("reconsumeTimes")
    unit_mode: bool = wire("unitMode", False)
    born_host: str = wire("bornHost", required=True)
    store_host: str = wire("storeHost", required=True)
    store_timestamp: int = wire("storeTimestamp", required=True, bits=64)
