"""Topic, group and configuration administration (the corresponding handlers of Java's
broker/processor/AdminBrokerProcessor): UPDATE_AND_CREATE_TOPIC (17), DELETE_TOPIC_IN_BROKER (215),
GET_ALL_TOPIC_CONFIG (21), UPDATE_BROKER_CONFIG (25), GET_BROKER_CONFIG (26), GET_BROKER_RUNTIME_INFO (28),
UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200), GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201),
DELETE_SUBSCRIPTIONGROUP (207), GET_ALL_CONSUMER_OFFSET (43), GET_ALL_DELAY_OFFSET (45),
GET_SYSTEM_TOPIC_LIST_FROM_BROKER (305), CLEAN_EXPIRED_CONSUMEQUEUE (306), CLEAN_UNUSED_TOPIC (316),
DELETE_EXPIRED_COMMITLOG (329) and CLONE_GROUP_OFFSET (314).

Codes nobody handles are answered REQUEST_CODE_NOT_SUPPORTED (`` request type N not supported``),
as Java's admin processor answers them.
"""
from __future__ import annotations

import logging
import shutil
from typing import TYPE_CHECKING

from rocketmq_py import codec
from rocketmq_py.broker import bodies
from rocketmq_py.broker.config import refuse_unsupported
from rocketmq_py.broker.processors.common import fail, ok
from rocketmq_py.common import json_shape
from rocketmq_py.common.codes import RequestCode, ResponseCode
from rocketmq_py.common.config_file import (
    apply_properties,
    config_to_properties,
    format_properties,
    parse_properties,
    write_file_safely,
)
from rocketmq_py.common.headers.admin import (
    CloneGroupOffsetRequestHeader,
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    GetBrokerConfigResponseHeader,
    TopicRequestHeader,
)
from rocketmq_py.common.subscription_group import SUBSCRIPTION_GROUP_SHAPE, SubscriptionGroupConfig
from rocketmq_py.common.topic import validate_topic
from rocketmq_py.common.topic_config import TOPIC_FILTER_TYPES, TopicConfig
from rocketmq_py.common.kv import KVTable
from rocketmq_py.remoting import ProcessorTable, RemotingCommand, RemotingSysResponseCode, RequestContext
from rocketmq_py.remoting import create_response
from rocketmq_py.store import SLAVE

if TYPE_CHECKING:
    from rocketmq_py.broker.controller import BrokerController

_log = logging.getLogger(__name__)

VERSION_DESC = "V4_9_8"


def _human_bytes(count: int) -> str:
    """Java's MixAll.humanReadableByteCount(bytes, si=false)."""
    if count < 1024:
        return f"{count} B"
    exponent = 0
    value = float(count)
    while value >= 1024 and exponent < 6:
        value /= 1024
        exponent += 1
    return f"{value:.1f} {'KMGTPE'[exponent - 1]}iB"


class AdminBrokerProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register_into(self, table: ProcessorTable) -> None:
        handlers = {
            RequestCode.UPDATE_AND_CREATE_TOPIC: self.update_and_create_topic,
            RequestCode.DELETE_TOPIC_IN_BROKER: self.delete_topic,
            RequestCode.GET_ALL_TOPIC_CONFIG: self.get_all_topic_config,
            RequestCode.UPDATE_BROKER_CONFIG: self.update_broker_config,
            RequestCode.GET_BROKER_CONFIG: self.get_broker_config,
            RequestCode.GET_BROKER_RUNTIME_INFO: self.get_broker_runtime_info,
            RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: self.update_and_create_subscription_group,
            RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: self.get_all_subscription_group,
            RequestCode.DELETE_SUBSCRIPTIONGROUP: self.delete_subscription_group,
            RequestCode.GET_ALL_CONSUMER_OFFSET: self.get_all_consumer_offset,
            RequestCode.GET_ALL_DELAY_OFFSET: self.get_all_delay_offset,
            RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER: self.get_system_topic_list,
            RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE: self.clean_expired_consume_queue,
            RequestCode.CLEAN_UNUSED_TOPIC: self.clean_unused_topic,
            RequestCode.DELETE_EXPIRED_COMMITLOG: self.delete_expired_commit_log,
            RequestCode.CLONE_GROUP_OFFSET: self.clone_group_offset,
        }
        for code, handler in handlers.items():
            table.register(code, handler)
        table.register_default(self.unknown)

    async def unknown(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        remark = f" request type {request.code} not supported"
        _log.warning("%s from %s", remark.strip(), ctx.remote_address)
        return create_response(request, RemotingSysResponseCode.REQUEST_CODE_NOT_SUPPORTED, remark)

    def _slave_refusal(self, request: RemotingCommand) -> RemotingCommand | None:
        if self.broker.store_config.broker_role == SLAVE:
            return fail(request, ResponseCode.SYSTEM_ERROR, "Can't modify topic or subscription group from slave "
                                                            "broker, please execute it from master broker.")
        return None

    # --- topics ------------------------------------------------------------------------------------

    async def update_and_create_topic(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        refusal = self._slave_refusal(request)
        if refusal is not None:
            return refusal
        header = CreateTopicRequestHeader.from_command(request)
        _log.info("updateAndCreateTopic called by %s", ctx.remote_address)
        broker = self.broker
        remark = validate_topic(header.topic)
        if remark is not None:
            return fail(request, ResponseCode.SYSTEM_ERROR, remark)
        if broker.topics.is_system_topic(header.topic):
            return fail(request, ResponseCode.SYSTEM_ERROR, f"The topic[{header.topic}] is conflict with system topic.")
        if header.topic_filter_type not in TOPIC_FILTER_TYPES:
            return fail(request, ResponseCode.SYSTEM_ERROR, f"unknown topicFilterType {header.topic_filter_type!r}")
        topic_config = TopicConfig(header.topic, header.read_queue_nums, header.write_queue_nums, header.perm,
                                   header.topic_filter_type, header.topic_sys_flag or 0)
        broker.topics.update(topic_config)
        broker.register_increment(topic_config)
        return ok(request)

    async def delete_topic(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        refusal = self._slave_refusal(request)
        if refusal is not None:
            return refusal
        header = TopicRequestHeader.from_command(request)
        _log.info("deleteTopic %s called by %s", header.topic, ctx.remote_address)
        broker = self.broker
        remark = validate_topic(header.topic)
        if remark is not None:
            return fail(request, ResponseCode.SYSTEM_ERROR, remark)
        if broker.topics.is_system_topic(header.topic):
            return fail(request, ResponseCode.SYSTEM_ERROR, f"The topic[{header.topic}] is conflict with system topic.")
        broker.topics.delete(header.topic)
        broker.store.clean_unused_topic(broker.topics.table.keys())
        if broker.config.auto_delete_unused_stats:
            broker.stats.manager.on_topic_deleted(header.topic)
        return ok(request)

    async def get_all_topic_config(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        return ok(request, body=self.broker.topics.encode().encode())

    async def get_system_topic_list(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        return ok(request, body=bodies.topic_list(self.broker.topics.system_topics))

    # --- configuration and runtime -----------------------------------------------------------------

    async def update_broker_config(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        broker = self.broker
        _log.info("updateBrokerConfig called by %s", ctx.remote_address)
        if not request.body:
            return ok(request)
        properties = parse_properties(request.body.decode("utf-8"))
        if broker.config.black_listed_keys() & set(properties):
            return fail(request, ResponseCode.NO_PERMISSION, "Can not update config in black list.")
        _log.info("updateBrokerConfig: %s from %s", properties, ctx.remote_address)
        try:
            refuse_unsupported(properties)
            unknown = set(apply_properties(broker.config, properties)) & set(
                apply_properties(broker.store_config, properties))
        except ValueError as error:
            return fail(request, ResponseCode.SYSTEM_ERROR, str(error))
        for key in sorted(unknown):
            _log.warning("updateBrokerConfig: unknown key %r ignored", key)
        broker.config_version.next_version()
        broker.on_config_updated()
        self._persist_config()
        if "brokerPermission" in properties:
            broker.topics.data_version.next_version()
            broker.register_broker_all_soon(oneway=False)
        return ok(request)

    def _persist_config(self) -> None:
        path = self.broker.config.broker_config_path
        if not path:
            return
        try:
            write_file_safely(path, self.config_text())
        except OSError as error:
            _log.error("persisting the broker config to %s failed: %s", path, error)

    def config_text(self) -> str:
        broker = self.broker
        return format_properties(config_to_properties(broker.config, broker.store_config))

    async def get_broker_config(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = GetBrokerConfigResponseHeader(codec.json_dumps(self.broker.config_version.to_json()))
        return ok(request, header.to_ext_fields(), self.config_text().encode("utf-8"))

    async def get_broker_runtime_info(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        return ok(request, body=KVTable(self.runtime_info()).encode())

    def runtime_info(self) -> dict[str, str]:
        broker = self.broker
        store = broker.store
        info = dict(store.get_runtime_info())
        info.update(broker.stats.runtime_info())
        root = broker.store_config.root
        info.update({
            "brokerVersionDesc": VERSION_DESC,
            "brokerVersion": str(codec.VERSION_4_9_8),
            "sendThreadPoolQueueSize": "0",
            "sendThreadPoolQueueCapacity": "10000",
            "pullThreadPoolQueueSize": "0",
            "pullThreadPoolQueueCapacity": "100000",
            "queryThreadPoolQueueSize": "0",
            "queryThreadPoolQueueCapacity": "20000",
            "EndTransactionQueueSize": "0",
            "EndTransactionThreadPoolQueueCapacity": "100000",
            "dispatchBehindBytes": str(store.dispatch_behind_bytes()),
            "pageCacheLockTimeMills": str(store.lock_time_mills()),
            "sendThreadPoolQueueHeadWaitTimeMills": "0",
            "pullThreadPoolQueueHeadWaitTimeMills": "0",
            "queryThreadPoolQueueHeadWaitTimeMills": "0",
            "earliestMessageTimeStamp": str(store.get_earliest_message_time()),
            "startAcceptSendRequestTimeStamp": str(broker.config.start_accept_send_request_time_stamp),
            "remainTransientStoreBufferNumbs": "2147483647",
            "remainHowManyDataToFlush": _human_bytes(store.bytes_to_flush()),
            "suspendedPullRequests": str(broker.hold_service.suspended),
        })
        info.update(broker.replication.runtime_info())
        if root.exists():
            usage = shutil.disk_usage(root)
            info["commitLogDirCapacity"] = f"Total : {_human_bytes(usage.total)}, Free : {_human_bytes(usage.free)}."
        return info

    # --- subscription groups and offsets -------------------------------------------------------------

    async def update_and_create_subscription_group(self, ctx: RequestContext,
                                                   request: RemotingCommand) -> RemotingCommand:
        refusal = self._slave_refusal(request)
        if refusal is not None:
            return refusal
        _log.info("updateAndCreateSubscriptionGroup called by %s", ctx.remote_address)
        if request.body:
            group = SubscriptionGroupConfig.from_json(
                json_shape.decode(request.body, SUBSCRIPTION_GROUP_SHAPE, "SubscriptionGroupConfig"))
            if not group.group_name:
                return fail(request, ResponseCode.SYSTEM_ERROR, "the subscription group config has no groupName")
            self.broker.groups.update(group)
        return ok(request)

    async def get_all_subscription_group(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        return ok(request, body=self.broker.groups.encode().encode())

    async def delete_subscription_group(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        refusal = self._slave_refusal(request)
        if refusal is not None:
            return refusal
        header = DeleteSubscriptionGroupRequestHeader.from_command(request)
        _log.info("deleteSubscriptionGroup %s called by %s", header.group_name, ctx.remote_address)
        self.broker.groups.delete(header.group_name)
        if header.remove_offset:
            self.broker.offsets.remove_offset(header.group_name)
        if self.broker.config.auto_delete_unused_stats:
            self.broker.stats.manager.on_group_deleted(header.group_name)
        return ok(request)

    async def get_all_consumer_offset(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        return ok(request, body=self.broker.offsets.encode().encode())

    async def get_all_delay_offset(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        schedule = self.broker.store.schedule_service
        if schedule is None:
            return fail(request, ResponseCode.SYSTEM_ERROR, "No delay offset in this broker")
        return ok(request, body=schedule.offsets.encode().encode())

    async def clone_group_offset(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = CloneGroupOffsetRequestHeader.from_command(request)
        broker = self.broker
        topic_names = {header.topic} if header.topic else broker.offsets.which_topic_by_consumer(header.src_group)
        for topic in topic_names:
            if broker.topics.select(topic) is None:
                _log.warning("cloneGroupOffset: topic %s does not exist", topic)
                continue
            if not header.offline and broker.consumers.find_subscription(header.src_group, topic) is None:
                _log.warning("cloneGroupOffset: group %s does not consume %s", header.src_group, topic)
                continue
            broker.offsets.clone_offset(header.src_group, header.dest_group, topic)
        return ok(request)

    # --- maintenance --------------------------------------------------------------------------------

    async def clean_expired_consume_queue(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        self.broker.store.clean_unused_topic(self.broker.topics.table.keys())
        return ok(request)

    async def clean_unused_topic(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        self.broker.store.clean_unused_topic(self.broker.topics.table.keys())
        return ok(request)

    async def delete_expired_commit_log(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        self.broker.store.execute_delete_files_manually()
        return ok(request)
