"""SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320) and CONSUMER_SEND_MSG_BACK (36)
(Java's broker/processor/SendMessageProcessor and AbstractSendMessageProcessor).

A send is checked as Java checks it (topic name, forbidden system topics,
auto-creation through the default topic, queue id), then stored: a message
to ``%RETRY%group`` that was consumed too often goes to ``%DLQ%group``, a
transactional half message to RMQ_SYS_TRANS_HALF_TOPIC, a delayed one (by
the store) to SCHEDULE_TOPIC_XXXX. The batch path is taken when the header's
``batch`` flag is set, whatever the code. Every answer carries the extFields
MSG_REGION and TRACE_ON, which the Java client reads after a successful send.
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from rocketmq_py import codec
from rocketmq_py.broker.processors.common import VERSION_3_4_9, fail, suggest_todo
from rocketmq_py.broker.queue_choice import random_queue_id
from rocketmq_py.common import topic as topics
from rocketmq_py.common.clock import now_ms
from rocketmq_py.common.codes import RequestCode, ResponseCode
from rocketmq_py.common.headers.consumer import ConsumerSendMsgBackRequestHeader
from rocketmq_py.common.headers.send import (
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
)
from rocketmq_py.common.message import MessageConst
from rocketmq_py.common.route import PermName
from rocketmq_py.common.sysflag import MULTI_TAGS_FLAG
from rocketmq_py.common.topic_config import MULTI_TAG, TopicConfig
from rocketmq_py.remoting import ProcessorTable, RemotingCommand, RequestContext, create_response
from rocketmq_py.store import PutMessageResult, PutMessageStatus, StoreMessage, StoreMessageBatch, disk_used_ratio

if TYPE_CHECKING:
    from rocketmq_py.broker.controller import BrokerController

_log = logging.getLogger(__name__)

DLQ_NUMS_PER_GROUP = 1
PERM_RW = PermName.READ | PermName.WRITE

_STORED = {
    PutMessageStatus.PUT_OK: ResponseCode.SUCCESS,
    PutMessageStatus.FLUSH_DISK_TIMEOUT: ResponseCode.FLUSH_DISK_TIMEOUT,
    PutMessageStatus.FLUSH_SLAVE_TIMEOUT: ResponseCode.FLUSH_SLAVE_TIMEOUT,
    PutMessageStatus.SLAVE_NOT_AVAILABLE: ResponseCode.SLAVE_NOT_AVAILABLE,
}


def topic_config_text(config: TopicConfig) -> str:
    """Java's TopicConfig.toString."""
    return (f"TopicConfig [topicName={config.topic_name}, readQueueNums={config.read_queue_nums}, "
            f"writeQueueNums={config.write_queue_nums}, perm={PermName.to_string(config.perm)}, "
            f"topicFilterType={config.topic_filter_type}, topicSysFlag={config.topic_sys_flag}, "
            f"order={'true' if config.order else 'false'}]")


class SendMessageProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker
        #: The extFields every send answer starts with (MSG_REGION, TRACE_ON), kept up to date by ``refresh``.
        self.region_fields: dict[str, str] = {}
        self.refresh()

    def refresh(self) -> None:
        config = self.broker.config
        self.region_fields = {MessageConst.MSG_REGION: config.region_id,
                               MessageConst.TRACE_SWITCH: "true" if config.trace_on else "false"}

    def register_into(self, table: ProcessorTable) -> None:
        for code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE):
            table.register(code, self.send)
        table.register(RequestCode.CONSUMER_SEND_MSG_BACK, self.consumer_send_msg_back)

    def reject_request(self) -> bool:
        return False

    # --- checks ---------------------------------------------------------------------------------

    def send_response(self, request: RemotingCommand, code: int, remark: str | None = None,
                  header: SendMessageResponseHeader | None = None) -> RemotingCommand:
        fields = dict(self.region_fields)
        if header is not None:
            fields.update(header.to_ext_fields())
        return create_response(request, code, remark, fields)

    def check_send(self, ctx: RequestContext, request: RemotingCommand,
               header: SendMessageRequestHeaderV2 | SendMessageRequestHeader) -> tuple[TopicConfig | None,
                                                                                       RemotingCommand | None]:
        """Java's preSend/msgCheck: the topic config to store under, or the refusal."""
        broker = self.broker
        config = broker.config
        start = config.start_accept_send_request_time_stamp
        if start and now_ms() < start:
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(start / 1000))
            return None, self.send_response(request, ResponseCode.SYSTEM_ERROR, f"broker unable to service, until {when}")
        topic = header.topic
        if not config.broker_permission & PermName.WRITE and broker.topics.is_order_topic(topic):
            return None, self.send_response(request, ResponseCode.NO_PERMISSION,
                                        f"the broker[{config.broker_ip1}] sending message is forbidden")
        remark = topics.validate_topic(topic)
        if remark is not None:
            return None, self.send_response(request, ResponseCode.SYSTEM_ERROR, remark)
        if topics.is_not_allowed_send_topic(topic):
            return None, self.send_response(request, ResponseCode.NO_PERMISSION,
                                        f"Sending message to topic[{topic}] is forbidden.")
        topic_config = broker.topics.select(topic)
        if topic_config is None:
            sys_flag = 0
            if header.unit_mode:
                sys_flag = 2 if topic.startswith(topics.RETRY_GROUP_TOPIC_PREFIX) else 1
            _log.warning("the topic %s does not exist, producer %s", topic, ctx.remote_address)
            topic_config = broker.topics.create_in_send(topic, header.default_topic, ctx.remote_address,
                                                        header.default_topic_queue_nums, sys_flag)
            if topic_config is None and topic.startswith(topics.RETRY_GROUP_TOPIC_PREFIX):
                topic_config = broker.topics.create_in_send_back(topic, 1, PERM_RW, sys_flag)
            if topic_config is None:
                return None, self.send_response(request, ResponseCode.TOPIC_NOT_EXIST,
                                            f"topic[{topic}] not exist, apply first please!{suggest_todo()}")
        if header.queue_id >= max(topic_config.write_queue_nums, topic_config.read_queue_nums):
            text = (f"request queueId[{header.queue_id}] is illegal, {topic_config_text(topic_config)} "
                    f"Producer: {ctx.remote_address}")
            _log.warning(text)
            return None, self.send_response(request, ResponseCode.SYSTEM_ERROR, text)
        return topic_config, None

    def _retry_or_dlq(self, request: RemotingCommand, header: SendMessageRequestHeaderV2 | SendMessageRequestHeader
                      ) -> tuple[str, int | None, RemotingCommand | None]:
        """Java's handleRetryAndDLQ: a %RETRY% send consumed too often goes to the group's DLQ."""
        topic = header.topic
        if not topic.startswith(topics.RETRY_GROUP_TOPIC_PREFIX):
            return topic, None, None
        group = topic[len(topics.RETRY_GROUP_TOPIC_PREFIX):]
        group_config = self.broker.groups.find(group)
        if group_config is None:
            return topic, None, self.send_response(request, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                                               f"subscription group not exist, {group} {suggest_todo()}")
        max_times = group_config.retry_max_times
        if request.version >= VERSION_3_4_9 and header.max_reconsume_times is not None:
            max_times = header.max_reconsume_times
        if (header.reconsume_times or 0) < max_times:
            return topic, None, None
        dlq = topics.DLQ_GROUP_TOPIC_PREFIX + group
        self.broker.topics.create_in_send_back(dlq, DLQ_NUMS_PER_GROUP, PERM_RW)
        return dlq, random_queue_id(DLQ_NUMS_PER_GROUP), None

    # --- SEND_MESSAGE / V2 / BATCH -----------------------------------------------------------------

    async def send(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        fields = request.ext_fields or {}
        if request.code == RequestCode.SEND_MESSAGE:
            if fields.get("topic") is None:
                return self.send_response(request, ResponseCode.SYSTEM_ERROR, topics.validate_topic(None))
            header: SendMessageRequestHeaderV2 | SendMessageRequestHeader = \
                SendMessageRequestHeader.from_ext_fields(fields)
        else:
            if fields.get("b") is None:
                return self.send_response(request, ResponseCode.SYSTEM_ERROR, topics.validate_topic(None))
            header = SendMessageRequestHeaderV2.from_ext_fields(fields)
        topic_config, refusal = self.check_send(ctx, request, header)
        if refusal is not None:
            return refusal
        assert topic_config is not None
        if header.batch:
            return await self._send_batch(ctx, request, header, topic_config)
        return await self._send_one(ctx, request, header, topic_config)

    async def _send_one(self, ctx: RequestContext, request: RemotingCommand,
                        header: SendMessageRequestHeaderV2 | SendMessageRequestHeader,
                        topic_config: TopicConfig) -> RemotingCommand:
        broker = self.broker
        queue_id = header.queue_id
        if queue_id < 0:
            queue_id = random_queue_id(topic_config.write_queue_nums)
        topic, dlq_queue, refusal = self._retry_or_dlq(request, header)
        if refusal is not None:
            return refusal
        properties = codec.string_to_properties(header.properties)
        properties[MessageConst.CLUSTER] = broker.config.broker_cluster_name
        wait = properties.pop(MessageConst.WAIT_STORE_MSG_OK, None)
        stored_properties = codec.properties_to_string(properties)
        if wait is not None:
            properties[MessageConst.WAIT_STORE_MSG_OK] = wait
        sys_flag = header.sys_flag
        if topic_config.topic_filter_type == MULTI_TAG:
            sys_flag |= MULTI_TAGS_FLAG
        message = StoreMessage(
            topic=topic, body=request.body or b"", queue_id=dlq_queue if dlq_queue is not None else queue_id,
            flag=header.flag, properties=properties, sys_flag=sys_flag, born_timestamp=header.born_timestamp,
            born_host=ctx.remote_address, store_host=broker.store_host, reconsume_times=header.reconsume_times or 0,
            properties_string=stored_properties,
        )
        if properties.get(MessageConst.TRANSACTION_PREPARED) == "true":
            if broker.config.reject_transaction_message:
                return self.send_response(request, ResponseCode.NO_PERMISSION,
                                      f"the broker[{broker.config.broker_ip1}] sending transaction message is "
                                      "forbidden")
            broker.transactions.to_half_message(message)
        started = time.monotonic()
        result = await broker.store.put_message(message)
        return self._answer(request, result, message.topic, queue_id, started)

    async def _send_batch(self, ctx: RequestContext, request: RemotingCommand,
                          header: SendMessageRequestHeaderV2 | SendMessageRequestHeader,
                          topic_config: TopicConfig) -> RemotingCommand:
        broker = self.broker
        queue_id = header.queue_id
        if queue_id < 0:
            queue_id = random_queue_id(topic_config.write_queue_nums)
        if len(header.topic) > 127:
            return self.send_response(request, ResponseCode.MESSAGE_ILLEGAL,
                                  f"message topic length too long {len(header.topic)}")
        properties = codec.string_to_properties(header.properties)
        properties[MessageConst.CLUSTER] = broker.config.broker_cluster_name
        sys_flag = header.sys_flag
        if topic_config.topic_filter_type == MULTI_TAG:
            sys_flag |= MULTI_TAGS_FLAG
        batch = StoreMessageBatch(
            topic=header.topic, body=request.body or b"", queue_id=queue_id, properties=properties,
            sys_flag=sys_flag, born_timestamp=header.born_timestamp, born_host=ctx.remote_address,
            store_host=broker.store_host, reconsume_times=header.reconsume_times or 0,
        )
        started = time.monotonic()
        result = await broker.store.put_messages(batch)
        return self._answer(request, result, batch.topic, queue_id, started)

    def _answer(self, request: RemotingCommand, result: PutMessageResult, topic: str, queue_id: int,
                started: float) -> RemotingCommand:
        status = result.status
        code: int | None = _STORED.get(status)
        append = result.append_result
        if code is None or append is None:
            self.broker.stats.on_put_failed()
            code, remark = self.store_refusal(status)
            return self.send_response(request, code, remark)
        self.broker.stats.on_put(topic, append.msg_num, append.wrote_bytes, int((time.monotonic() - started) * 1000))
        header = SendMessageResponseHeader(msg_id=append.msg_id, queue_id=queue_id, queue_offset=append.logics_offset)
        return self.send_response(request, code, None, header)

    def store_refusal(self, status: PutMessageStatus) -> tuple[int, str]:
        """The response code and Java's remark for a put the store refused."""
        if status == PutMessageStatus.CREATE_MAPEDFILE_FAILED:
            return ResponseCode.SYSTEM_ERROR, "create mapped file failed, server is busy or broken."
        if status in (PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED):
            return ResponseCode.MESSAGE_ILLEGAL, (
                "the message is illegal, maybe msg body or properties length not matched. msg body length limit "
                f"{self.broker.store_config.max_message_size}B, msg properties length limit 32KB.")
        if status == PutMessageStatus.SERVICE_NOT_AVAILABLE:
            return ResponseCode.SERVICE_NOT_AVAILABLE, (
                "service not available now. It may be caused by one of the following reasons: the broker's disk is "
                f"full [{self._disk_util()}], messages are put to the slave, message store has been shut down, etc.")
        if status == PutMessageStatus.OS_PAGECACHE_BUSY:
            return ResponseCode.SYSTEM_ERROR, "[PC_SYNCHRONIZED]broker busy, start flow control for a while"
        if status == PutMessageStatus.UNKNOWN_ERROR:
            return ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR"
        return ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR DEFAULT"

    def _disk_util(self) -> str:
        config = self.broker.store_config
        ratios = []
        for path in (config.commit_log_dir, config.consume_queue_dir, config.index_dir):
            while not path.exists() and path != path.parent:
                path = path.parent
            ratios.append(disk_used_ratio(path) * 100)
        return "CL: %5.2f CQ: %5.2f INDEX: %5.2f" % tuple(ratios)

    # --- CONSUMER_SEND_MSG_BACK ----------------------------------------------------------------------

    async def consumer_send_msg_back(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = ConsumerSendMsgBackRequestHeader.from_command(request)
        broker = self.broker
        group_config = broker.groups.find(header.group)
        if group_config is None:
            return fail(request, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                        f"subscription group not exist, {header.group} {suggest_todo()}")
        if not broker.config.broker_permission & PermName.WRITE:
            return fail(request, ResponseCode.NO_PERMISSION,
                        f"the broker[{broker.config.broker_ip1}] sending message is forbidden")
        if group_config.retry_queue_nums <= 0:
            return fail(request, ResponseCode.SUCCESS, None)
        new_topic = topics.RETRY_GROUP_TOPIC_PREFIX + header.group
        queue_id = random_queue_id(group_config.retry_queue_nums)
        topic_sys_flag = 2 if header.unit_mode else 0
        topic_config = broker.topics.create_in_send_back(new_topic, group_config.retry_queue_nums, PERM_RW,
                                                         topic_sys_flag)
        if not topic_config.perm & PermName.WRITE:
            return fail(request, ResponseCode.NO_PERMISSION, f"the topic[{new_topic}] sending message is forbidden")
        original = broker.store.lookup_message_by_offset(header.offset)
        if original is None:
            return fail(request, ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {header.offset}")
        properties = dict(original.properties)
        properties.setdefault(MessageConst.RETRY_TOPIC, original.topic)
        properties[MessageConst.WAIT_STORE_MSG_OK] = "false"
        max_times = group_config.retry_max_times
        if request.version >= VERSION_3_4_9 and header.max_reconsume_times is not None:
            max_times = header.max_reconsume_times
        delay_level = header.delay_level
        if original.reconsume_times >= max_times or delay_level < 0:
            new_topic = topics.DLQ_GROUP_TOPIC_PREFIX + header.group
            queue_id = random_queue_id(DLQ_NUMS_PER_GROUP)
            broker.topics.create_in_send_back(new_topic, DLQ_NUMS_PER_GROUP, PERM_RW)
            properties.pop(MessageConst.DELAY_TIME_LEVEL, None)
        else:
            if delay_level == 0:
                delay_level = 3 + original.reconsume_times
            properties[MessageConst.DELAY_TIME_LEVEL] = str(delay_level)
        # Java reads the record back as a MessageExt, whose msgId is the offset id even when UNIQ_KEY is set.
        origin_id = properties.get(MessageConst.ORIGIN_MESSAGE_ID)
        properties[MessageConst.ORIGIN_MESSAGE_ID] = origin_id or original.offset_msg_id
        message = StoreMessage(
            topic=new_topic, body=original.body, queue_id=queue_id, flag=original.flag, properties=properties,
            sys_flag=original.sys_flag,
            born_timestamp=original.born_timestamp, born_host=original.born_host, store_host=original.store_host,
            reconsume_times=original.reconsume_times + 1,
        )
        result = await broker.store.put_message(message)
        if result.status == PutMessageStatus.PUT_OK:
            broker.stats.on_send_back(header.group, properties[MessageConst.RETRY_TOPIC])
            return fail(request, ResponseCode.SUCCESS, None)
        return fail(request, ResponseCode.SYSTEM_ERROR, result.status.name)
