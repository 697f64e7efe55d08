"""What mqadmin asks about topics, groups and clients (the corresponding handlers of Java's
AdminBrokerProcessor and Broker2Client): GET_TOPIC_STATS_INFO (202), GET_CONSUME_STATS (208),
GET_CONSUMER_CONNECTION_LIST (203), GET_PRODUCER_CONNECTION_LIST (204), GET_ALL_PRODUCER_INFO (328),
QUERY_TOPIC_CONSUME_BY_WHO (300), QUERY_CONSUME_TIME_SPAN (303), INVOKE_BROKER_TO_RESET_OFFSET (222), and
GET_CONSUMER_RUNNING_INFO (307) / CONSUME_MESSAGE_DIRECTLY (309), which are passed on to the consumer.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from rocketmq_py import codec
from rocketmq_py.broker import bodies
from rocketmq_py.broker.processors.common import fail, ok
from rocketmq_py.common.clock import now_ms
from rocketmq_py.common.codes import RequestCode, ResponseCode
from rocketmq_py.common.headers.admin import (
    GetConsumerConnectionListRequestHeader,
    GetConsumeStatsRequestHeader,
    GetProducerConnectionListRequestHeader,
    QueryConsumeTimeSpanRequestHeader,
    TopicRequestHeader,
)
from rocketmq_py.common.headers.consumer import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    ResetOffsetRequestHeader,
)
from rocketmq_py.common.message_queue import MessageQueue
from rocketmq_py.remoting import ProcessorTable, RemotingCommand, RequestContext, create_request

if TYPE_CHECKING:
    from rocketmq_py.broker.controller import BrokerController

_log = logging.getLogger(__name__)

CALL_CLIENT_TIMEOUT_MS = 10_000


class StatsProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register_into(self, table: ProcessorTable) -> None:
        handlers = {
            RequestCode.GET_TOPIC_STATS_INFO: self.get_topic_stats_info,
            RequestCode.GET_CONSUME_STATS: self.get_consume_stats,
            RequestCode.GET_CONSUMER_CONNECTION_LIST: self.get_consumer_connection_list,
            RequestCode.GET_PRODUCER_CONNECTION_LIST: self.get_producer_connection_list,
            RequestCode.GET_ALL_PRODUCER_INFO: self.get_all_producer_info,
            RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: self.query_topic_consume_by_who,
            RequestCode.QUERY_CONSUME_TIME_SPAN: self.query_consume_time_span,
            RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: self.reset_offset,
            RequestCode.GET_CONSUMER_RUNNING_INFO: self.get_consumer_running_info,
            RequestCode.CONSUME_MESSAGE_DIRECTLY: self.consume_message_directly,
        }
        for code, handler in handlers.items():
            table.register(code, handler)

    def _queue(self, topic: str, queue_id: int) -> MessageQueue:
        return MessageQueue(topic, self.broker.config.broker_name, queue_id)

    async def get_topic_stats_info(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = TopicRequestHeader.from_command(request)
        broker = self.broker
        topic_config = broker.topics.select(header.topic)
        if topic_config is None:
            return fail(request, ResponseCode.TOPIC_NOT_EXIST, f"topic[{header.topic}] not exist")
        store = broker.store
        offsets = {}
        for queue_id in range(topic_config.write_queue_nums):
            min_offset = max(store.get_min_offset_in_queue(header.topic, queue_id), 0)
            max_offset = max(store.get_max_offset_in_queue(header.topic, queue_id), 0)
            last = store.get_message_store_timestamp(header.topic, queue_id, max_offset - 1) if max_offset > 0 else 0
            offsets[self._queue(header.topic, queue_id)] = (min_offset, max_offset, last)
        return ok(request, body=bodies.topic_stats_table(offsets))

    async def get_consume_stats(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = GetConsumeStatsRequestHeader.from_command(request)
        broker = self.broker
        group = header.consumer_group
        if header.topic and header.topic.strip():
            topic_names = {header.topic}
        else:
            topic_names = broker.offsets.which_topic_by_consumer(group)
        offsets = {}
        consume_tps = 0.0
        for topic in sorted(topic_names):
            topic_config = broker.topics.select(topic)
            if topic_config is None:
                _log.warning("consumeStats: topic %s does not exist", topic)
                continue
            if broker.consumers.find_subscription(group, topic) is None and broker.consumers.subscription_count(group):
                continue
            for queue_id in range(topic_config.read_queue_nums):
                broker_offset = max(broker.store.get_max_offset_in_queue(topic, queue_id), 0)
                consumer_offset = max(broker.offsets.query_offset(group, topic, queue_id), 0)
                last = 0
                if consumer_offset > 0:
                    last = max(broker.store.get_message_store_timestamp(topic, queue_id, consumer_offset - 1), 0)
                offsets[self._queue(topic, queue_id)] = (broker_offset, consumer_offset, last)
            consume_tps += broker.stats.group_get_tps(group, topic)
        return ok(request, body=bodies.consume_stats(offsets, consume_tps))

    async def get_consumer_connection_list(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = GetConsumerConnectionListRequestHeader.from_command(request)
        group = self.broker.consumers.group(header.consumer_group)
        if group is None:
            return fail(request, ResponseCode.CONSUMER_NOT_ONLINE,
                        f"the consumer group[{header.consumer_group}] not online")
        return ok(request, body=bodies.consumer_connection(group))

    async def get_producer_connection_list(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = GetProducerConnectionListRequestHeader.from_command(request)
        channels = self.broker.producers.group_channel_table.get(header.producer_group)
        if channels is None:
            return fail(request, ResponseCode.SYSTEM_ERROR, f"the producer group[{header.producer_group}] not exist")
        return ok(request, body=bodies.producer_connection(channels.values()))

    async def get_all_producer_info(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        table = {group: list(channels.values())
                 for group, channels in self.broker.producers.group_channel_table.items()}
        return ok(request, body=bodies.producer_table(table))

    async def query_topic_consume_by_who(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = TopicRequestHeader.from_command(request)
        groups = self.broker.consumers.topic_consumed_by(header.topic)
        groups |= self.broker.offsets.which_group_by_topic(header.topic)
        return ok(request, body=bodies.group_list(groups))

    async def query_consume_time_span(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = QueryConsumeTimeSpanRequestHeader.from_command(request)
        broker = self.broker
        topic_config = broker.topics.select(header.topic)
        if topic_config is None:
            return fail(request, ResponseCode.TOPIC_NOT_EXIST, f"topic[{header.topic}] not exist")
        store = broker.store
        spans = []
        for queue_id in range(topic_config.write_queue_nums):
            min_time = store.get_earliest_message_time(header.topic, queue_id)
            max_offset = store.get_max_offset_in_queue(header.topic, queue_id)
            max_time = store.get_message_store_timestamp(header.topic, queue_id, max_offset - 1)
            consumer_offset = broker.offsets.query_offset(header.group, header.topic, queue_id)
            if consumer_offset > 0:
                consume_time = store.get_message_store_timestamp(header.topic, queue_id, consumer_offset - 1)
            else:
                consume_time = min_time
            span = {"consumeTimeStamp": consume_time, "delayTime": 0, "maxTimeStamp": max_time,
                    "messageQueue": self._queue(header.topic, queue_id).to_json(), "minTimeStamp": min_time}
            if consumer_offset < max_offset:
                next_time = store.get_message_store_timestamp(header.topic, queue_id, consumer_offset)
                span["delayTime"] = now_ms() - next_time
            spans.append(span)
        return ok(request, body=bodies.consume_time_span(spans))

    async def reset_offset(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        """Move a group's offsets to a time and tell its online consumers (Java's Broker2Client.resetOffset)."""
        header = ResetOffsetRequestHeader.from_command(request)
        broker = self.broker
        topic_config = broker.topics.select(header.topic)
        if topic_config is None:
            return fail(request, ResponseCode.SYSTEM_ERROR,
                        f"[reset-offset] reset offset failed, no topic in this broker. topic={header.topic}")
        offsets = {}
        for queue_id in range(topic_config.write_queue_nums):
            consumer_offset = broker.offsets.query_offset(header.group, header.topic, queue_id)
            if consumer_offset == -1:
                return fail(request, ResponseCode.SYSTEM_ERROR, f"THe consumer group <{header.group}> not exist")
            if header.timestamp == -1:
                target = broker.store.get_max_offset_in_queue(header.topic, queue_id)
            else:
                target = broker.store.get_offset_in_queue_by_time(header.topic, queue_id, header.timestamp)
            offsets[self._queue(header.topic, queue_id)] = target if header.is_force or target < consumer_offset \
                else consumer_offset
        group = broker.consumers.group(header.group)
        if group is None or not group.channel_info_table:
            return fail(request, ResponseCode.CONSUMER_NOT_ONLINE,
                        f"Consumer not online, so can not reset offset, Group: {header.group} Topic: {header.topic} "
                        f"Timestamp: {header.timestamp}")
        body = bodies.reset_offset_body(offsets)
        for connection in group.connections:
            notice = create_request(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, header.to_ext_fields(), body)
            try:
                await broker.server.invoke_oneway(connection, notice, 3000)
            except Exception as error:
                _log.error("telling %s to reset its offsets failed: %s", connection.remote_address, error)
        return ok(request, body=body)

    async def _call_consumer(self, request: RemotingCommand, group: str, client_id: str) -> RemotingCommand:
        group_info = self.broker.consumers.group(group)
        info = group_info.find_channel(client_id) if group_info is not None else None
        if info is None:
            return fail(request, ResponseCode.SYSTEM_ERROR, f"The Consumer <{group}> <{client_id}> not online")
        forwarded = create_request(request.code, dict(request.ext_fields or {}), request.body)
        try:
            answer = await self.broker.server.invoke(info.connection, forwarded, CALL_CLIENT_TIMEOUT_MS)
        except Exception as error:
            return fail(request, ResponseCode.SYSTEM_ERROR, f"invoke consumer <{group}> <{client_id}> Exception: "
                                                            f"{error}")
        response = fail(request, answer.code, answer.remark, answer.ext_fields)
        response.body = answer.body
        return response

    async def get_consumer_running_info(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = GetConsumerRunningInfoRequestHeader.from_command(request)
        return await self._call_consumer(request, header.consumer_group, header.client_id)

    async def consume_message_directly(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = ConsumeMessageDirectlyResultRequestHeader.from_command(request)
        try:
            _, _, offset = codec.decode_offset_msg_id(header.msg_id or "")
        except Exception:
            return fail(request, ResponseCode.SYSTEM_ERROR, f"the message id {header.msg_id!r} is not an offset id")
        record = self.broker.store.select_one_message_by_offset(offset)
        if record is None:
            return fail(request, ResponseCode.SYSTEM_ERROR, f"can not find message by the offset, {offset}")
        request.body = record
        return await self._call_consumer(request, header.consumer_group, header.client_id or "")
