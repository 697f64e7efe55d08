"""What every consumer does for its client instance (Java's MQConsumerInner, plus the instance's rebalance
service and offset persisting task, which run here per consumer).

A consumer registers with the client instance of its client id; the instance
puts :meth:`ConsumerMember.consumer_data` in its heartbeats, keeps the routes
of :meth:`ConsumerMember.topics` fresh, and passes the broker's requests on.
The consumer itself rebalances every 20 s and at once when a broker says the
group's consumers changed, and persists its offsets every
``persist_consumer_offset_interval`` (first after 10 s).
"""
from __future__ import annotations

import asyncio
import enum
import logging
import os
from typing import TYPE_CHECKING, Any, Coroutine, Iterable

from rocketmq_py.client.consumer.offset_store import LocalFileOffsetStore, ReadOffsetType, RemoteBrokerOffsetStore
from rocketmq_py.client.consumer.stats import ConsumerStats
from rocketmq_py.client.mq_admin import MQAdminMethods
from rocketmq_py.client.producer.core import ServiceState
from rocketmq_py.common.clock import now_ms
from rocketmq_py.common.codes import RequestCode
from rocketmq_py.common.heartbeat_consumer import ConsumeType, ConsumerData, MessageModel
from rocketmq_py.errors import ClientError, ClientStateError, RocketMQError

if TYPE_CHECKING:
    from rocketmq_py.client.consumer.config import ConsumerConfig
    from rocketmq_py.client.consumer.offset_store import OffsetStore
    from rocketmq_py.client.consumer.process_queue import ProcessQueue
    from rocketmq_py.client.instance import MQClientInstance
    from rocketmq_py.client.mq_admin_impl import MQAdminImpl
    from rocketmq_py.common.consumer_body import ConsumerRunningInfo
    from rocketmq_py.common.filter import SubscriptionData
    from rocketmq_py.common.message_queue import MessageQueue
    from rocketmq_py.common.route import TopicRouteData

__all__ = ["ConsumerMember", "ServiceState", "REBALANCE_INTERVAL_S"]

_log = logging.getLogger(__name__)

#: Java's rocketmq.client.rebalance.waitInterval; ROCKETMQ_PY_REBALANCE_INTERVAL_MS overrides it.
REBALANCE_INTERVAL_S = int(os.environ.get("ROCKETMQ_PY_REBALANCE_INTERVAL_MS", "20000")) / 1000.0
INITIAL_PERSIST_DELAY_S = 10.0
LOCK_RETRY_INTERVAL_S = 1.0
LOCK_RETRIES = 10
CLIENT_VERSION = "V4_9_8"


async def wait_event(event: asyncio.Event, timeout_s: float) -> bool:
    """Wait up to ``timeout_s`` for ``event``; True when it is set.

    Not ``asyncio.wait_for(event.wait(), timeout_s)``: before Python 3.12 that returns normally when it is
    cancelled just after the event was set (CPython gh-86296), so the cancellation is lost, and a loop that
    waits this way goes on for ever while whoever cancelled it to stop it waits for it.
    """
    if event.is_set():
        return True
    waiter = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait((waiter,), timeout=timeout_s)
    finally:
        waiter.cancel()
    return event.is_set()


#: How long a shutdown waits for the tasks it cancelled before it goes on without the ones still running.
STOP_TIMEOUT_S = 10.0


async def cancel_and_wait(tasks: Iterable[asyncio.Task[Any]], what: str) -> None:
    """Cancel ``tasks`` and wait until they end; one still running after :data:`STOP_TIMEOUT_S` (a bug: it
    ignored its cancellation) is logged with what it awaits and left behind, rather than hanging the shutdown
    for ever."""
    tasks = list(tasks)
    if not tasks:
        return
    timeout_s = STOP_TIMEOUT_S
    for task in tasks:
        task.cancel()
    _, running = await asyncio.wait(tasks, timeout=timeout_s)
    for task in tasks:
        if task.done() and not task.cancelled():
            task.exception()  # seen: the task ended, which is all that matters here
    for task in running:
        _log.warning("%s %s did not stop within %.0f s of being cancelled; shutdown goes on without it (it "
                     "awaits %s)", what, task.get_name(), timeout_s, _awaiting(task))


def _awaiting(task: asyncio.Task[Any]) -> str:
    """Where ``task`` waits: its chain of awaits, outermost first."""
    places: list[str] = []
    coro: Any = task.get_coro()
    while coro is not None and len(places) < 32:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is not None:
            places.append(f"{frame.f_code.co_name} ({os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno})")
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return " -> ".join(places) or "?"


