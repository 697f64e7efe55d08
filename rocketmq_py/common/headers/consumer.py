"""Headers of the consumer RPCs: CONSUMER_SEND_MSG_BACK (36), GET_CONSUMER_LIST_BY_GROUP (38), and the
requests a broker sends to a consumer: NOTIFY_CONSUMER_IDS_CHANGED (40), RESET_CONSUMER_CLIENT_OFFSET (220),
GET_CONSUMER_STATUS_FROM_CLIENT (221), GET_CONSUMER_RUNNING_INFO (307) and CONSUME_MESSAGE_DIRECTLY (309)."""
from __future__ import annotations

from dataclasses import dataclass

from rocketmq_py.common.headers.base import CommandHeader, wire


@dataclass(slots=True)
class ConsumerSendMsgBackRequestHeader(CommandHeader):
    offset: int = wire("offset", required=True, bits=64)
    group: str = wire("group", required=True)
    delay_level: int = wire("delayLevel", required=True)
    origin_msg_id: str | None = wire("originMsgId")
    origin_topic: str | None = wire("originTopic")
    unit_mode: bool = wire("unitMode", False)
    max_reconsume_times: int | None = wire("maxReconsumeTimes")
    broker_name: str | None = wire("bname")


@dataclass(slots=True)
class GetConsumerListByGroupRequestHeader(CommandHeader):
    consumer_group: str = wire("consumerGroup", required=True)


@dataclass(slots=True)
class NotifyConsumerIdsChangedRequestHeader(CommandHeader):
    consumer_group: str = wire("consumerGroup", required=True)


@dataclass(slots=True)
class ResetOffsetRequestHeader(CommandHeader):
    topic: str = wire("topic", required=True)
    group: str = wire("group", required=True)
    timestamp: int = wire("timestamp", required=True, bits=64)
    #: Java's field is ``isForce``, and extFields take the field name.
    is_force: bool = wire("isForce", required=True)


@dataclass(slots=True)
class GetConsumerStatusRequestHeader(CommandHeader):
    topic: str = wire("topic", required=True)
    group: str = wire("group", required=True)
    client_addr: str | None = wire("clientAddr")


@dataclass(slots=True)
class GetConsumerRunningInfoRequestHeader(CommandHeader):
    consumer_group: str = wire("consumerGroup", required=True)
    client_id: str = wire("clientId", required=True)
    jstack_enable: bool = wire("jstackEnable", False)


@dataclass(slots=True)
class ConsumeMessageDirectlyResultRequestHeader(CommandHeader):
    consumer_group: str = wire("consumerGroup", required=True)
    client_id: str | None = wire("clientId")
    msg_id: str | None = wire("msgId")
    broker_name: str | None = wire("brokerName")
