"""The statistics and inspection requests of Java's AdminBrokerProcessor and Broker2Client.getConsumeStatus:
VIEW_BROKER_STATS_DATA (315), GET_BROKER_CONSUME_STATS (317), QUERY_CONSUME_QUEUE (321),
INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223), QUERY_CORRECTION_OFFSET (308) and RESUME_CHECK_HALF_MESSAGE (323).
They are what ``mqadmin statsAll``, ``brokerConsumeStats``, ``queryCq``, ``getConsumerStatus`` and
``resumeCheckHalfMessage`` and the dashboard's collectors ask.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from rocketmq_py import codec
from rocketmq_py.broker import bodies
from rocketmq_py.broker.processors.common import fail, ok
from rocketmq_py.common import consumer_body
from rocketmq_py.common.codes import RequestCode, ResponseCode
from rocketmq_py.common.headers.admin import (
    GetConsumeStatsInBrokerHeader,
    QueryConsumeQueueRequestHeader,
    QueryCorrectionOffsetHeader,
    ResumeCheckHalfMessageRequestHeader,
    ViewBrokerStatsDataRequestHeader,
)
from rocketmq_py.common.headers.consumer import GetConsumerStatusRequestHeader
from rocketmq_py.common.message import MessageConst
from rocketmq_py.common.message_queue import MessageQueue
from rocketmq_py.common.topic import RMQ_SYS_TRANS_HALF_TOPIC
from rocketmq_py.remoting import ProcessorTable, RemotingCommand, RequestContext, create_request
from rocketmq_py.store import CQ_UNIT_SIZE, PutMessageStatus, StoreMessage

if TYPE_CHECKING:
    from rocketmq_py.broker.controller import BrokerController

_log = logging.getLogger(__name__)

#: Java's Broker2Client waits 5 s for each consumer's status.
CONSUMER_STATUS_TIMEOUT_MS = 5000
_LONG_MAX = (1 << 63) - 1


class BrokerStatsProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register_into(self, table: ProcessorTable) -> None:
        handlers = {
            RequestCode.VIEW_BROKER_STATS_DATA: self.view_broker_stats_data,
            RequestCode.GET_BROKER_CONSUME_STATS: self.get_broker_consume_stats,
            RequestCode.QUERY_CONSUME_QUEUE: self.query_consume_queue,
            RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS: self.get_consumer_status,
            RequestCode.QUERY_CORRECTION_OFFSET: self.query_correction_offset,
            RequestCode.RESUME_CHECK_HALF_MESSAGE: self.resume_check_half_message,
        }
        for code, handler in handlers.items():
            table.register(code, handler)

    async def view_broker_stats_data(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = ViewBrokerStatsDataRequestHeader.from_command(request)
        item = self.broker.stats.manager.item(header.stats_name, header.stats_key)
        if item is None:
            return fail(request, ResponseCode.SYSTEM_ERROR,
                        f"The stats <{header.stats_name}> <{header.stats_key}> not exist")
        return ok(request, body=bodies.broker_stats_data(item.in_minute(), item.in_hour(), item.in_day()))

    async def get_broker_consume_stats(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = GetConsumeStatsInBrokerHeader.from_command(request)
        broker = self.broker
        groups = []
        total_diff = 0
        for group in list(broker.groups.table):
            stats_of_topics = []
            for topic in sorted(broker.offsets.which_topic_by_consumer(group)):
                topic_config = broker.topics.select(topic)
                if topic_config is None:
                    _log.warning("brokerConsumeStats: topic %s does not exist", topic)
                    continue
                if header.is_order and not topic_config.order:
                    continue
                if broker.consumers.find_subscription(group, topic) is None \
                        and broker.consumers.subscription_count(group):
                    continue
                offsets = {}
                for queue_id in range(topic_config.write_queue_nums):
                    broker_offset = max(broker.store.get_max_offset_in_queue(topic, queue_id), 0)
                    consumer_offset = max(broker.offsets.query_offset(group, topic, queue_id), 0)
                    last = 0
                    if consumer_offset > 0:
                        last = max(broker.store.get_message_store_timestamp(topic, queue_id, consumer_offset - 1), 0)
                    offsets[MessageQueue(topic, broker.config.broker_name, queue_id)] = (broker_offset,
                                                                                         consumer_offset, last)
                    total_diff += broker_offset - consumer_offset
                stats_of_topics.append(bodies.consume_stats_json(offsets, broker.stats.group_get_tps(group, topic)))
            groups.append({group: stats_of_topics})
        return ok(request, body=bodies.consume_stats_list(broker.broker_addr, groups, total_diff))

    async def query_consume_queue(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = QueryConsumeQueueRequestHeader.from_command(request)
        broker = self.broker
        queue = broker.store.get_consume_queue(header.topic, header.queue_id)
        if queue is None:
            return fail(request, ResponseCode.SYSTEM_ERROR, f"{header.queue_id}@{header.topic} is not exist!")
        subscription_json = None
        filter_data = None
        if header.consumer_group is not None:
            subscription = broker.consumers.find_subscription(header.consumer_group, header.topic)
            if subscription is None:
                filter_data = f"{header.consumer_group}@{header.topic} is not online!"
            else:
                subscription_json = subscription.to_json()
                # Java prints its ConsumerFilterData, which exists only for SQL92 subscriptions.
                filter_data = "null" if subscription.is_tag_type else codec.json_dumps(
                    {"consumerGroup": header.consumer_group, "expression": subscription.sub_string,
                     "expressionType": subscription.expression_type, "topic": header.topic}, pretty=True)
        units = queue.read_units(header.index, max(header.count, 1) * CQ_UNIT_SIZE)
        response = ok(request)
        if units is None:
            response.remark = f"Index {header.index} of {header.queue_id}@{header.topic} is not exist!"
            return response
        units = units[:max(header.count, 0)]
        response.body = bodies.query_consume_queue(queue.min_offset_in_queue, queue.max_offset_in_queue, units,
                                                   subscription_json, filter_data)
        return response

    async def get_consumer_status(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = GetConsumerStatusRequestHeader.from_command(request)
        broker = self.broker
        group = broker.consumers.group(header.group)
        infos = list(group.channel_info_table.values()) if group is not None else []
        if not infos:
            return fail(request, ResponseCode.SYSTEM_ERROR,
                        f"No Any Consumer online in the consumer group: [{header.group}]")
        wanted = (header.client_addr or "").strip()
        table: dict[str, dict[MessageQueue, int]] = {}
        for info in infos:
            if wanted and wanted != info.client_id:
                continue
            ask = create_request(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT,
                                 GetConsumerStatusRequestHeader(header.topic, header.group).to_ext_fields())
            try:
                answer = await broker.server.invoke(info.connection, ask, CONSUMER_STATUS_TIMEOUT_MS)
                if answer.code == ResponseCode.SUCCESS and answer.body:
                    data = codec.json_loads(answer.body)
                    queues = data.get("messageQueueTable") if isinstance(data, dict) else None
                    table[info.client_id] = consumer_body.decode_queue_table(queues)
            except Exception as error:
                _log.error("[get-consumer-status] topic=%s group=%s client=%s failed: %s", header.topic,
                           header.group, info.client_id, error)
            if wanted:
                break
        return ok(request, body=bodies.consumer_status(table))

    async def query_correction_offset(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = QueryCorrectionOffsetHeader.from_command(request)
        broker = self.broker
        left_out = {group for group in (header.filter_groups or "").split(",") if group.strip()}
        correction: dict[int, int] = {}
        for group in broker.offsets.which_group_by_topic(header.topic):
            if group in left_out:
                continue
            for queue_id, offset in broker.offsets.query_offsets(group, header.topic).items():
                if offset >= broker.store.get_min_offset_in_queue(header.topic, queue_id):
                    correction[queue_id] = min(offset, correction.get(queue_id, _LONG_MAX))
        for queue_id, offset in broker.offsets.query_offsets(header.compare_group, header.topic).items():
            current = correction.get(queue_id)
            if current is not None:
                correction[queue_id] = _LONG_MAX if current > offset else current
        return ok(request, body=bodies.correction_offsets(correction))

    async def resume_check_half_message(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        """Store a half message again with its check count at 0, so the transaction check asks about it anew."""
        header = ResumeCheckHalfMessageRequestHeader.from_command(request)
        store = self.broker.store
        failed = "Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC."
        try:
            _, _, offset = codec.decode_offset_msg_id(header.msg_id or "")
            half = store.lookup_message_by_offset(offset)
        except Exception as error:
            _log.warning("resumeCheckHalfMessage %r: %s", header.msg_id, error)
            return fail(request, ResponseCode.SYSTEM_ERROR, failed)
        if half is None:
            return fail(request, ResponseCode.SYSTEM_ERROR, failed)
        properties = dict(half.properties)
        properties[MessageConst.TRANSACTION_CHECK_TIMES] = "0"
        message = StoreMessage(
            topic=RMQ_SYS_TRANS_HALF_TOPIC, body=half.body, queue_id=0, flag=half.flag, properties=properties,
            sys_flag=half.sys_flag, born_timestamp=half.born_timestamp, born_host=half.born_host,
            store_host=half.store_host, reconsume_times=half.reconsume_times,
        )
        result = await store.put_message(message)
        if result.status != PutMessageStatus.PUT_OK:
            _log.error("putting half message %s back to RMQ_SYS_TRANS_HALF_TOPIC failed: %s", header.msg_id,
                       result.status.name)
            return fail(request, ResponseCode.SYSTEM_ERROR, "Put message back to RMQ_SYS_TRANS_HALF_TOPIC failed.")
        _log.info("put message back to RMQ_SYS_TRANS_HALF_TOPIC, real topic=%s",
                  properties.get(MessageConst.REAL_TOPIC))
        return ok(request)
