"""PULL_MESSAGE (11) (Java's broker/processor/PullMessageProcessor).

The subscription comes from the request (SUBSCRIPTION flag) or from the
group's heartbeat; messages are filtered by tag code, or by a SQL92 selector
when ``enablePropertyFilter`` is on. The store's status becomes the response
code and remark as in Java; "nothing new" with the SUSPEND flag parks the
request in the hold service (no answer now). A pull with COMMIT_OFFSET also
commits the consumer's offset.

A slave answers as a master does, with or without ``slaveReadEnable`` (which
only picks the ``suggestWhichBrokerId``), as Java 4.9's slave does, but for
two things: it commits no offset, and without ``offsetCheckInSlave`` it does
not correct an offset out of range: it answers PULL_RETRY_IMMEDIATELY with the
requested offset as ``nextBeginOffset``.
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from rocketmq_py import codec
from rocketmq_py.broker.filter import ExpressionMessageFilter, build_subscription, cached_selector
from rocketmq_py.broker.long_polling import PullRequest
from rocketmq_py.broker.processors.common import fail, suggest_todo
from rocketmq_py.common.clock import now_ms
from rocketmq_py.common.codes import RequestCode, ResponseCode
from rocketmq_py.common.filter import ExpressionType
from rocketmq_py.common.headers.pull import (
    FLAG_COMMIT_OFFSET,
    FLAG_SUBSCRIPTION,
    FLAG_SUSPEND,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
)
from rocketmq_py.common.heartbeat_consumer import MessageModel
from rocketmq_py.common.message import MessageConst
from rocketmq_py.common.route import PermName
from rocketmq_py.common.topic import RMQ_SYS_OFFSET_MOVED_EVENT
from rocketmq_py.errors import CodecError
from rocketmq_py.remoting import ProcessorTable, RemotingCommand, RemotingConnection, RequestContext, create_response
from rocketmq_py.remoting.file_region import FileRegionResponse
from rocketmq_py.store import SLAVE, GetMessageStatus, StoreMessage

if TYPE_CHECKING:
    from rocketmq_py.broker.controller import BrokerController
    from rocketmq_py.common.filter import SubscriptionData

_log = logging.getLogger(__name__)

MASTER_ID = 0

_CODES = {
    GetMessageStatus.FOUND: ResponseCode.SUCCESS,
    GetMessageStatus.MESSAGE_WAS_REMOVING: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.NO_MATCHED_MESSAGE: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.OFFSET_FOUND_NULL: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_OVERFLOW_BADLY: ResponseCode.PULL_OFFSET_MOVED,
    GetMessageStatus.OFFSET_OVERFLOW_ONE: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_TOO_SMALL: ResponseCode.PULL_OFFSET_MOVED,
}


class PullMessageProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register_into(self, table: ProcessorTable) -> None:
        table.register(RequestCode.PULL_MESSAGE, self.pull)

    async def pull(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand | None:
        return self.process(ctx.connection, request, True)

    def answer_at_once(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand | None:
        """The pull lane's fast handler (``ProcessorTable.register_fast``): :meth:`pull`'s answer to every pull that
        is answered now, without the processor's coroutines.

        Returns None for a pull that long polling would park, and for a header that does not parse; the
        processor then serves those as before. Declining changes nothing the processor would not change in the
        same way: up to there a pull only reads, but for the auto-creation of its subscription group, which the
        processor would do (and then finds done). A parked pull so runs its checks and its store read twice;
        a consumer parks a pull once per hold time, so that is a small cost for the common pull's saving.
        """
        try:
            header = PullMessageRequestHeader.from_command(request)
        except CodecError:
            return None
        return self._process(ctx.connection, request, header, True, may_park=False)

    def replay(self, connection: RemotingConnection, request: RemotingCommand) -> RemotingCommand | None:
        """Run a woken suspended pull again (no second suspension, no offset commit)."""
        return self.process(connection, request, False)

    def process(self, connection: RemotingConnection, request: RemotingCommand,
                allow_suspend: bool) -> RemotingCommand | None:
        header = PullMessageRequestHeader.from_command(request)
        return self._process(connection, request, header, allow_suspend)

    def _process(self, connection: RemotingConnection, request: RemotingCommand, header: PullMessageRequestHeader,
                 allow_suspend: bool, *, may_park: bool = True) -> RemotingCommand | None:
        broker = self.broker
        config = broker.config
        if not config.broker_permission & PermName.READ:
            return fail(request, ResponseCode.NO_PERMISSION,
                        f"the broker[{config.broker_ip1}] pulling message is forbidden")
        group_config = broker.groups.find(header.consumer_group)
        if group_config is None:
            return fail(request, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                        f"subscription group [{header.consumer_group}] does not exist, {suggest_todo()}")
        if not group_config.consume_enable:
            return fail(request, ResponseCode.NO_PERMISSION, f"subscription group no permission, "
                                                             f"{header.consumer_group}")
        sys_flag = header.sys_flag
        has_suspend = bool(sys_flag & FLAG_SUSPEND)
        topic_config = broker.topics.select(header.topic)
        if topic_config is None:
            _log.error("the topic %s does not exist, consumer %s", header.topic, connection.remote_address)
            return fail(request, ResponseCode.TOPIC_NOT_EXIST,
                        f"topic[{header.topic}] not exist, apply first please! {suggest_todo()}")
        if not topic_config.perm & PermName.READ:
            return fail(request, ResponseCode.NO_PERMISSION, f"the topic[{header.topic}] pulling message is forbidden")
        if not 0 <= header.queue_id < topic_config.read_queue_nums:
            text = (f"queueId[{header.queue_id}] is illegal, topic:[{header.topic}] topicConfig.readQueueNums:"
                    f"[{topic_config.read_queue_nums}] consumer:[{connection.remote_address}]")
            _log.warning(text)
            return fail(request, ResponseCode.SYSTEM_ERROR, text)
        subscription: SubscriptionData | None
        if sys_flag & FLAG_SUBSCRIPTION:
            try:
                subscription = build_subscription(header.topic, header.subscription, header.expression_type,
                                                  header.sub_version)
            except Exception:
                _log.warning("cannot parse the subscription %r of group %s", header.subscription,
                             header.consumer_group)
                return fail(request, ResponseCode.SUBSCRIPTION_PARSE_FAILED,
                            "parse the consumer's subscription failed")
        else:
            group_info = broker.consumers.group(header.consumer_group)
            if group_info is None:
                return fail(request, ResponseCode.SUBSCRIPTION_NOT_EXIST,
                            f"the consumer's group info not exist{suggest_todo()}")
            if not group_config.consume_broadcast_enable and group_info.message_model == MessageModel.BROADCASTING:
                return fail(request, ResponseCode.NO_PERMISSION,
                            f"the consumer group[{header.consumer_group}] can not consume by broadcast way")
            subscription = group_info.subscription_table.get(header.topic)
            if subscription is None:
                return fail(request, ResponseCode.SUBSCRIPTION_NOT_EXIST,
                            f"the consumer's subscription not exist{suggest_todo()}")
            if subscription.sub_version < header.sub_version:
                return fail(request, ResponseCode.SUBSCRIPTION_NOT_LATEST, "the consumer's subscription not latest")
            if not subscription.is_tag_type:
                try:
                    cached_selector(subscription.sub_string)
                except Exception:
                    return fail(request, ResponseCode.FILTER_DATA_NOT_EXIST,
                                "The broker's consumer filter data is not exist!Your expression may be wrong!")
        if not ExpressionType.is_tag_type(subscription.expression_type) and not config.enable_property_filter:
            return fail(request, ResponseCode.SYSTEM_ERROR,
                        f"The broker does not support consumer to filter message by {subscription.expression_type}")
        message_filter = ExpressionMessageFilter(subscription)
        started = time.monotonic()
        # A front process's client gets the records from the front, which reads them from the CommitLog's files
        # itself: this process names their places and copies nothing (Java's transferMsgByHeap=false writes a
        # FileRegion; its default copies them, and the client gets the same bytes either way). Java's transient
        # store pool keeps records out of the files until they are committed, so with it the records are copied
        # as before (our store writes every record into its file at once: the key has no effect there yet).
        in_files = connection.shares_files and not broker.store_config.transient_store_pool_enable
        result = broker.store.get_messages(header.consumer_group, header.topic, header.queue_id, header.queue_offset,
                                           header.max_msg_nums, message_filter, in_files=in_files)
        status = result.status
        code = _CODES.get(status)
        if code is None:
            code = ResponseCode.PULL_OFFSET_MOVED if header.queue_offset != 0 else ResponseCode.PULL_NOT_FOUND
        # A slave serves what it holds, whatever slaveReadEnable says: Java's PullMessageProcessor sets
        # PULL_RETRY_IMMEDIATELY on a slave without slaveReadEnable, but its switch on the store's status that
        # follows sets the code again for every status, so a 4.9 slave answers as a master does. Only the
        # suggested broker says whether consumers should come back to the master.
        suggest = MASTER_ID
        if config.slave_read_enable:
            suggest = group_config.which_broker_when_consume_slowly if result.suggest_pulling_from_slave \
                else group_config.broker_id
        parks = code == ResponseCode.PULL_NOT_FOUND and allow_suspend and has_suspend
        if parks and not may_park:
            return None
        response_header = PullMessageResponseHeader(suggest, result.next_begin_offset, result.min_offset,
                                                    result.max_offset)
        body = None
        if code == ResponseCode.SUCCESS:
            body = result.body
            broker.stats.on_get(header.consumer_group, header.topic, result.message_count, result.buffer_total_size,
                                int((time.monotonic() - started) * 1000))
        else:
            broker.stats.on_get(header.consumer_group, header.topic, 0)
        if parks:
            hold_ms = header.suspend_timeout_millis if config.long_polling_enable else config.short_polling_time_mills
            parked = PullRequest(request, connection, header.queue_offset, message_filter,
                                 time.monotonic() + hold_ms / 1000)
            broker.hold_service.suspend(header.topic, header.queue_id, parked, hold_ms)
            self._commit_offset(connection, header, allow_suspend)
            return None
        if code == ResponseCode.PULL_OFFSET_MOVED:
            on_slave = broker.store_config.broker_role == SLAVE
            if on_slave and not broker.store_config.offset_check_in_slave:
                response_header.suggest_which_broker_id = group_config.broker_id
                code = ResponseCode.PULL_RETRY_IMMEDIATELY
            else:
                if not on_slave:  # a slave stores nothing of its own (Java's slave tries, and is refused)
                    self._offset_moved_event(header, result.next_begin_offset)
                _log.warning("PULL_OFFSET_MOVED: topic %s queue %d group %s asked offset %d, corrected to %d",
                             header.topic, header.queue_id, header.consumer_group, header.queue_offset,
                             result.next_begin_offset)
        self._commit_offset(connection, header, allow_suspend)
        response = create_response(request, code, status.name, response_header.to_ext_fields(), body)
        if result.region is not None:
            return FileRegionResponse(response, result.region)
        return response

    def _commit_offset(self, connection: RemotingConnection, header: PullMessageRequestHeader,
                       allow_suspend: bool) -> None:
        if allow_suspend and header.sys_flag & FLAG_COMMIT_OFFSET and self.broker.store_config.broker_role != SLAVE:
            self.broker.offsets.commit_offset(connection.remote_address, header.consumer_group, header.topic,
                                              header.queue_id, header.commit_offset)

    def _offset_moved_event(self, header: PullMessageRequestHeader, new_offset: int) -> None:
        broker = self.broker
        queue = {"brokerName": broker.config.broker_name, "queueId": header.queue_id, "topic": header.topic}
        event = {"consumerGroup": header.consumer_group, "messageQueue": queue, "offsetNew": new_offset,
                 "offsetRequest": header.queue_offset}
        message = StoreMessage(
            topic=RMQ_SYS_OFFSET_MOVED_EVENT, body=codec.json_dumps(event).encode(), queue_id=0,
            properties={MessageConst.TAGS: header.consumer_group, MessageConst.KEYS: header.consumer_group},
            born_timestamp=now_ms(), born_host=broker.broker_addr, store_host=broker.broker_addr,
        )
        result = broker.store.append_message(message)
        if not result.is_ok:
            _log.warning("storing the offset moved event of %s failed: %s", header.consumer_group, result.status.name)
