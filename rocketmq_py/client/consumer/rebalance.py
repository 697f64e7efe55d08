"""Rebalance: which queues this consumer owns (Java's impl/consumer/RebalanceImpl).

In clustering, every consumer of a group lists the topic's queues and the
group's client ids (from a broker), sorts both and runs the allocation
strategy; in broadcasting, every consumer takes every queue. The difference
between the result and the queues held now is applied: queues no longer ours
are dropped, their offsets committed first (and, for orderly consumers, their
broker locks released), and new queues get a process queue and an offset to
start from. Orderly consumers take a queue only after locking it on its broker.
"""
from __future__ import annotations

import abc
import asyncio
import logging
from typing import TYPE_CHECKING, Iterable

from rocketmq_py.client.consumer.offset_store import NO_OFFSET, ReadOffsetType
from rocketmq_py.client.consumer.process_queue import ProcessQueue
from rocketmq_py.client.consumer.rebalance_listener import notify
from rocketmq_py.common.clock import now_ms
from rocketmq_py.common.heartbeat_consumer import ConsumeFromWhere, ConsumeType, MessageModel
from rocketmq_py.common.topic import RETRY_GROUP_TOPIC_PREFIX
from rocketmq_py.errors import ClientError, RocketMQError

if TYPE_CHECKING:
    from rocketmq_py.client.consumer.allocate import AllocateMessageQueueStrategy
    from rocketmq_py.client.consumer.config import ConsumerConfig
    from rocketmq_py.client.consumer.offset_store import OffsetStore
    from rocketmq_py.client.consumer.rebalance_listener import RebalanceListener
    from rocketmq_py.client.instance import MQClientInstance
    from rocketmq_py.common.filter import SubscriptionData
    from rocketmq_py.common.message_queue import MessageQueue

_log = logging.getLogger(__name__)

LOCK_TIMEOUT_MS = 1000


