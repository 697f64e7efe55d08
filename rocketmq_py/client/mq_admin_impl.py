"""Java's MQAdminImpl: the one implementation of the MQAdmin methods every client has (see
:mod:`rocketmq_py.client.mq_admin`) and that ``AsyncAdmin`` builds on."""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from rocketmq_py import codec
from rocketmq_py.client.mq_admin import END_OF_TIME_MS, QueryResult
from rocketmq_py.common import validators
from rocketmq_py.common.clock import now_ms
from rocketmq_py.common.headers.query import QueryMessageRequestHeader
from rocketmq_py.common.message import MessageConst, MessageExt
from rocketmq_py.common.message_queue import MessageQueue
from rocketmq_py.common.route import MASTER_ID
from rocketmq_py.common.topic import is_system_topic
from rocketmq_py.common.topic_config import TopicConfig
from rocketmq_py.errors import (
    ClientError,
    InvalidArgumentError,
    NoMessageError,
    QueryNotFoundError,
    RocketMQError,
    TopicNotExistError,
)

if TYPE_CHECKING:
    from rocketmq_py.client.config import ClientConfig
    from rocketmq_py.client.instance import MQClientInstance

_log = logging.getLogger(__name__)

#: Tries per broker when creating a topic (Java's MQAdminImpl.createTopic).
CREATE_TOPIC_ATTEMPTS = 5
#: How many messages a unique-key lookup asks each broker for (Java's queryMessageByUniqKey).
UNIQUE_KEY_MAX_NUM = 32


