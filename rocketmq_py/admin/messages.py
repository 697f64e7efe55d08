"""Messages: by id (an offset message id or a unique key), by key, by topic and time range, where a message
stands for each group, and consuming one again in a given consumer (what ``mqadmin queryMsgById``,
``queryMsgByKey``, ``queryMsgByUniqueKey`` and ``printMsg`` do). The lookups by id and key are the MQAdmin
methods every client has (:class:`rocketmq_py.client.mq_admin.MQAdminMethods`)."""
from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING, AsyncGenerator

from rocketmq_py.admin.base import MASTER_ID, SLOW_CALL_FACTOR, AdminBase
from rocketmq_py.admin.consumers import ConsumerMethods
from rocketmq_py.admin.results import MessageTrack, TrackType
from rocketmq_py.admin.topics import TopicMethods
from rocketmq_py.client.mq_admin import END_OF_TIME_MS, QueryResult
from rocketmq_py.common.heartbeat_consumer import ConsumeType
from rocketmq_py.common.message import MessageConst
from rocketmq_py.errors import ConsumerNotOnlineError, RocketMQError

if TYPE_CHECKING:
    from rocketmq_py.client.consumer.pull import PullResult
    from rocketmq_py.common.consumer_body import ConsumeMessageDirectlyResult
    from rocketmq_py.common.message import MessageExt
    from rocketmq_py.common.message_queue import MessageQueue

_log = logging.getLogger(__name__)

#: The group the admin pulls with (Java's MixAll.TOOLS_CONSUMER_GROUP); it never commits an offset.
TOOLS_CONSUMER_GROUP = "TOOLS_CONSUMER"
#: Messages per pull when reading a queue (what a broker sends at most from memory by default).
PULL_BATCH = 32
#: How many messages a lookup by time returns at most (the dashboard's limit).
MAX_MESSAGES_BY_TIME = 2000


