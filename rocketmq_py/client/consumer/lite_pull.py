"""The asyncio lite pull consumer (Java's DefaultLitePullConsumer and DefaultLitePullConsumerImpl).

The application calls :meth:`AsyncLitePullConsumer.poll`; behind it one pull
task per queue keeps a cache of pulled messages filled (long polling, with
the flow control of Java's thresholds). Queues come from :meth:`assign`
(fixed queues) or :meth:`subscribe` (the group's rebalance); these, and
:meth:`seek`, are plain methods as aiokafka's are, and what needs a broker
(a seek's range check) happens in the queue's pull task. The consumed
offset of a queue moves when :meth:`poll` hands its messages out; offsets
are committed to the store every ``auto_commit_interval_millis`` when
``auto_commit`` is on, or by :meth:`commit`, and persisted to the broker
every ``persist_consumer_offset_interval``, on drop and at shutdown.
"""
from __future__ import annotations

import asyncio
import collections
import enum
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from rocketmq_py.client.consumer.allocate import resolve_strategy
from rocketmq_py.client.failure_log import FailureLog
from rocketmq_py.client.consumer.config import LitePullConsumerConfig, make_config
from rocketmq_py.client.consumer.former_coroutine import FormerCoroutine
from rocketmq_py.client.consumer.offset_store import OFFSET_READ_FAILED, ReadOffsetType
from rocketmq_py.client.consumer.process_queue import ProcessQueue
from rocketmq_py.client.consumer.rebalance import RebalanceImpl
from rocketmq_py.client.consumer.rebalance_listener import RebalanceListener
from rocketmq_py.client.consumer.service import ConsumerMember, ServiceState, cancel_and_wait, wait_event
from rocketmq_py.common import validators
from rocketmq_py.common.codes import ResponseCode
from rocketmq_py.common.heartbeat_consumer import ConsumeType, MessageModel
from rocketmq_py.common.message_queue import MessageQueue
from rocketmq_py.errors import (
    BrokerResponseError,
    ClientError,
    ClientStateError,
    InvalidArgumentError,
    InvalidSelectorError,
    RocketMQError,
)

if TYPE_CHECKING:
    from rocketmq_py.client.consumer.pull import PullAPI
    from rocketmq_py.common.filter import MessageSelector, SubscriptionData
    from rocketmq_py.common.message import MessageExt
    from rocketmq_py.common.route import TopicRouteData

_log = logging.getLogger(__name__)

FLOW_CONTROL_DELAY_S = 0.05
BROKER_FLOW_CONTROL_DELAY_S = 0.02
PAUSE_DELAY_S = 1.0
EXCEPTION_DELAY_S = 3.0


class SubscriptionType(enum.Enum):
    NONE = "NONE"
    SUBSCRIBE = "SUBSCRIBE"
    ASSIGN = "ASSIGN"


@dataclass
class _Seek:
    """A seek its queue's pull task has not checked yet against the queue's min and max offsets."""

    offset: int
    #: Set once the seek took effect, was refused (``error``), or was overtaken by another seek or a drop.
    settled: asyncio.Event = field(default_factory=asyncio.Event)
    error: InvalidArgumentError | None = None
    #: The error was raised to whoever awaited the seek, so poll() does not raise it again.
    reported: bool = False


@dataclass
class _QueueState:
    """Java's AssignedMessageQueue.MessageQueueState."""

    process_queue: ProcessQueue
    paused: bool = False
    pull_offset: int = -1
    consume_offset: int = -1
    seek: _Seek | None = None

    def settle_seek(self) -> None:
        """Forget the pending seek (overtaken or dropped): whoever awaits it stops waiting."""
        if self.seek is not None:
            self.seek.settled.set()
            self.seek = None


@dataclass
class _ConsumeRequest:
    messages: list[MessageExt]
    queue: MessageQueue
    process_queue: ProcessQueue