class MQAdminImpl:
    """Java's MQAdminImpl over one client instance; ``config`` is the client's own (for its namespace)."""

    def __init__(self, instance: MQClientInstance, config: ClientConfig) -> None:
        self.instance = instance
        self.config = config

    def _queue(self, queue: MessageQueue) -> MessageQueue:
        return queue._replace(topic=self.config.with_namespace(queue.topic))

    async def create_topic(self, key: str, new_topic: str, queue_num: int, topic_sys_flag: int = 0) -> None:
        """Create ``new_topic`` with ``queue_num`` read and write queues on every master broker that serves the
        topic ``key`` (``TBW102`` for the brokers that allow auto-creation); each broker is tried five times.
        ClientError when no broker created it."""
        validators.check_topic(new_topic)
        if is_system_topic(new_topic):
            raise InvalidArgumentError(f"the topic {new_topic!r} is a system topic: choose another name")
        if queue_num <= 0:
            raise InvalidArgumentError(f"a topic needs at least one queue, not {queue_num}")
        topic = self.config.with_namespace(new_topic)
        route = await self.instance.get_topic_route(key)
        masters = [(broker.broker_name, broker.broker_addrs[MASTER_ID])
                   for broker in sorted(route.broker_datas, key=lambda b: b.broker_name)
                   if MASTER_ID in broker.broker_addrs]
        if not masters:
            raise ClientError(f"no master broker serves the topic {key!r}: is the key right and a broker running?")
        config = TopicConfig(topic, queue_num, queue_num, topic_sys_flag=topic_sys_flag)
        last_error: RocketMQError | None = None
        created = 0
        for broker_name, addr in masters:
            for _ in range(CREATE_TOPIC_ATTEMPTS):
                try:
                    await self.instance.api.create_topic(addr, key, config)
                except RocketMQError as error:
                    last_error = error
                    continue
                created += 1
                _log.info("created topic %s with %d queues on %s (%s)", topic, queue_num, broker_name, addr)
                break
        if not created:
            raise ClientError(f"creating the topic {topic!r} failed on every broker: {last_error}") from last_error

    async def _master_addr(self, queue: MessageQueue) -> str:
        # lazy: the consumer package loads with the first consumer, and only this looks it up for a producer
        from rocketmq_py.client.consumer.brokers import master_for_queue

        return await master_for_queue(self.instance, queue)

    async def search_offset(self, queue: MessageQueue, timestamp_ms: int) -> int:
        """The offset of the first message of ``queue`` stored at or after ``timestamp_ms``."""
        queue = self._queue(queue)
        return await self.instance.api.search_offset(await self._master_addr(queue), queue, timestamp_ms)

    async def max_offset(self, queue: MessageQueue) -> int:
        """The offset after the last message of ``queue``."""
        queue = self._queue(queue)
        return await self.instance.api.get_max_offset(await self._master_addr(queue), queue)

    async def min_offset(self, queue: MessageQueue) -> int:
        """The offset of the first message ``queue`` still holds."""
        queue = self._queue(queue)
        return await self.instance.api.get_min_offset(await self._master_addr(queue), queue)

    async def earliest_msg_store_time(self, queue: MessageQueue) -> int:
        """When the first message ``queue`` still holds was stored (ms since the epoch)."""
        queue = self._queue(queue)
        return await self.instance.api.get_earliest_msg_storetime(await self._master_addr(queue), queue)

    async def view_message(self, offset_msg_id: str) -> MessageExt:
        """The message of an offset message id (the broker address and CommitLog offset it encodes)."""
        try:
            host, port, offset = codec.decode_offset_msg_id(offset_msg_id)
        except (ValueError, RocketMQError):
            raise NoMessageError(f"{offset_msg_id!r} is not an offset message id, so no message was found") \
                from None
        message = await self.instance.api.view_message(f"{host}:{port}", offset)
        message.topic = self.config.without_namespace(message.topic)
        return message

    async def view_message_of_topic(self, topic: str, msg_id: str) -> MessageExt:
        """The message of ``msg_id``, an offset message id or else a unique key (a producer's message id) of
        ``topic`` (Java's viewMessage(topic, msgId))."""
        try:
            return await self.view_message(msg_id)
        except RocketMQError as error:
            _log.debug("%s is not an offset message id that a broker answers (%s); trying it as a unique key",
                       msg_id, error)
        return await self.query_message_by_unique_key(topic, msg_id)

    async def query_message_by_unique_key(self, topic: str, unique_key: str) -> MessageExt:
        """The message whose unique key (client message id) is ``unique_key``, searched from a second before
        the time the key holds; the earliest stored one when a retry stored it twice."""
        try:
            begin = codec.unique_id_timestamp(unique_key, now_ms()) - 1000
        except (ValueError, RocketMQError):
            raise NoMessageError(f"{unique_key!r} is not a unique message key, so no message was found") from None
        result = await self.query_message(topic, unique_key, UNIQUE_KEY_MAX_NUM, begin, END_OF_TIME_MS,
                                          unique_key=True)
        return result.message_list[0]

    async def query_message(self, topic: str, key: str, max_num: int, begin_ms: int, end_ms: int,
                            unique_key: bool = False) -> QueryResult:
        """The messages of ``topic`` with ``key`` among their keys (or, with ``unique_key``, the one whose
        unique key it is) stored between ``begin_ms`` and ``end_ms``, asked of every broker of the topic at
        once; up to ``max_num`` from each. NoMessageError when none was found."""
        topic = self.config.with_namespace(topic)
        route = self.instance.topic_routes.get(topic)
        if route is None:
            await self.instance.update_topic_route(topic)
            route = self.instance.topic_routes.get(topic)
        addresses = [addr for addr in (broker.select_broker_addr() for broker in route.broker_datas)
                     if addr is not None] if route is not None else []
        if not addresses:
            raise TopicNotExistError(17, f"The topic[{topic}] not matched route info")
        header = QueryMessageRequestHeader(topic, key, max_num, begin_ms, end_ms)
        timeout_ms = self.instance.api.timeout_ms * 3
        answers = await asyncio.gather(
            *(self.instance.api.query_message(addr, header, unique_key, timeout_ms) for addr in addresses),
            return_exceptions=True)
        last_update = 0
        found: list[MessageExt] = []
        for addr, answer in zip(addresses, answers):
            if isinstance(answer, QueryNotFoundError):
                continue
            if isinstance(answer, BaseException):
                if not isinstance(answer, (RocketMQError, OSError)):
                    raise answer
                _log.warning("querying %s for key %s of %s failed: %s", addr, key, topic, answer)
                continue
            index_time, messages = answer
            last_update = max(last_update, index_time)
            found.extend(message for message in messages if _matches(message, topic, key, unique_key))
        if unique_key and found:
            found = [min(found, key=lambda message: message.store_timestamp)]
        if not found:
            raise NoMessageError(f"no message of topic {topic} has the {'unique key' if unique_key else 'key'} "
                                 f"{key!r} (query message by key finished, but no message)")
        for message in found:
            message.topic = self.config.without_namespace(message.topic)
        return QueryResult(last_update, found)


def _matches(message: MessageExt, topic: str, key: str, unique_key: bool) -> bool:
    """Whether ``message`` is what the query asked for, not a hash neighbour in the broker's index."""
    if unique_key:
        matched = message.msg_id == key
    else:
        keys = message.properties.get(MessageConst.KEYS)
        matched = keys is not None and message.topic == topic and key in keys.split(MessageConst.KEY_SEPARATOR)
    if not matched:
        _log.debug("query for %s found %s, a hash neighbour in the index", key, message.msg_id)
    return matched
