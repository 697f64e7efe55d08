"""Pulling from a broker (Java's impl/consumer/PullAPIWrapper, PullResult and PullStatus).

A pull response carries store records back to back; they are decoded by the
codec, filtered again by tag string (the broker matched only the tag hash),
and marked with the queue's min and max offsets as Java marks them. The
broker may suggest pulling a queue from a slave; the suggestion is kept per
queue.

A PULL_RETRY_IMMEDIATELY answer has no messages. Java's client moves to its
``nextBeginOffset`` whatever the reason; this one only when the remark says
the messages before it are not for the consumer (none matched its
subscription, or they were deleted, which is logged). Any other 20 (a slave
behind the consumer, an older slave that did not serve reads) raises
:class:`~rocketmq_py.errors.PullRetryImmediatelyError`: the consumer pulls the
same offset again after its exception delay, from the broker the answer
suggested, and never moves past messages it did not receive.
"""
from __future__ import annotations

import enum
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rocketmq_py import codec
from rocketmq_py.client.consumer.brokers import broker_for_queue, find_broker_in_subscribe
from rocketmq_py.common.codes import ResponseCode
from rocketmq_py.common.filter import SubscriptionData
from rocketmq_py.common.headers.pull import (
    FLAG_COMMIT_OFFSET,
    RETRY_PAST_REMOVED,
    RETRY_PAST_UNMATCHED,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
)
from rocketmq_py.common.message import MessageConst, MessageExt
from rocketmq_py.common.message_queue import MessageQueue
from rocketmq_py.common.route import MASTER_ID
from rocketmq_py.errors import ClientError, PullRetryImmediatelyError

if TYPE_CHECKING:
    from rocketmq_py.client.instance import MQClientInstance

_log = logging.getLogger(__name__)

#: The first broker version that filters by SQL92 (Java's MQVersion V4_1_0_SNAPSHOT ordinal).
SQL92_MIN_BROKER_VERSION = 232

_MIN_OFFSET = MessageConst.MIN_OFFSET
_MAX_OFFSET = MessageConst.MAX_OFFSET
_TAGS = MessageConst.TAGS
_TRAN_MSG = MessageConst.TRANSACTION_PREPARED
_UNIQ_KEY = MessageConst.UNIQ_CLIENT_MESSAGE_ID_KEYIDX


class PullStatus(enum.Enum):
    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


_STATUS_BY_CODE: dict[int, PullStatus] = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}


@dataclass
class PullResult:
    status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: list[MessageExt] = field(default_factory=list)
    suggest_which_broker_id: int = MASTER_ID


class PullAPI:
    """Sends PULL_MESSAGE for one consumer group and turns the answer into a :class:`PullResult`."""

    def __init__(self, instance: "MQClientInstance", group: str) -> None:
        self.instance = instance
        self.group = group
        self.pull_from_which_node: dict[MessageQueue, int] = {}

    async def pull(
        self,
        queue: MessageQueue,
        subscription: SubscriptionData,
        offset: int,
        max_nums: int,
        sys_flag: int,
        commit_offset: int,
        suspend_timeout_ms: int,
        timeout_ms: float,
        sub_expression: str | None = None,
        sub_version: int | None = None,
    ) -> PullResult:
        node = self.pull_from_which_node.get(queue, MASTER_ID)
        # the broker is known at every pull but the first: no coroutine for the look-up then
        broker = (find_broker_in_subscribe(self.instance, queue.broker_name, node)
                  or await broker_for_queue(self.instance, queue, node, False))
        if (broker.version and broker.version < SQL92_MIN_BROKER_VERSION
                and not subscription.is_tag_type):
            raise ClientError(
                f"the broker {queue.broker_name} (version {broker.version}) cannot filter by "
                f"{subscription.expression_type}: upgrade it to 4.1 or later, or subscribe by tag"
            )
        if broker.slave:
            sys_flag &= ~FLAG_COMMIT_OFFSET
        header = PullMessageRequestHeader(
            consumer_group=self.group,
            topic=queue.topic,
            queue_id=queue.queue_id,
            queue_offset=offset,
            max_msg_nums=max_nums,
            sys_flag=sys_flag,
            commit_offset=commit_offset,
            suspend_timeout_millis=suspend_timeout_ms,
            sub_version=subscription.sub_version if sub_version is None else sub_version,
            subscription=sub_expression,
            expression_type=subscription.expression_type,
            broker_name=queue.broker_name,
        )
        response = await self.instance.api.pull_message(broker.addr, header, timeout_ms)
        answer = PullMessageResponseHeader.from_command(response)
        result = PullResult(
            _STATUS_BY_CODE[response.code], answer.next_begin_offset, answer.min_offset, answer.max_offset,
            suggest_which_broker_id=answer.suggest_which_broker_id,
        )
        self.pull_from_which_node[queue] = answer.suggest_which_broker_id
        if response.code == ResponseCode.PULL_RETRY_IMMEDIATELY:
            self._check_way_forward(queue, offset, answer.next_begin_offset, response.remark, broker.addr)
        if result.status is PullStatus.FOUND and response.body:
            result.messages = process_messages(
                codec.decode_store_records(response.body, strict=False), queue, subscription,
                result.min_offset, result.max_offset,
            )
        return result

    def _check_way_forward(self, queue: MessageQueue, offset: int, next_offset: int, remark: str | None,
                           addr: str) -> None:
        """Raise unless a PULL_RETRY_IMMEDIATELY answer says why the consumer may skip to ``next_offset``."""
        if remark == RETRY_PAST_UNMATCHED:
            return
        if remark == RETRY_PAST_REMOVED:
            _log.warning("%s: the messages of %s from offset %d to %d were deleted from the broker %s before "
                         "they were pulled", self.group, queue, offset, next_offset, addr)
            return
        raise PullRetryImmediatelyError(
            ResponseCode.PULL_RETRY_IMMEDIATELY,
            f"{remark or '(no remark)'}, no messages at offset {offset} (next offset {next_offset}); pulling "
            "there again", addr)


def process_messages(messages: list[MessageExt], queue: MessageQueue, subscription: SubscriptionData,
                     min_offset: int, max_offset: int) -> list[MessageExt]:
    """Java's processPullResult after decoding: tag re-filter, transaction id, MIN/MAX_OFFSET, broker name."""
    tags_set = subscription.tags_set
    if tags_set and not subscription.class_filter_mode:
        wanted = set(tags_set)
        messages = [m for m in messages if m.properties.get(_TAGS) in wanted]
    min_text = str(min_offset)
    max_text = str(max_offset)
    broker_name = queue.broker_name
    for message in messages:
        properties = message.properties
        prepared = properties.get(_TRAN_MSG)
        if prepared is not None and prepared.lower() == "true":
            message.transaction_id = properties.get(_UNIQ_KEY)
        properties[_MIN_OFFSET] = min_text
        properties[_MAX_OFFSET] = max_text
        message.broker_name = broker_name
    return messages