class _LitePullRebalance(RebalanceImpl):
    consume_type = ConsumeType.CONSUME_ACTIVELY

    def __init__(self, consumer: "AsyncLitePullConsumer", *args: Any) -> None:
        super().__init__(*args)
        self.consumer = consumer

    async def compute_pull_from_where(self, queue: MessageQueue,
                                      kind: ReadOffsetType = ReadOffsetType.MEMORY_FIRST_THEN_STORE) -> int:
        return await super().compute_pull_from_where(queue, ReadOffsetType.MEMORY_FIRST_THEN_STORE)

    async def remove_unnecessary_message_queue(self, queue: MessageQueue, pq: ProcessQueue) -> bool:
        await self.offset_store.persist(queue)
        self.offset_store.remove_offset(queue)
        return True

    def dispatch_pull_requests(self, started: Iterable[tuple[MessageQueue, ProcessQueue, int]]) -> None:
        """The pull tasks start from :meth:`message_queue_changed`."""

    async def message_queue_changed(self, topic: str, mq_all: set[MessageQueue],
                                    mq_divided: set[MessageQueue]) -> None:
        if self.message_model is MessageModel.BROADCASTING:
            self.consumer._update_assigned(topic, mq_all)
        else:
            self.consumer._update_assigned(topic, mq_divided)