class RebalanceImpl(abc.ABC):
    """The queue table of one consumer and the rebalance that keeps it right."""

    consume_type: ConsumeType = ConsumeType.CONSUME_PASSIVELY

    def __init__(self, config: ConsumerConfig, instance: "MQClientInstance", strategy: AllocateMessageQueueStrategy,
                 offset_store: OffsetStore) -> None:
        self.config = config
        self.group = config.group
        self.message_model = config.message_model
        self.instance = instance
        self.strategy = strategy
        self.offset_store = offset_store
        self.subscription_inner: dict[str, SubscriptionData] = {}
        self.topic_subscribe_info: dict[str, set[MessageQueue]] = {}
        self.process_queue_table: dict[MessageQueue, ProcessQueue] = {}
        self._lock = asyncio.Lock()
        self.stopped = False
        self.lock_failed = False
        #: Queues a lock was asked for: at shutdown they are all released, also one whose answer was lost.
        self.lock_requested: set[MessageQueue] = set()
        #: The application's listener of queue changes (the consumer's ``rebalance_listener``).
        self.listener: RebalanceListener | None = None

    # --- the rebalance -------------------------------------------------------------------------

    async def do_rebalance(self, is_order: bool) -> bool:
        """Rebalance every subscribed topic; True when a queue could not be locked yet (try again soon)."""
        async with self._lock:
            if self.stopped:
                return False
            self.lock_failed = False
            for topic in list(self.subscription_inner):
                try:
                    await self._rebalance_by_topic(topic, is_order)
                except (RocketMQError, OSError) as error:
                    if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                        _log.warning("rebalance of %s for %s failed: %s", topic, self.group, error)
            await self._truncate_queues_not_my_topic()
            return self.lock_failed

    async def allocated_queues(self, topic: str) -> set[MessageQueue] | None:
        """The queues of ``topic`` this consumer should hold now, or None when that cannot be known yet."""
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.client.consumer.brokers import subscribe_queues

        mq_set = self.topic_subscribe_info.get(topic)
        if mq_set is None:
            # Not known yet (a retry topic appears with the group's first heartbeat): ask once now rather
            # than wait for the next route poll.
            await self.instance.update_topic_route(topic)
            route = self.instance.topic_routes.get(topic)
            if route is not None:
                mq_set = self.topic_subscribe_info[topic] = subscribe_queues(topic, route)
        if mq_set is None:
            if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                _log.warning("rebalance of %s: no route for topic %s yet", self.group, topic)
            return None
        if self.message_model is MessageModel.BROADCASTING:
            return set(mq_set)
        cid_all = await self.find_consumer_ids(topic)
        if not cid_all:
            _log.warning("rebalance of %s: no consumer ids for topic %s", self.group, topic)
            return None
        try:
            allocated = self.strategy.allocate(self.group, self.instance.client_id, sorted(mq_set), sorted(cid_all))
        except Exception:
            _log.error("allocation strategy %s failed for %s", self.strategy.name, self.group, exc_info=True)
            return None
        return set(allocated or ())

    async def _rebalance_by_topic(self, topic: str, is_order: bool) -> None:
        divided = await self.allocated_queues(topic)
        if divided is None:
            return
        before = self._queues_of(topic)
        changed, started = await self.update_process_queue_table(topic, divided, is_order)
        after = self._queues_of(topic)
        await notify(self.listener, self.group, before - after, after - before)
        if changed:
            _log.info("rebalance of %s changed %s: %d queue(s) now %s", self.group, topic, len(divided),
                      sorted(divided))
            # Before the first pulls: the broker must know the new subscription version first.
            await self.message_queue_changed(topic, set(self.topic_subscribe_info.get(topic, ())), divided)
        if started:
            self.dispatch_pull_requests(started)

    def _queues_of(self, topic: str) -> set[MessageQueue]:
        return {queue for queue in self.process_queue_table if queue.topic == topic}

    async def find_consumer_ids(self, topic: str) -> list[str] | None:
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.client.consumer.brokers import any_broker_of_topic

        addr = any_broker_of_topic(self.instance, topic)
        if addr is None:
            await self.instance.update_topic_route(topic)
            addr = any_broker_of_topic(self.instance, topic)
        if addr is None:
            return None
        try:
            return await self.instance.api.get_consumer_id_list(addr, self.group, self.instance.config.mq_client_api_timeout)
        except (RocketMQError, OSError) as error:
            _log.warning("getting the consumer ids of %s from %s failed: %s", self.group, addr, error)
            return None

    async def update_process_queue_table(self, topic: str, mq_set: set[MessageQueue], is_order: bool
                                         ) -> tuple[bool, list[tuple[MessageQueue, ProcessQueue, int]]]:
        """Apply ``mq_set`` to the queues of ``topic``: whether something changed, and the new queues with the
        offsets to pull them from (for :meth:`dispatch_pull_requests`)."""
        changed = False
        for queue, pq in list(self.process_queue_table.items()):
            if queue.topic != topic:
                continue
            if queue not in mq_set:
                pq.dropped = True
                if await self.remove_unnecessary_message_queue(queue, pq):
                    self.process_queue_table.pop(queue, None)
                    changed = True
                    _log.info("%s dropped %s: it is not ours any more", self.group, queue)
            elif pq.is_pull_expired() and self.consume_type is ConsumeType.CONSUME_PASSIVELY:
                pq.dropped = True
                if await self.remove_unnecessary_message_queue(queue, pq):
                    self.process_queue_table.pop(queue, None)
                    changed = True
                    _log.warning("%s dropped %s: no pull for a long time", self.group, queue)
        started: list[tuple[MessageQueue, ProcessQueue, int]] = []
        for queue in sorted(mq_set):
            if queue in self.process_queue_table:
                continue
            if is_order and not await self.lock(queue):
                _log.info("%s could not lock %s yet (another consumer releases it); trying again soon",
                          self.group, queue)
                self.lock_failed = True
                continue
            self.remove_dirty_offset(queue)
            pq = ProcessQueue()
            pq.locked = True
            try:
                next_offset = await self.compute_pull_from_where(queue)
            except (RocketMQError, OSError) as error:
                _log.warning("%s cannot compute where to pull %s from: %s", self.group, queue, error)
                continue
            if next_offset < 0:
                continue
            self.process_queue_table[queue] = pq
            started.append((queue, pq, next_offset))
            changed = True
        return changed, started

    async def _truncate_queues_not_my_topic(self) -> None:
        revoked: set[MessageQueue] = set()
        for queue in list(self.process_queue_table):
            if queue.topic not in self.subscription_inner:
                pq = self.process_queue_table.pop(queue)
                pq.dropped = True
                revoked.add(queue)
                _log.info("%s dropped %s: the topic is not subscribed any more", self.group, queue)
        await notify(self.listener, self.group, revoked, set())

    async def remove_process_queue(self, queue: MessageQueue) -> None:
        pq = self.process_queue_table.pop(queue, None)
        if pq is not None:
            pq.dropped = True
            await self.remove_unnecessary_message_queue(queue, pq)

    async def stop(self) -> None:
        """No rebalance after this; returns once one in progress has finished."""
        self.stopped = True
        async with self._lock:
            pass

    def destroy(self) -> None:
        for pq in self.process_queue_table.values():
            pq.dropped = True
        self.process_queue_table.clear()

    # --- where to start --------------------------------------------------------------------------

    async def compute_pull_from_where(self, queue: MessageQueue,
                                      kind: ReadOffsetType = ReadOffsetType.READ_FROM_STORE) -> int:
        """The offset to start pulling ``queue`` at: the committed one, else as ``consume_from_where`` says."""
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.client.consumer.brokers import master_for_queue
        from rocketmq_py.client.consumer.config import parse_consume_timestamp

        last = await self.offset_store.read_offset(queue, kind)
        if last >= 0:
            return last
        if last != NO_OFFSET:
            raise ClientError(f"the committed offset of {queue} for {self.group} could not be read from the broker")
        where = self.config.consume_from_where
        is_retry = queue.topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
        if where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
            return 0
        if where is ConsumeFromWhere.CONSUME_FROM_TIMESTAMP:
            addr = await master_for_queue(self.instance, queue)
            if is_retry:
                return await self.instance.api.get_max_offset(addr, queue)
            timestamp = parse_consume_timestamp(self.config.consume_timestamp)
            return await self.instance.api.search_offset(addr, queue, timestamp)
        if is_retry:
            return 0
        addr = await master_for_queue(self.instance, queue)
        return await self.instance.api.get_max_offset(addr, queue)

    # --- broker locks (orderly) ------------------------------------------------------------------

    def _queues_by_broker(self, also: set[MessageQueue] | None = None) -> dict[str, set[MessageQueue]]:
        result: dict[str, set[MessageQueue]] = {}
        for queue in set(self.process_queue_table) | (also or set()):
            result.setdefault(queue.broker_name, set()).add(queue)
        return result

    def _master(self, broker_name: str) -> str | None:
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.client.consumer.brokers import find_broker_in_subscribe
        from rocketmq_py.common.route import MASTER_ID

        found = find_broker_in_subscribe(self.instance, broker_name, MASTER_ID, True)
        return found.addr if found is not None else None

    async def lock(self, queue: MessageQueue) -> bool:
        addr = self._master(queue.broker_name)
        if addr is None:
            return False
        self.lock_requested.add(queue)
        try:
            locked = await self.instance.api.lock_batch_mq(addr, self.group, self.instance.client_id, [queue],
                                                           LOCK_TIMEOUT_MS)
        except (RocketMQError, OSError) as error:
            _log.warning("locking %s for %s failed: %s", queue, self.group, error)
            return False
        for locked_queue in locked:
            pq = self.process_queue_table.get(locked_queue)
            if pq is not None:
                pq.locked = True
                pq.last_lock_timestamp = now_ms()
        return queue in locked

    async def lock_all(self) -> None:
        for broker_name, queues in self._queues_by_broker().items():
            addr = self._master(broker_name)
            if addr is None or not queues:
                continue
            try:
                locked = await self.instance.api.lock_batch_mq(addr, self.group, self.instance.client_id, queues,
                                                               LOCK_TIMEOUT_MS)
            except (RocketMQError, OSError) as error:
                _log.warning("renewing the locks of %s on %s failed: %s", self.group, broker_name, error)
                continue
            for queue in queues:
                pq = self.process_queue_table.get(queue)
                if pq is None:
                    continue
                if queue in locked:
                    pq.locked = True
                    pq.last_lock_timestamp = now_ms()
                else:
                    pq.locked = False

    async def unlock(self, queue: MessageQueue, oneway: bool) -> None:
        addr = self._master(queue.broker_name)
        if addr is None:
            return
        try:
            await self.instance.api.unlock_batch_mq(addr, self.group, self.instance.client_id, [queue],
                                                    LOCK_TIMEOUT_MS, oneway)
        except (RocketMQError, OSError) as error:
            _log.warning("unlocking %s for %s failed: %s", queue, self.group, error)
        else:
            self.lock_requested.discard(queue)

    async def unlock_all(self, oneway: bool) -> None:
        for broker_name, queues in self._queues_by_broker(self.lock_requested).items():
            addr = self._master(broker_name)
            if addr is None or not queues:
                continue
            try:
                await self.instance.api.unlock_batch_mq(addr, self.group, self.instance.client_id, queues,
                                                        LOCK_TIMEOUT_MS, oneway)
            except (RocketMQError, OSError) as error:
                _log.warning("unlocking the queues of %s on %s failed: %s", self.group, broker_name, error)
                continue
            self.lock_requested -= queues
            for queue in queues:
                pq = self.process_queue_table.get(queue)
                if pq is not None:
                    pq.locked = False

    # --- what the consumer kind decides ----------------------------------------------------------

    @abc.abstractmethod
    async def remove_unnecessary_message_queue(self, queue: MessageQueue, pq: ProcessQueue) -> bool:
        """Commit and forget what belongs to a dropped queue; False to keep it in the table for now."""

    def remove_dirty_offset(self, queue: MessageQueue) -> None:
        self.offset_store.remove_offset(queue)

    @abc.abstractmethod
    def dispatch_pull_requests(self, started: Iterable[tuple[MessageQueue, ProcessQueue, int]]) -> None:
        """Start pulling the new queues."""

    @abc.abstractmethod
    async def message_queue_changed(self, topic: str, mq_all: set[MessageQueue], mq_divided: set[MessageQueue]) -> None:
        """The queues of ``topic`` changed."""
