"""HEART_BEAT (34), UNREGISTER_CLIENT (35), CHECK_CLIENT_CONFIG (46), GET_CONSUMER_LIST_BY_GROUP (38),
UPDATE_CONSUMER_OFFSET (15), QUERY_CONSUMER_OFFSET (14), LOCK_BATCH_MQ (41) and UNLOCK_BATCH_MQ (42)
(Java's ClientManageProcessor, ConsumerManageProcessor and the lock handlers of AdminBrokerProcessor).

A heartbeat registers the client's producer and consumer groups: a consumer
group is created on first sight (when allowed), with its retry topic
``%RETRY%group``. The answer's version is what the Java client records as
the broker's version, so it is this broker's (409, 4.9.8).
"""
from __future__ import annotations

import logging
from typing import Any, TYPE_CHECKING

from rocketmq_py import codec
from rocketmq_py.broker.clients import ClientChannelInfo
from rocketmq_py.broker.filter import cached_selector
from rocketmq_py.broker.processors.common import fail, ok
from rocketmq_py.common import topic as topics
from rocketmq_py.common.codes import RequestCode, ResponseCode
from rocketmq_py.common import json_shape
from rocketmq_py.common.filter import SUBSCRIPTION_DATA_SHAPE, SubscriptionData
from rocketmq_py.common.headers.client import UnregisterClientRequestHeader
from rocketmq_py.common.headers.consumer import GetConsumerListByGroupRequestHeader
from rocketmq_py.common.headers.offset import (
    OffsetResponseHeader,
    QueryConsumerOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketmq_py.common.heartbeat import HeartbeatData
from rocketmq_py.common.heartbeat_consumer import ConsumerData
from rocketmq_py.common.message_queue import MESSAGE_QUEUE_SHAPE, MessageQueue
from rocketmq_py.common.route import PermName
from rocketmq_py.remoting import ProcessorTable, RemotingCommand, RequestContext

if TYPE_CHECKING:
    from rocketmq_py.broker.controller import BrokerController

_log = logging.getLogger(__name__)


#: Java's LockBatchRequestBody and UnlockBatchRequestBody.
_LOCK_BATCH_SHAPE = {"consumerGroup": str, "clientId": str, "onlyThisBroker": bool, "mqSet": [MESSAGE_QUEUE_SHAPE]}
#: Java's CheckClientRequestBody.
_CHECK_CLIENT_SHAPE = {"clientId": str, "group": str, "subscriptionData": SUBSCRIPTION_DATA_SHAPE}


class ClientManageProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register_into(self, table: ProcessorTable) -> None:
        handlers = {
            RequestCode.HEART_BEAT: self.heart_beat,
            RequestCode.UNREGISTER_CLIENT: self.unregister_client,
            RequestCode.CHECK_CLIENT_CONFIG: self.check_client_config,
            RequestCode.GET_CONSUMER_LIST_BY_GROUP: self.get_consumer_list_by_group,
            RequestCode.UPDATE_CONSUMER_OFFSET: self.update_consumer_offset,
            RequestCode.QUERY_CONSUMER_OFFSET: self.query_consumer_offset,
            RequestCode.LOCK_BATCH_MQ: self.lock_batch_mq,
            RequestCode.UNLOCK_BATCH_MQ: self.unlock_batch_mq,
        }
        for code, handler in handlers.items():
            table.register(code, handler)

    async def heart_beat(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        broker = self.broker
        heartbeat = HeartbeatData.decode(request.body or b"{}")
        info = ClientChannelInfo(ctx.connection, heartbeat.client_id, request.language, request.version)
        for data in heartbeat.consumer_data:
            consumer = ConsumerData.from_json(data)
            group_config = broker.groups.find(consumer.group_name)
            notify = True
            if group_config is not None:
                notify = group_config.notify_consumer_ids_changed_enable
                broker.topics.create_in_send_back(topics.retry_topic(consumer.group_name),
                                                  group_config.retry_queue_nums, PermName.READ | PermName.WRITE,
                                                  2 if consumer.unit_mode else 0)
            changed = broker.consumers.register(consumer.group_name, info, consumer.consume_type,
                                                consumer.message_model, consumer.consume_from_where,
                                                consumer.subscription_data_set, notify)
            if changed:
                _log.info("consumer group %s changed: client %s from %s", consumer.group_name, heartbeat.client_id,
                          ctx.remote_address)
        for group in heartbeat.producer_groups:
            broker.producers.register(group, info)
        return ok(request)

    async def unregister_client(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = UnregisterClientRequestHeader.from_command(request)
        broker = self.broker
        if header.producer_group is not None:
            broker.producers.unregister(header.producer_group, ctx.connection)
        if header.consumer_group is not None:
            group_config = broker.groups.find(header.consumer_group)
            notify = group_config.notify_consumer_ids_changed_enable if group_config is not None else True
            broker.consumers.unregister(header.consumer_group, ctx.connection, notify)
        return ok(request)

    async def check_client_config(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        data = json_shape.decode(request.body, _CHECK_CLIENT_SHAPE, "CheckClientRequestBody")
        sub = data.get("subscriptionData")
        if isinstance(sub, dict):
            subscription = SubscriptionData.from_json(sub)
            if subscription.is_tag_type:
                return ok(request)
            if not self.broker.config.enable_property_filter:
                return fail(request, ResponseCode.SYSTEM_ERROR,
                            f"The broker does not support consumer to filter message by {subscription.expression_type}")
            try:
                cached_selector(subscription.sub_string)
            except Exception as error:
                return fail(request, ResponseCode.SUBSCRIPTION_PARSE_FAILED, str(error))
        return ok(request)

    async def get_consumer_list_by_group(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = GetConsumerListByGroupRequestHeader.from_command(request)
        group_info = self.broker.consumers.group(header.consumer_group)
        ids = group_info.all_client_ids() if group_info is not None else []
        if ids:
            return ok(request, body=codec.json_dumps({"consumerIdList": ids}).encode())
        _log.warning("no consumer of group %s for %s", header.consumer_group, ctx.remote_address)
        return fail(request, ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {header.consumer_group}")

    async def update_consumer_offset(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = UpdateConsumerOffsetRequestHeader.from_command(request)
        self.broker.offsets.commit_offset(ctx.remote_address, header.consumer_group, header.topic, header.queue_id,
                                          header.commit_offset)
        return ok(request)

    async def query_consumer_offset(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = QueryConsumerOffsetRequestHeader.from_command(request)
        broker = self.broker
        offset = broker.offsets.query_offset(header.consumer_group, header.topic, header.queue_id)
        if offset >= 0:
            return ok(request, OffsetResponseHeader(offset).to_ext_fields())
        min_offset = broker.store.get_min_offset_in_queue(header.topic, header.queue_id)
        if min_offset <= 0 and not broker.store.check_in_disk_by_consume_offset(header.topic, header.queue_id, 0):
            return ok(request, OffsetResponseHeader(0).to_ext_fields())
        return fail(request, ResponseCode.QUERY_NOT_FOUND, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first")

    async def lock_batch_mq(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        data = json_shape.decode(request.body, _LOCK_BATCH_SHAPE, "LockBatchRequestBody")
        queues = [MessageQueue.from_json(item) for item in data.get("mqSet") or []]
        locked = self.broker.locks.try_lock_batch(data.get("consumerGroup") or "", queues, data.get("clientId") or "")
        body = {"lockOKMQSet": [queue.to_json() for queue in sorted(locked)]}
        return ok(request, body=codec.json_dumps(body).encode())

    async def unlock_batch_mq(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        data = json_shape.decode(request.body, _LOCK_BATCH_SHAPE, "UnlockBatchRequestBody")
        queues = [MessageQueue.from_json(item) for item in data.get("mqSet") or []]
        self.broker.locks.unlock_batch(data.get("consumerGroup") or "", queues, data.get("clientId") or "")
        return ok(request)