class AsyncLitePullConsumer(ConsumerMember):
    """A lite pull consumer on the running asyncio loop.

    ``AsyncLitePullConsumer("group", namesrv_addr="127.0.0.1:9876")``; any
    :class:`LitePullConsumerConfig` field can be given as a keyword. Call
    :meth:`subscribe` or :meth:`assign`, then :meth:`start`, then
    :meth:`poll` in a loop; :meth:`shutdown` at the end (or ``async with``).
    """

    consume_type = ConsumeType.CONSUME_ACTIVELY

    def __init__(self, consumer_group: str | None = None, *, config: LitePullConsumerConfig | None = None,
                 rebalance_listener: RebalanceListener | None = None, **options: Any) -> None:
        super().__init__(make_config(LitePullConsumerConfig, consumer_group, config, options))
        if rebalance_listener is not None and not isinstance(rebalance_listener, RebalanceListener):
            raise InvalidArgumentError(
                f"rebalance_listener must be a RebalanceListener, not {type(rebalance_listener).__name__}")
        #: Told of the queues assigned and revoked by each rebalance (not used with assign()).
        self.rebalance_listener = rebalance_listener
        self.config: LitePullConsumerConfig
        self.subscription_type = SubscriptionType.NONE
        self._pending_subscriptions: dict[str, SubscriptionData] = {}
        self._assign_expressions: dict[str, str] = {}
        self._assigned: dict[MessageQueue, _QueueState] = {}
        self._tasks: dict[MessageQueue, asyncio.Task[None]] = {}
        self._cache: collections.deque[_ConsumeRequest] = collections.deque()
        self._cache_ready = asyncio.Event()
        #: Seeks their pull task refused (offset out of range), for the next poll() to raise.
        self._refused_seeks: collections.deque[_Seek] = collections.deque()
        #: The pull whose messages ``async for`` is handing out one by one.
        self._iterated: _ConsumeRequest | None = None
        #: Failed pulls, logged once per broker and interval with a count.
        self._pull_failures = FailureLog(_log, f"pulls of group {self.config.consumer_group} from broker")
        self._next_auto_commit = -1.0
        self.rebalance: _LitePullRebalance | None = None
        self.pull_api: PullAPI | None = None

    # --- subscriptions ----------------------------------------------------------------------------

    def _set_subscription_type(self, kind: SubscriptionType) -> None:
        if self.subscription_type is SubscriptionType.NONE:
            self.subscription_type = kind
        elif self.subscription_type is not kind:
            raise ClientStateError("subscribe and assign are mutually exclusive: use one of them per consumer")

    def subscribe(self, topic: str, selector: MessageSelector | str | None = "*") -> None:
        """Consume ``topic`` with the group's rebalance; ``selector`` is a tag expression (``"*"``, ``"TagA ||
        TagB"``) or a :class:`MessageSelector`. A plain method, as aiokafka's: on a running consumer the
        brokers hear of the subscription from a task of its own."""
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.common.filter import build_subscription

        validators.check_topic(topic)
        subscription = build_subscription(self.config.with_namespace(topic), selector)
        self._set_subscription_type(SubscriptionType.SUBSCRIBE)
        if self.rebalance is None:
            self._pending_subscriptions[subscription.topic] = subscription
            return FormerCoroutine("AsyncLitePullConsumer.subscribe")  # type: ignore[return-value]
        self.rebalance.subscription_inner[subscription.topic] = subscription
        announced = self._announce_subscriptions()
        return FormerCoroutine(  # type: ignore[return-value]
            "AsyncLitePullConsumer.subscribe", lambda: asyncio.shield(announced))

    def unsubscribe(self, topic: str) -> None:
        """Stop consuming ``topic`` (its queues are dropped)."""
        topic = self.config.with_namespace(topic)
        self._pending_subscriptions.pop(topic, None)
        if self.rebalance is not None:
            self.rebalance.subscription_inner.pop(topic, None)
        for queue in [q for q in self._assigned if q.topic == topic]:
            self._drop_queue(queue)

    def set_sub_expression_for_assign(self, topic: str, expression: str) -> None:
        """The tag expression for assigned queues of ``topic`` (before :meth:`start`)."""
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.common.filter import build_subscription_data

        if not expression or not expression.strip():
            raise InvalidSelectorError("the sub expression for assign cannot be empty: use '*' for all tags")
        if self.state is not ServiceState.CREATE_JUST:
            raise ClientStateError("set_sub_expression_for_assign can only be called before start()")
        build_subscription_data(topic, expression)
        self._set_subscription_type(SubscriptionType.ASSIGN)
        self._assign_expressions[self.config.with_namespace(topic)] = expression

    def assign(self, queues: Iterable[MessageQueue]) -> None:
        """Consume exactly these queues (no rebalance)."""
        queues = set(queues)
        if not queues:
            raise InvalidArgumentError("assign needs at least one message queue")
        for queue in queues:
            if not isinstance(queue, MessageQueue):
                raise InvalidArgumentError(f"assign takes MessageQueue objects, not {type(queue).__name__}")
        self._set_subscription_type(SubscriptionType.ASSIGN)
        for queue in [q for q in self._assigned if q not in queues]:
            self._drop_queue(queue)
        for queue in queues:
            self._assigned.setdefault(queue, _QueueState(ProcessQueue()))
        if self.state is ServiceState.RUNNING:
            self._start_pull_tasks(queues)

    def assignment(self) -> set[MessageQueue]:
        """The queues this consumer pulls now."""
        return set(self._assigned)

    def _update_assigned(self, topic: str, queues: set[MessageQueue]) -> None:
        for queue in [q for q in self._assigned if q.topic == topic and q not in queues]:
            self._drop_queue(queue)
        assert self.rebalance is not None
        for queue in queues:
            if queue not in self._assigned:
                pq = self.rebalance.process_queue_table.get(queue) or ProcessQueue()
                self._assigned[queue] = _QueueState(pq)
        self._start_pull_tasks(queues)

    def _drop_queue(self, queue: MessageQueue) -> None:
        state = self._assigned.pop(queue, None)
        if state is not None:
            state.process_queue.dropped = True
            state.settle_seek()
        task = self._tasks.pop(queue, None)
        if task is not None:
            task.cancel()

    # --- lifecycle --------------------------------------------------------------------------------

    async def start(self) -> None:
        """Validate the settings, join the client instance and start pulling; a consumer starts once."""
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.client.consumer.pull import PullAPI
        from rocketmq_py.client.instance import get_instance, resolve_instance_name

        if self.state is not ServiceState.CREATE_JUST:
            raise ClientStateError(f"the consumer cannot start: it is {self.state.value} (a consumer starts once)")
        self.state = ServiceState.START_FAILED
        self.config.validate()
        if self.config.message_model is MessageModel.CLUSTERING:
            resolve_instance_name(self.config)
        strategy = resolve_strategy(self.config.allocate_message_queue_strategy)
        instance = get_instance(self.config)
        self._register(instance)
        try:
            self.pull_api = PullAPI(instance, self.group)
            self.offset_store = self._make_offset_store()
            await self.offset_store.load()
            self.rebalance = _LitePullRebalance(self, self.config, instance, strategy, self.offset_store)
            self.rebalance.listener = self.rebalance_listener
            self.rebalance.subscription_inner.update(self._pending_subscriptions)
            instance.start()
        except BaseException:
            await self._unregister()
            raise
        self.state = ServiceState.RUNNING
        self._start_background(self.config.persist_consumer_offset_interval)
        if self.subscription_type is SubscriptionType.SUBSCRIBE:
            await self._refresh_routes()
            await instance.send_heartbeat_to_all_brokers()
            self.rebalance_soon()
        elif self.subscription_type is SubscriptionType.ASSIGN:
            self._start_pull_tasks(self._assigned)

    async def shutdown(self) -> None:
        """Stop pulling, commit what was handed out (with ``auto_commit``), persist the offsets and leave the
        client instance; ``poll()`` and ``async for`` end."""
        if self.state is not ServiceState.RUNNING:
            self.state = ServiceState.SHUTDOWN_ALREADY
            return
        self.state = ServiceState.SHUTDOWN_ALREADY
        self._cache_ready.set()  # wakes poll() and async for, which end now
        if self.rebalance is not None:
            await self.rebalance.stop()
        tasks = list(self._tasks.values())
        self._tasks.clear()
        await cancel_and_wait(tasks, f"{self.group}: pull task")
        for state in self._assigned.values():
            state.settle_seek()
        await self._stop_background()
        if self.config.auto_commit:
            self.commit_all()
        await self.persist_consumer_offset(force=True)
        self._pull_failures.flush()
        if self.rebalance is not None:
            self.rebalance.destroy()
        await self._unregister()

    async def close(self) -> None:
        """The same as :meth:`shutdown`."""
        await self.shutdown()

    async def __aenter__(self) -> "AsyncLitePullConsumer":
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.shutdown()

    # --- polling ----------------------------------------------------------------------------------

    async def poll(self, timeout_ms: float | None = None) -> list[MessageExt]:
        """The next pulled messages (one pull's worth), or [] when none came within ``timeout_ms`` (default
        ``poll_timeout_millis``) or the consumer shut down meanwhile. Their queue's consumed offset moves past
        them, to be committed automatically (``auto_commit``) or by :meth:`commit`."""
        request = await self._next_request(timeout_ms)
        if request is None:
            return []
        self._mark_consumed(request, request.messages)
        return request.messages

    def __aiter__(self) -> "AsyncLitePullConsumer":
        """``async for message in consumer`` (see :meth:`__anext__`)."""
        return self

    async def __anext__(self) -> MessageExt:
        """``async for message in consumer``: one message at a time, waiting as long as it takes; the loop
        ends when the consumer shuts down. A message counts as consumed (for the committed offset) when it is
        handed out, as with :meth:`poll`; those not handed out yet are pulled again after a restart."""
        while True:
            request = self._iterated
            if request is not None and request.messages and not request.process_queue.dropped:
                message = request.messages.pop(0)
                self._mark_consumed(request, [message])
                return message
            self._iterated = None
            if self.state is ServiceState.SHUTDOWN_ALREADY:
                raise StopAsyncIteration
            self._iterated = await self._next_request(None)

    async def _next_request(self, timeout_ms: float | None) -> _ConsumeRequest | None:
        """The next pull's messages, not yet marked consumed; None after ``timeout_ms`` or at shutdown.
        Raises the error of a seek its pull task refused."""
        self._check_running()
        if timeout_ms is None:
            timeout_ms = self.config.poll_timeout_millis
        if timeout_ms < 0:
            raise InvalidArgumentError("the poll timeout cannot be negative")
        if self.config.auto_commit:
            self._maybe_auto_commit()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000.0
        while self.state is ServiceState.RUNNING:
            self._raise_refused_seek()
            while self._cache:
                request = self._cache.popleft()
                if not request.process_queue.dropped:
                    return _ConsumeRequest(list(request.messages), request.queue, request.process_queue)
            remaining = deadline - loop.time()
            if remaining <= 0:
                return None
            self._cache_ready.clear()
            await wait_event(self._cache_ready, remaining)
        return None

    def _raise_refused_seek(self) -> None:
        while self._refused_seeks:
            seek = self._refused_seeks.popleft()
            if not seek.reported and seek.error is not None:
                seek.reported = True
                raise seek.error

    def _mark_consumed(self, request: _ConsumeRequest, messages: list[MessageExt]) -> None:
        """Move the queue's consumed offset past ``messages`` (handed to the application)."""
        offset = request.process_queue.remove_messages(messages)
        state = self._assigned.get(request.queue)
        if state is not None and state.process_queue is request.process_queue and offset >= 0:
            state.consume_offset = offset
        if self.config.namespace:
            for message in messages:
                message.topic = self.config.without_namespace(message.topic)

    def pause(self, queues: Iterable[MessageQueue]) -> None:
        """Stop pulling these queues until :meth:`resume`."""
        for queue in queues:
            state = self._assigned.get(queue)
            if state is not None:
                state.paused = True

    def resume(self, queues: Iterable[MessageQueue]) -> None:
        """Pull these queues again."""
        for queue in queues:
            state = self._assigned.get(queue)
            if state is not None:
                state.paused = False

    def is_paused(self, queue: MessageQueue) -> bool:
        """Whether ``queue`` is paused (or not assigned)."""
        state = self._assigned.get(queue)
        return True if state is None else state.paused

    # --- offsets ----------------------------------------------------------------------------------

    def seek(self, queue: MessageQueue, offset: int) -> None:
        """Pull ``queue`` from ``offset`` next; what was cached of it is discarded. A plain method, as
        aiokafka's: the queue's pull task checks ``offset`` against the queue's min and max offsets first, and
        refuses one outside them (the queue goes on from what :meth:`poll` handed out) with an
        InvalidArgumentError that the next :meth:`poll` (or ``async for``) raises."""
        seek = self._start_seek(queue, offset)
        return FormerCoroutine(  # type: ignore[return-value]
            "AsyncLitePullConsumer.seek", lambda: self._wait_for_seek(seek))

    def _start_seek(self, queue: MessageQueue, offset: int) -> _Seek:
        self._check_running()
        state = self._assigned.get(queue)
        if state is None:
            extra = ", may be rebalancing" if self.subscription_type is SubscriptionType.SUBSCRIBE else ""
            raise ClientError(f"the message queue is not in the assigned list{extra}: {queue}")
        if offset < 0:
            raise InvalidArgumentError(f"seek offset {offset} of {queue} is negative")
        state.process_queue.clear()
        self._cache = collections.deque(r for r in self._cache if r.queue != queue)
        task = self._tasks.pop(queue, None)
        if task is not None:
            task.cancel()
        state.settle_seek()
        state.seek = _Seek(offset)
        self._start_pull_tasks([queue])
        return state.seek

    async def _wait_for_seek(self, seek: _Seek) -> None:
        """Until the pull task took or refused ``seek``; raises its refusal (then poll() does not)."""
        await seek.settled.wait()
        if seek.error is not None and not seek.reported:
            seek.reported = True
            raise seek.error

    async def _seek_checked(self, queue: MessageQueue, offset: int) -> None:
        """:meth:`seek`, then wait until the pull task took it; raises InvalidArgumentError when ``offset`` is
        outside the queue's min and max offsets, as Java's seek does (the blocking consumer's seek)."""
        await self._wait_for_seek(self._start_seek(queue, offset))

    async def seek_to_begin(self, queue: MessageQueue) -> None:
        """Pull ``queue`` from its first offset next."""
        await self._seek_checked(queue, await self.min_offset(queue))

    async def seek_to_end(self, queue: MessageQueue) -> None:
        """Pull ``queue`` from its end next (only new messages)."""
        await self._seek_checked(queue, await self.max_offset(queue))

    async def offset_for_timestamp(self, queue: MessageQueue, timestamp_ms: int) -> int:
        """The offset of the first message stored at or after ``timestamp_ms`` (SEARCH_OFFSET_BY_TIMESTAMP);
        the same as :meth:`search_offset`, by Kafka's name."""
        self._check_running()
        return await self.search_offset(queue, timestamp_ms)

    async def committed(self, queue: MessageQueue) -> int:
        """The committed offset of ``queue`` (memory first, then the store); -1 when there is none."""
        self._check_running()
        assert self.offset_store is not None
        offset = await self.offset_store.read_offset(queue, ReadOffsetType.MEMORY_FIRST_THEN_STORE)
        if offset == OFFSET_READ_FAILED:
            raise ClientError(f"the committed offset of {queue} could not be read from the broker")
        return offset

    def _maybe_auto_commit(self) -> None:
        now = time.monotonic()
        if now >= self._next_auto_commit:
            self.commit_all()
            self._next_auto_commit = now + self.config.auto_commit_interval_millis / 1000.0

    def commit_all(self) -> None:
        """Move every assigned queue's committed offset to what :meth:`poll` handed out (in memory)."""
        for queue in list(self._assigned):
            self._commit_queue(queue)

    def _commit_queue(self, queue: MessageQueue) -> None:
        state = self._assigned.get(queue)
        if state is None or state.consume_offset == -1 or state.process_queue.dropped:
            return
        assert self.offset_store is not None
        self.offset_store.update_offset(queue, state.consume_offset, False)

    async def commit(self, offsets: Mapping[MessageQueue, int] | Iterable[MessageQueue] | None = None,
                     persist: bool = True) -> None:
        """Commit what :meth:`poll` handed out (all assigned queues, or the given ones), or the given offsets
        ``{queue: offset}``; with ``persist`` they are written to the broker (or file) before returning."""
        self._check_running()
        assert self.offset_store is not None
        if offsets is None:
            queues = list(self._assigned)
            for queue in queues:
                self._commit_queue(queue)
        elif isinstance(offsets, Mapping):
            queues = list(offsets)
            for queue, offset in offsets.items():
                state = self._assigned.get(queue)
                if offset != -1 and state is not None and not state.process_queue.dropped:
                    self.offset_store.update_offset(queue, offset, False)
        else:
            queues = list(offsets)
            for queue in queues:
                self._commit_queue(queue)
        if persist and queues:
            await self.offset_store.persist_all(queues, oneway=False)

    async def commit_sync(self) -> None:
        """Commit every assigned queue and write the offsets to the broker now."""
        await self.commit(None, persist=True)

    async def fetch_message_queues(self, topic: str) -> set[MessageQueue]:
        """The readable queues of ``topic`` (from the name server)."""
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.client.consumer.brokers import subscribe_queues

        self._check_running()
        topic = self.config.with_namespace(topic)
        instance = self.instance_or_fail()
        route = await instance.get_topic_route(topic)
        queues = subscribe_queues(topic, route)
        if not queues:
            raise ClientError(f"the topic {topic!r} has no readable queue: check its permissions")
        return queues

    # --- pull tasks -------------------------------------------------------------------------------

    def _start_pull_tasks(self, queues: Iterable[MessageQueue]) -> None:
        loop = asyncio.get_running_loop()
        for queue in queues:
            if queue not in self._tasks and queue in self._assigned:
                self._tasks[queue] = loop.create_task(self._pull_loop(queue), name=f"lite-pull {queue}")

    def _subscription_for(self, topic: str) -> SubscriptionData:
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.common.filter import build_subscription_data

        if self.subscription_type is SubscriptionType.SUBSCRIBE:
            assert self.rebalance is not None
            subscription = self.rebalance.subscription_inner.get(topic)
            if subscription is not None:
                return subscription
        return build_subscription_data(topic, self._assign_expressions.get(topic, "*"))

    async def _take_seek(self, queue: MessageQueue, state: _QueueState, seek: _Seek) -> None:
        """Check ``seek`` against the queue's offsets (Java's seek does, before it moves anything): pull from
        its offset next, or refuse it and go on from what poll() handed out."""
        min_offset = await self.min_offset(queue)
        max_offset = await self.max_offset(queue)
        if state.seek is not seek:
            return
        state.seek = None
        if min_offset <= seek.offset <= max_offset:
            state.pull_offset = state.consume_offset = seek.offset
        else:
            seek.error = InvalidArgumentError(
                f"seek offset {seek.offset} of {queue} is outside [{min_offset}, {max_offset}] (min and max offset)")
            state.pull_offset = state.consume_offset
            self._refused_seeks.append(seek)
            self._cache_ready.set()
        seek.settled.set()

    async def _next_pull_offset(self, queue: MessageQueue, state: _QueueState) -> int:
        if state.pull_offset != -1:
            return state.pull_offset
        assert self.rebalance is not None
        return await self.rebalance.compute_pull_from_where(queue)

    async def _pull_loop(self, queue: MessageQueue) -> None:
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.client.consumer.pull import PullStatus
        from rocketmq_py.common.headers.pull import build_pull_sys_flag

        config = self.config
        assert self.pull_api is not None
        sys_flag = build_pull_sys_flag(False, True, True, False, True)
        while self.state is ServiceState.RUNNING:
            state = self._assigned.get(queue)
            if state is None or state.process_queue.dropped:
                return
            pq = state.process_queue
            try:
                if state.seek is not None:
                    await self._take_seek(queue, state, state.seek)
            except (RocketMQError, OSError) as error:
                _log.warning("%s cannot read the offsets of %s to check a seek: %s", self.group, queue, error)
                await asyncio.sleep(EXCEPTION_DELAY_S)
                continue
            delay = self._flow_control_delay(state)
            if delay:
                await asyncio.sleep(delay)
                continue
            try:
                offset = await self._next_pull_offset(queue, state)
            except (RocketMQError, OSError) as error:
                _log.warning("%s cannot compute where to pull %s from: %s", self.group, queue, error)
                await asyncio.sleep(EXCEPTION_DELAY_S)
                continue
            subscription = self._subscription_for(queue.topic)
            try:
                result = await self.pull_api.pull(
                    queue, subscription, offset, config.pull_batch_size, sys_flag, 0,
                    config.broker_suspend_max_time_millis, config.consumer_timeout_millis_when_suspend,
                    sub_expression=subscription.sub_string,
                    sub_version=0 if subscription.is_tag_type else subscription.sub_version,
                )
            except (RocketMQError, OSError) as error:
                flow = isinstance(error, BrokerResponseError) and error.code == ResponseCode.FLOW_CONTROL
                if not flow:
                    self._pull_failures.failed(queue.broker_name, error, f"pulling {queue} again later")
                await asyncio.sleep(BROKER_FLOW_CONTROL_DELAY_S if flow
                                    else config.pull_time_delay_millis_when_exception / 1000.0)
                continue
            self._pull_failures.succeeded(queue.broker_name)
            if pq.dropped or self._assigned.get(queue) is not state:
                return
            if result.status is PullStatus.FOUND and result.messages and state.seek is None:
                pq.put_messages(result.messages)
                self._cache.append(_ConsumeRequest(result.messages, queue, pq))
                self._cache_ready.set()
            if state.seek is None:
                state.pull_offset = result.next_begin_offset

    def _flow_control_delay(self, state: _QueueState) -> float:
        config = self.config
        if state.paused:
            return PAUSE_DELAY_S
        if len(self._cache) * config.pull_batch_size > config.pull_threshold_for_all:
            return FLOW_CONTROL_DELAY_S
        pq = state.process_queue
        if pq.msg_count > config.pull_threshold_for_queue:
            return FLOW_CONTROL_DELAY_S
        if pq.msg_size > config.pull_threshold_size_for_queue * 1024 * 1024:
            return FLOW_CONTROL_DELAY_S
        if pq.max_span > config.consume_max_span:
            return FLOW_CONTROL_DELAY_S
        return 0.0

    # --- what the client instance asks ------------------------------------------------------------

    def subscriptions(self) -> list[SubscriptionData]:
        """The subscriptions sent in heartbeats."""
        if self.rebalance is None:
            return list(self._pending_subscriptions.values())
        return list(self.rebalance.subscription_inner.values())

    def on_route_changed(self, topic: str, route: TopicRouteData) -> None:
        """Take a new route of ``topic`` (called by the client instance)."""
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.client.consumer.brokers import subscribe_queues

        if self.rebalance is not None and topic in self.rebalance.subscription_inner:
            self.rebalance.topic_subscribe_info[topic] = subscribe_queues(topic, route)

    async def do_rebalance(self) -> bool:
        if self.rebalance is not None and self.subscription_type is SubscriptionType.SUBSCRIBE:
            return await self.rebalance.do_rebalance(False)
        return False

    def queues_to_persist(self) -> set[MessageQueue]:
        """The queues whose offsets are persisted (those assigned now)."""
        return set(self._assigned)

    def running_info_process_queues(self) -> dict[MessageQueue, ProcessQueue]:
        """The process queues, for GET_CONSUMER_RUNNING_INFO."""
        return {queue: state.process_queue for queue, state in self._assigned.items()}