class MessageMethods(TopicMethods, ConsumerMethods, AdminBase):
    async def query_message_by_unique_key(self, topic: str, unique_key: str, max_num: int = 32, begin_ms: int = 0,
                                          end_ms: int = END_OF_TIME_MS) -> QueryResult:
        """The message of ``topic`` whose unique key (its producer's message id) is ``unique_key``: the
        earliest stored, when a retry stored it twice. NoMessageError when there is none."""
        return await self._mq_admin().query_message(topic, unique_key, max_num, begin_ms, end_ms, unique_key=True)

    async def pull_messages(self, queue: MessageQueue, offset: int, max_nums: int = PULL_BATCH,
                            sub_expression: str = "*") -> PullResult:
        """One pull of ``queue`` from ``offset``: up to ``max_nums`` messages matching the tag expression, the
        status and the offset to pull from next (Java's DefaultMQPullConsumer.pull, as ``mqadmin printMsg``
        uses it). The pull is made as the group ``TOOLS_CONSUMER``, which commits nothing, and the broker
        answers at once when there is nothing to pull."""
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.client.consumer.pull import PullAPI
        from rocketmq_py.common.filter import build_subscription_data
        from rocketmq_py.common.headers.pull import build_pull_sys_flag

        subscription = build_subscription_data(queue.topic, sub_expression)
        sys_flag = build_pull_sys_flag(commit_offset=False, suspend=False, subscription=True)
        return await PullAPI(self._running_instance(), TOOLS_CONSUMER_GROUP).pull(
            queue, subscription, offset, max_nums, sys_flag, 0, 0, self._timeout, sub_expression=subscription.sub_string)

    async def pull_queue_messages(self, queue: MessageQueue, begin_offset: int, end_offset: int,
                                  sub_expression: str = "*") -> AsyncGenerator[MessageExt, None]:
        """The messages of ``queue`` from ``begin_offset`` up to (not including) ``end_offset`` that match the
        tag expression, in offset order (see :meth:`pull_messages`)."""
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.client.consumer.pull import PullStatus

        offset = begin_offset
        while offset < end_offset:
            result = await self.pull_messages(queue, offset, min(PULL_BATCH, end_offset - offset), sub_expression)
            for message in result.messages:
                if message.queue_offset < end_offset:
                    yield message
            if result.status in (PullStatus.NO_NEW_MSG, PullStatus.OFFSET_ILLEGAL) \
                    or result.next_begin_offset <= offset:
                return
            offset = result.next_begin_offset

    async def query_message_by_topic(self, topic: str, begin_ms: int, end_ms: int,
                                     max_num: int = MAX_MESSAGES_BY_TIME) -> list[MessageExt]:
        """The messages of ``topic`` stored between ``begin_ms`` and ``end_ms`` on every queue, newest first,
        at most ``max_num`` (what the dashboard's message page shows)."""
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.client.consumer.brokers import subscribe_queues

        found: list[MessageExt] = []
        for queue in sorted(subscribe_queues(topic, await self.examine_topic_route_info(topic))):
            begin = await self.search_offset(queue, begin_ms)
            # Store times grow along a queue: read from the first message of begin_ms to the first one after end_ms.
            async with contextlib.aclosing(self.pull_queue_messages(queue, begin, await self.max_offset(queue))) as pulled:
                async for message in pulled:
                    if message.store_timestamp > end_ms:
                        break
                    if message.store_timestamp >= begin_ms:
                        found.append(message)
        found.sort(key=lambda message: message.store_timestamp, reverse=True)
        return found[:max_num]

    async def consume_message_directly(self, group: str, client_id: str, msg_id: str,
                                       topic: str | None = None) -> ConsumeMessageDirectlyResult:
        """Have the consumer ``client_id`` of ``group`` consume the message ``msg_id`` again, now, through the
        broker that stores it; with ``topic``, ``msg_id`` may be a unique key. The consumer's answer."""
        message = await self.view_message(msg_id, topic)
        if topic is not None and message.properties.get(MessageConst.UNIQ_CLIENT_MESSAGE_ID_KEYIDX) is not None:
            msg_id = message.offset_msg_id
        return await self._api.consume_message_directly(message.store_host, group, client_id, msg_id,
                                                        self._timeout * SLOW_CALL_FACTOR)

    async def message_track_detail(self, message: MessageExt) -> list[MessageTrack]:
        """For each group of the message's topic, whether it consumed the message (Java's messageTrackDetail,
        which ``mqadmin queryMsgById`` prints)."""
        tracks = []
        for group in sorted((await self.query_topic_consume_by_who(message.topic)).group_list):
            try:
                connection = await self.examine_consumer_connection_info(group)
            except ConsumerNotOnlineError as error:
                tracks.append(MessageTrack(group, TrackType.NOT_ONLINE, f"CODE:{error.code} DESC:{error.remark}"))
                continue
            except RocketMQError as error:
                tracks.append(MessageTrack(group, TrackType.UNKNOWN, str(error)))
                continue
            if connection.consume_type is ConsumeType.CONSUME_ACTIVELY:
                tracks.append(MessageTrack(group, TrackType.PULL))
                continue
            try:
                consumed = await self._consumed(message, group)
            except ConsumerNotOnlineError as error:
                tracks.append(MessageTrack(group, TrackType.NOT_ONLINE, f"CODE:{error.code} DESC:{error.remark}"))
                continue
            except RocketMQError as error:
                tracks.append(MessageTrack(group, TrackType.UNKNOWN, str(error)))
                continue
            track = TrackType.CONSUMED if consumed else TrackType.NOT_CONSUME_YET
            subscription = connection.subscription_table.get(message.topic)
            if consumed and subscription is not None and subscription.tags_set \
                    and not {message.tags, "*"} & set(subscription.tags_set):
                track = TrackType.CONSUMED_BUT_FILTERED
            tracks.append(MessageTrack(group, track))
        return tracks

    async def _consumed(self, message: MessageExt, group: str) -> bool:
        """Whether ``group`` committed past ``message`` on the master that stores it."""
        stats = await self.examine_consume_stats(group)
        info = await self.examine_broker_cluster_info()
        for queue, progress in stats.offset_table.items():
            if queue.topic != message.topic or queue.queue_id != message.queue_id:
                continue
            broker = info.broker_addr_table.get(queue.broker_name)
            if broker is not None and broker.broker_addrs.get(MASTER_ID) == message.store_host \
                    and progress.consumer_offset > message.queue_offset:
                return True
        return False