class ConsumerMember(MQAdminMethods):
    """The part of a consumer the client instance and the admin requests see."""

    consume_type: ConsumeType = ConsumeType.CONSUME_PASSIVELY

    def __init__(self, config: ConsumerConfig) -> None:
        self.config = config
        self.state = ServiceState.CREATE_JUST
        self.instance: "MQClientInstance | None" = None
        self.offset_store: OffsetStore | None = None
        self.stats = ConsumerStats()
        self.start_timestamp = now_ms()
        self._rebalance_wakeup: asyncio.Event | None = None
        self._background: list[asyncio.Task[None]] = []
        #: Short tasks started by the consumer's plain methods (subscribe) and its pull tasks.
        self._side_tasks: set[asyncio.Task[Any]] = set()

    @property
    def group(self) -> str:
        """The consumer group as sent on the wire (with the namespace, if any)."""
        return self.config.group

    # --- registration -----------------------------------------------------------------------------

    def _register(self, instance: "MQClientInstance") -> None:
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.client.consumer.admin import register_consumer_processors

        if not instance.register_consumer(self.group, self):
            self.state = ServiceState.CREATE_JUST
            raise ClientError(
                f"the consumer group {self.group!r} was already started in client {instance.client_id}: "
                "give this consumer another group or another instance_name"
            )
        if instance.processors.get(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED) is None:
            register_consumer_processors(instance)
        self.instance = instance

    async def _unregister(self) -> None:
        if self.instance is not None:
            await self.instance.unregister_consumer(self.group)

    def _make_offset_store(self) -> OffsetStore:
        """Broadcasting keeps offsets in Java's local file; clustering keeps them on the brokers."""
        instance = self.instance_or_fail()
        if self.config.message_model is MessageModel.BROADCASTING:
            return LocalFileOffsetStore(instance.client_id, self.group)
        return RemoteBrokerOffsetStore(instance, self.group)

    def instance_or_fail(self) -> "MQClientInstance":
        """The client instance; ClientStateError when the consumer is not started."""
        if self.instance is None:
            raise ClientStateError("the consumer is not started: call start() first")
        return self.instance

    def _mq_admin(self) -> MQAdminImpl:
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.client.mq_admin_impl import MQAdminImpl

        return MQAdminImpl(self.instance_or_fail(), self.config)

    def _check_running(self) -> None:
        if self.state is not ServiceState.RUNNING:
            raise ClientStateError(
                f"the consumer is not running (state {self.state.value}): call start() first, "
                "or use it as a context manager"
            )

    # --- background tasks -------------------------------------------------------------------------

    def _start_background(self, persist_interval_ms: int) -> None:
        loop = asyncio.get_running_loop()
        self._rebalance_wakeup = asyncio.Event()
        self._background = [
            loop.create_task(self._rebalance_loop(), name=f"rebalance {self.group}"),
            loop.create_task(self._persist_loop(persist_interval_ms), name=f"persist offsets {self.group}"),
        ]

    async def _stop_background(self) -> None:
        tasks, self._background = self._background, []
        await cancel_and_wait([*tasks, *self._side_tasks], f"{self.group}: background task")

    def _spawn(self, coro: Coroutine[Any, Any, None], what: str) -> asyncio.Task[None]:
        """Run ``coro`` beside the consumer until it ends or the consumer shuts down; a failure is logged."""
        task = asyncio.get_running_loop().create_task(coro, name=f"{what} ({self.group})")
        self._side_tasks.add(task)
        task.add_done_callback(self._side_task_done)
        return task

    def _side_task_done(self, task: asyncio.Task[None]) -> None:
        self._side_tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            _log.warning("%s failed: %s", task.get_name(), task.exception())

    def _announce_subscriptions(self) -> asyncio.Task[None]:
        """After a subscription change on a running consumer: fetch the new routes, tell every broker (a
        heartbeat) and rebalance, in a task, so that subscribe() stays a plain method."""
        return self._spawn(self._after_subscription_change(), "announcing the subscriptions")

    async def _after_subscription_change(self) -> None:
        await self._refresh_routes()
        await self.instance_or_fail().send_heartbeat_to_all_brokers()
        self.rebalance_soon()

    def rebalance_soon(self) -> None:
        """Rebalance now instead of at the next period (a broker's consumer-ids-changed notice)."""
        if self._rebalance_wakeup is not None:
            self._rebalance_wakeup.set()

    async def _rebalance_loop(self) -> None:
        assert self._rebalance_wakeup is not None
        wait_s = REBALANCE_INTERVAL_S
        quick_retries = 0
        while True:
            await wait_event(self._rebalance_wakeup, wait_s)
            self._rebalance_wakeup.clear()
            wait_s = REBALANCE_INTERVAL_S
            if self.state is not ServiceState.RUNNING:
                return  # shut down (the loop starts once the consumer runs)
            try:
                retry_soon = await self.do_rebalance()
            except asyncio.CancelledError:
                raise
            except Exception:
                _log.error("rebalance of %s failed", self.group, exc_info=True)
                continue
            # A queue another consumer is still releasing: look again in a second rather than in 20 s.
            quick_retries = quick_retries + 1 if retry_soon else 0
            if retry_soon and quick_retries <= LOCK_RETRIES:
                wait_s = LOCK_RETRY_INTERVAL_S

    async def _persist_loop(self, interval_ms: int) -> None:
        await asyncio.sleep(INITIAL_PERSIST_DELAY_S)
        while True:
            try:
                await self.persist_consumer_offset()
            except asyncio.CancelledError:
                raise
            except Exception:
                _log.error("persisting the offsets of %s failed", self.group, exc_info=True)
            await asyncio.sleep(interval_ms / 1000.0)

    async def persist_consumer_offset(self, force: bool = False) -> None:
        """Write the offsets of the queues held now (oneway, as Java; ``force`` waits for the answers)."""
        if self.offset_store is None:
            return
        await self.offset_store.persist_all(self.queues_to_persist(), oneway=not force)

    async def _refresh_routes(self) -> None:
        """Fetch the routes of the subscribed topics now and learn their queues."""
        instance = self.instance_or_fail()
        for subscription in self.subscriptions():
            try:
                await instance.update_topic_route(subscription.topic)
            except (RocketMQError, OSError) as error:
                _log.warning("the route of %s could not be fetched: %s", subscription.topic, error)
            route = instance.topic_routes.get(subscription.topic)
            if route is not None:
                self.on_route_changed(subscription.topic, route)

    # --- what the client instance asks ------------------------------------------------------------

    def topics(self) -> set[str]:
        """The subscribed topics (asked by the client instance for route updates)."""
        return {subscription.topic for subscription in self.subscriptions()}

    def consumer_data(self) -> dict[str, Any]:
        """This consumer's entry of a heartbeat."""
        return ConsumerData(
            self.group, self.consume_type, self.config.message_model, self.config.consume_from_where,
            self.subscriptions(), self.config.unit_mode,
        ).to_json()

    def subscriptions(self) -> list[SubscriptionData]:
        raise NotImplementedError

    def on_route_changed(self, topic: str, route: TopicRouteData) -> None:
        raise NotImplementedError

    async def do_rebalance(self) -> bool:
        """True when it should run again soon (a queue lock is still held by another consumer)."""
        raise NotImplementedError

    def queues_to_persist(self) -> set[MessageQueue]:
        raise NotImplementedError

    def running_info_process_queues(self) -> dict[MessageQueue, ProcessQueue]:
        raise NotImplementedError

    def running_info_properties(self) -> dict[str, str]:
        """The consumer's settings with Java's names, as MixAll.object2Properties lists them."""
        properties = {}
        for name, value in vars(self.config).items():
            if name in ("access_key", "secret_key", "security_token") or value is None:
                continue
            java_name = name.split("_")[0] + "".join(part.title() for part in name.split("_")[1:])
            if isinstance(value, bool):
                properties[java_name] = "true" if value else "false"
            elif isinstance(value, enum.Enum):
                properties[java_name] = str(value.value)
            elif isinstance(value, (str, int, float)):
                properties[java_name] = str(value)
            else:
                properties[java_name] = getattr(value, "name", None) or type(value).__name__
        properties["consumerGroup"] = self.group
        return properties

    async def consumer_running_info(self) -> ConsumerRunningInfo:
        """GET_CONSUMER_RUNNING_INFO's answer: settings, subscriptions, queues and statistics."""
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.common import consumer_body
        from rocketmq_py.common.consumer_body import ConsumerRunningInfo, ProcessQueueInfo

        info = ConsumerRunningInfo()
        info.properties.update(self.running_info_properties())
        info.properties[consumer_body.PROP_CONSUMER_START_TIMESTAMP] = str(self.start_timestamp)
        info.properties[consumer_body.PROP_CONSUME_TYPE] = self.consume_type.value
        info.properties[consumer_body.PROP_CLIENT_VERSION] = CLIENT_VERSION
        info.properties[consumer_body.PROP_NAMESERVER_ADDR] = "".join(
            f"{addr};" for addr in self.config.namesrv_addresses()
        )
        subscriptions = self.subscriptions()
        info.subscription_set = list(subscriptions)
        for queue, pq in self.running_info_process_queues().items():
            queue_info = ProcessQueueInfo()
            if self.offset_store is not None:
                queue_info.commit_offset = await self.offset_store.read_offset(
                    queue, ReadOffsetType.MEMORY_FIRST_THEN_STORE)
            pq.fill_info(queue_info)
            info.mq_table[queue] = queue_info
        for subscription in subscriptions:
            info.status_table[subscription.topic] = self.stats.status(subscription.topic)
        return info

    def consumer_status(self, topic: str) -> dict[MessageQueue, int]:
        """GET_CONSUMER_STATUS_FROM_CLIENT's answer: the offsets in memory of ``topic``'s queues."""
        if self.offset_store is None:
            return {}
        return self.offset_store.clone_offset_table(topic)

    async def reset_offset(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        """RESET_CONSUMER_CLIENT_OFFSET: only push consumers act on it, as in Java."""

    async def consume_message_directly(self, message: Any, broker_name: str | None) -> Any:
        """CONSUME_MESSAGE_DIRECTLY: only push consumers act on it, as in Java."""
        return None

    @staticmethod
    def subscribe_queues(topic: str, route: TopicRouteData) -> set[MessageQueue]:
        """The readable queues of ``topic`` in ``route``."""
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.client.consumer.brokers import subscribe_queues

        return subscribe_queues(topic, route)
