"""What every client can do besides its own work (Java's MQAdmin interface): create a topic, find offsets of a
queue, and look messages up by id or key.

:class:`MQAdminMethods` puts these on every asyncio client (the producers, both consumers and ``AsyncAdmin``)
and :class:`BlockingMQAdminMethods` on their blocking facades; both run the one implementation,
:class:`rocketmq_py.client.mq_admin_impl.MQAdminImpl`, which loads when a client first uses it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Coroutine, TypeVar

if TYPE_CHECKING:
    from rocketmq_py.client.mq_admin_impl import MQAdminImpl
    from rocketmq_py.common.message import MessageExt
    from rocketmq_py.common.message_queue import MessageQueue

_T = TypeVar("_T")

#: The latest timestamp a query can name (Java's Long.MAX_VALUE).
END_OF_TIME_MS = (1 << 63) - 1


@dataclass
class QueryResult:
    """The messages a key lookup found on every broker of the topic, and the latest update time of the
    brokers' indexes (Java's client QueryResult)."""

    index_last_update_timestamp: int
    message_list: list[MessageExt]


class MQAdminMethods:
    """Java's MQAdmin methods on an asyncio client; they need the client started."""

    def _mq_admin(self) -> MQAdminImpl:
        """The implementation, bound to this client's running client instance."""
        raise NotImplementedError

    async def create_topic(self, key: str, new_topic: str, queue_num: int, topic_sys_flag: int = 0) -> None:
        """Create ``new_topic`` with ``queue_num`` queues on every master broker that serves the topic ``key``
        (``"TBW102"`` reaches the brokers that allow auto-creation)."""
        await self._mq_admin().create_topic(key, new_topic, queue_num, topic_sys_flag)

    async def search_offset(self, queue: MessageQueue, timestamp_ms: int) -> int:
        """The offset of the first message of ``queue`` stored at or after ``timestamp_ms`` (ms since the
        epoch); the max offset when none was stored since."""
        return await self._mq_admin().search_offset(queue, timestamp_ms)

    async def max_offset(self, queue: MessageQueue) -> int:
        """The offset after the last message of ``queue`` on its broker."""
        return await self._mq_admin().max_offset(queue)

    async def min_offset(self, queue: MessageQueue) -> int:
        """The smallest offset of ``queue`` on its broker."""
        return await self._mq_admin().min_offset(queue)

    async def earliest_msg_store_time(self, queue: MessageQueue) -> int:
        """When the oldest message ``queue`` holds was stored (ms since the epoch)."""
        return await self._mq_admin().earliest_msg_store_time(queue)

    async def view_message(self, msg_id: str, topic: str | None = None) -> MessageExt:
        """The message of an offset message id; with ``topic``, ``msg_id`` may also be the unique key a
        producer gave the message (its ``SendResult.msg_id``). NoMessageError when there is none."""
        if topic is None:
            return await self._mq_admin().view_message(msg_id)
        return await self._mq_admin().view_message_of_topic(topic, msg_id)

    async def query_message(self, topic: str, key: str, max_num: int = 64, begin_ms: int = 0,
                            end_ms: int = END_OF_TIME_MS) -> QueryResult:
        """The messages of ``topic`` with ``key`` among their keys, stored between ``begin_ms`` and ``end_ms``
        (up to ``max_num`` per broker). NoMessageError when there is none."""
        return await self._mq_admin().query_message(topic, key, max_num, begin_ms, end_ms)


class BlockingMQAdminMethods:
    """Java's MQAdmin methods on a blocking client, run on its asyncio core."""

    if TYPE_CHECKING:
        @property
        def core(self) -> MQAdminMethods: ...

        def _run(self, coro: Coroutine[Any, Any, _T]) -> _T: ...

    def create_topic(self, key: str, new_topic: str, queue_num: int, topic_sys_flag: int = 0) -> None:
        """Create ``new_topic`` with ``queue_num`` queues on every master broker that serves the topic ``key``
        (``"TBW102"`` reaches the brokers that allow auto-creation)."""
        self._run(self.core.create_topic(key, new_topic, queue_num, topic_sys_flag))

    def search_offset(self, queue: MessageQueue, timestamp_ms: int) -> int:
        """The offset of the first message of ``queue`` stored at or after ``timestamp_ms``."""
        return self._run(self.core.search_offset(queue, timestamp_ms))

    def max_offset(self, queue: MessageQueue) -> int:
        """The offset after the last message of ``queue`` on its broker."""
        return self._run(self.core.max_offset(queue))

    def min_offset(self, queue: MessageQueue) -> int:
        """The smallest offset of ``queue`` on its broker."""
        return self._run(self.core.min_offset(queue))

    def earliest_msg_store_time(self, queue: MessageQueue) -> int:
        """When the oldest message ``queue`` holds was stored (ms since the epoch)."""
        return self._run(self.core.earliest_msg_store_time(queue))

    def view_message(self, msg_id: str, topic: str | None = None) -> MessageExt:
        """The message of an offset message id, or with ``topic`` also of a unique key."""
        return self._run(self.core.view_message(msg_id, topic))

    def query_message(self, topic: str, key: str, max_num: int = 64, begin_ms: int = 0,
                      end_ms: int = END_OF_TIME_MS) -> QueryResult:
        """The messages of ``topic`` with ``key`` among their keys, stored between ``begin_ms`` and
        ``end_ms``."""
        return self._run(self.core.query_message(topic, key, max_num, begin_ms, end_ms))
