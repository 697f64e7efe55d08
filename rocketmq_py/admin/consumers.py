"""Consumer groups and producers at work: progress and lag, connections, running info, offset resets (what
``mqadmin consumerProgress``, ``consumerConnection``, ``consumerStatus``, ``resetOffsetByTime``,
``skipAccumulatedMessage`` and ``producerConnection`` ask).

A group's brokers are those of its retry topic (``%RETRY%group``), which every consumer of the group creates.
"""
from __future__ import annotations

import logging
import random
from typing import TYPE_CHECKING

from rocketmq_py.admin.base import SLOW_CALL_FACTOR, AdminBase
from rocketmq_py.admin.results import RollbackStats
from rocketmq_py.common.codes import ResponseCode
from rocketmq_py.common.topic import retry_topic
from rocketmq_py.errors import ClientError, ConsumerNotOnlineError

if TYPE_CHECKING:
    from rocketmq_py.common.admin_body import ConsumeStats, ConsumerConnection, OffsetWrapper, ProducerConnection
    from rocketmq_py.common.consumer_body import ConsumerRunningInfo
    from rocketmq_py.common.message_queue import MessageQueue

_log = logging.getLogger(__name__)


class ConsumerMethods(AdminBase):
    async def examine_consume_stats(self, group: str, topic: str | None = None) -> ConsumeStats:
        """``group``'s progress on every queue it consumes (of ``topic`` only, when given) on every broker:
        broker offset, consumer offset and the store time of its last consumed message, and its consume rate
        summed over the brokers. ConsumerNotOnlineError when no broker reports a queue of it."""
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.common.admin_body import ConsumeStats

        merged = ConsumeStats()
        for _, addr in await self._broker_addrs_of_topic(retry_topic(group)):
            stats = await self._api.get_consume_stats(addr, group, topic, self._timeout * SLOW_CALL_FACTOR)
            merged.offset_table.update(stats.offset_table)
            merged.consume_tps += stats.consume_tps
        if not merged.offset_table:
            raise ConsumerNotOnlineError(
                ResponseCode.CONSUMER_NOT_ONLINE,
                f"Not found the consumer group consume stats of {group!r}: no broker holds an offset of it "
                "(maybe the group has not consumed any message)")
        return merged

    async def examine_consumer_connection_info(self, group: str, broker_addr: str | None = None) -> ConsumerConnection:
        """The online consumers of ``group`` (client ids, addresses, languages, versions) with its subscriptions,
        from ``broker_addr`` or a random broker of the group. ConsumerNotOnlineError when none is online."""
        addr = broker_addr
        if addr is None:
            brokers = await self._broker_addrs_of_topic(retry_topic(group))
            if not brokers:
                raise ConsumerNotOnlineError(ResponseCode.CONSUMER_NOT_ONLINE,
                                             f"no broker serves the consumer group {group!r}")
            _, addr = random.choice(brokers)
        connection = await self._api.get_consumer_connection_list(addr, group, self._timeout)
        if not connection.connection_set:
            raise ConsumerNotOnlineError(ResponseCode.CONSUMER_NOT_ONLINE,
                                         f"Not found the consumer group connection of {group!r}", addr)
        return connection

    async def examine_producer_connection_info(self, group: str, topic: str) -> ProducerConnection:
        """The connected producers of ``group``, from a random broker of ``topic``. ClientError when none is."""
        brokers = await self._broker_addrs_of_topic(topic)
        if not brokers:
            raise ClientError(f"no broker serves the topic {topic!r}")
        _, addr = random.choice(brokers)
        connection = await self._api.get_producer_connection_list(addr, group, self._timeout)
        if not connection.connection_set:
            raise ClientError(f"Not found the producer group connection of {group!r} at {addr}")
        return connection

    async def get_consumer_running_info(self, group: str, client_id: str, jstack: bool = False) -> ConsumerRunningInfo:
        """What the consumer ``client_id`` of ``group`` reports about itself (its properties, subscriptions,
        queues with their process queues, rates; with ``jstack`` its threads' stacks), asked through a broker
        of the group."""
        for _, addr in await self._broker_addrs_of_topic(retry_topic(group)):
            return await self._api.get_consumer_running_info(addr, group, client_id, jstack,
                                                             self._timeout * SLOW_CALL_FACTOR)
        raise ConsumerNotOnlineError(ResponseCode.CONSUMER_NOT_ONLINE, f"no broker serves the consumer group {group!r}")

    # --- offsets --------------------------------------------------------------------------------------------

    async def reset_offset_by_timestamp(self, topic: str, group: str, timestamp_ms: int, force: bool = True,
                                        cpp: bool = False) -> dict[MessageQueue, int]:
        """Move ``group``'s offsets of ``topic`` to the first message stored at or after ``timestamp_ms`` (-1:
        the end) on every broker, which tell the group's online consumers to move too (the 4.x way, without a
        restart). Without ``force`` an offset only moves back. The new offset of each queue.
        ConsumerNotOnlineError when no consumer of the group is online: use :meth:`reset_offset_by_timestamp_old`
        then. ``cpp`` asks the brokers to tell C++ consumers in their format."""
        offsets: dict[MessageQueue, int] = {}
        for _, addr in await self._broker_addrs_of_topic(topic):
            offsets.update(await self._api.invoke_broker_to_reset_offset(addr, topic, group, timestamp_ms, force, cpp,
                                                                         self._timeout))
        return offsets

    async def reset_offset_by_timestamp_old(self, group: str, topic: str, timestamp_ms: int,
                                            force: bool = True) -> list[RollbackStats]:
        """Move ``group``'s offsets of ``topic`` as :meth:`reset_offset_by_timestamp` does, writing them on the
        brokers from here (the old way: running consumers keep theirs and write them back, so restart them).
        Queues the group never consumed start from their min offset. One row per queue."""
        route = await self.examine_topic_route_info(topic)
        read_queues = {queue_data.broker_name: queue_data.read_queue_nums for queue_data in route.queue_datas}
        rows: list[RollbackStats] = []
        for broker in route.broker_datas:
            addr = broker.select_broker_addr()
            if addr is None:
                continue
            stats = await self._api.get_consume_stats(addr, group, None, self._timeout)
            consumed = {queue: offset for queue, offset in stats.offset_table.items() if queue.topic == topic}
            if not consumed:
                consumed = await self._never_consumed(addr, topic, broker.broker_name,
                                                      read_queues.get(broker.broker_name, 0))
            for queue, offset in sorted(consumed.items()):
                rows.append(await self._reset_queue(addr, group, queue, offset, timestamp_ms, force))
        return rows

    async def _never_consumed(self, addr: str, topic: str, broker_name: str,
                              read_queue_nums: int) -> dict[MessageQueue, OffsetWrapper]:
        """A group's progress on queues it never consumed: at their min offset."""
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.common.admin_body import OffsetWrapper
        from rocketmq_py.common.message_queue import MessageQueue

        status = (await self._api.get_topic_stats_info(addr, topic, self._timeout)).offset_table
        progress = {}
        for queue_id in range(read_queue_nums):
            queue = MessageQueue(topic, broker_name, queue_id)
            offsets = status.get(queue)
            if offsets is not None:
                progress[queue] = OffsetWrapper(offsets.max_offset, offsets.min_offset)
        return progress

    async def _reset_queue(self, addr: str, group: str, queue: MessageQueue, progress: OffsetWrapper,
                           timestamp_ms: int, force: bool) -> RollbackStats:
        if timestamp_ms == -1:
            target = await self._api.get_max_offset(addr, queue, self._timeout)
        else:
            target = await self._api.search_offset(addr, queue, timestamp_ms, self._timeout)
        rollback = progress.consumer_offset
        if force or target <= progress.consumer_offset:
            rollback = target
            await self.update_consume_offset(addr, group, queue, target)
        return RollbackStats(queue.broker_name, queue.queue_id, progress.broker_offset, progress.consumer_offset,
                             target, rollback)

    async def update_consume_offset(self, broker_addr: str, group: str, queue: MessageQueue, offset: int) -> None:
        """Set ``group``'s committed offset of ``queue`` on the broker at ``broker_addr``."""
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.common.headers.offset import UpdateConsumerOffsetRequestHeader

        header = UpdateConsumerOffsetRequestHeader(group, queue.topic, queue.queue_id, offset, queue.broker_name)
        await self._api.update_consumer_offset(broker_addr, header, self._timeout)
        _log.info("set the offset of %s on %s to %d (%s)", group, queue, offset, broker_addr)

    async def skip_accumulated_message(self, group: str, topic: str,
                                       force: bool = True) -> dict[MessageQueue, int] | list[RollbackStats]:
        """Move ``group``'s offsets of ``topic`` to the end, skipping what it has not consumed: through the
        brokers while a consumer of the group is online (the new offsets), else the old way (one
        :class:`RollbackStats` per queue), as ``mqadmin skipAccumulatedMessage`` does."""
        try:
            return await self.reset_offset_by_timestamp(topic, group, -1, force)
        except ConsumerNotOnlineError:
            return await self.reset_offset_by_timestamp_old(group, topic, -1, force)
