"""The asyncio push consumer (Java's DefaultMQPushConsumer, DefaultMQPushConsumerImpl and RebalancePushImpl).

Each queue the rebalance gives this consumer gets a pull task: it long-polls
the broker (the broker holds the request up to 15 s while the queue is
empty; the client waits up to 30 s), respects Java's flow control thresholds
(messages, MiB and offset span cached per queue), and hands what it pulled to
the concurrent or orderly consume service.
"""
from __future__ import annotations

import asyncio
import functools
import logging
import time
from typing import TYPE_CHECKING, Any, AsyncIterator, Iterable, Sequence

from rocketmq_py.client.consumer.allocate import resolve_strategy
from rocketmq_py.client.failure_log import FailureLog
from rocketmq_py.client.consumer.config import PushConsumerConfig, make_config
from rocketmq_py.client.consumer.listener import Listener
from rocketmq_py.client.consumer.rebalance import RebalanceImpl
from rocketmq_py.client.consumer.rebalance_listener import RebalanceListener
from rocketmq_py.client.consumer.service import ConsumerMember, ServiceState, cancel_and_wait
from rocketmq_py.client.consumer.stats import FlowControlTimes
from rocketmq_py.client.consumer.stream import BatchStream
from rocketmq_py.common import validators
from rocketmq_py.common.clock import now_ms
from rocketmq_py.common.codes import ResponseCode
from rocketmq_py.common.heartbeat_consumer import ConsumeType, MessageModel
from rocketmq_py.common.message import Message, MessageConst
from rocketmq_py.common.topic import CLIENT_INNER_PRODUCER_GROUP
from rocketmq_py.errors import BrokerResponseError, ClientError, ClientStateError, InvalidArgumentError, RocketMQError

if TYPE_CHECKING:
    from rocketmq_py.client.consumer.consume_concurrently import ConsumeMessageConcurrentlyService
    from rocketmq_py.client.consumer.consume_orderly import ConsumeMessageOrderlyService
    from rocketmq_py.client.consumer.listener import ListenerLike
    from rocketmq_py.client.consumer.process_queue import ProcessQueue
    from rocketmq_py.client.consumer.pull import PullAPI
    from rocketmq_py.common.consumer_body import ConsumeMessageDirectlyResult
    from rocketmq_py.common.filter import MessageSelector, SubscriptionData
    from rocketmq_py.common.message import MessageExt
    from rocketmq_py.common.message_queue import MessageQueue
    from rocketmq_py.common.route import TopicRouteData

_log = logging.getLogger(__name__)

BROKER_SUSPEND_MAX_TIME_MILLIS = 15_000
CONSUMER_TIMEOUT_MILLIS_WHEN_SUSPEND = 30_000
FLOW_CONTROL_DELAY_S = 0.05
#: A flow control pause is logged the first time and then once every this many times, as in Java.
FLOW_CONTROL_LOG_EVERY = 1000
BROKER_FLOW_CONTROL_DELAY_S = 0.02
SUSPEND_DELAY_S = 1.0
OFFSET_ILLEGAL_FIX_DELAY_S = 10.0
UNLOCK_DELAY_S = 20.0
SEND_BACK_TIMEOUT_MS = 5000
RESET_DRAIN_TIMEOUT_S = 10.0
_RETRY_TOPIC = MessageConst.RETRY_TOPIC


class _PushRebalance(RebalanceImpl):
    consume_type = ConsumeType.CONSUME_PASSIVELY

    def __init__(self, consumer: "AsyncPushConsumer", *args: Any) -> None:
        super().__init__(*args)
        self.consumer = consumer

    async def remove_unnecessary_message_queue(self, queue: MessageQueue, pq: ProcessQueue) -> bool:
        await self.offset_store.persist(queue)
        self.offset_store.remove_offset(queue)
        if self.consumer.consume_orderly and self.message_model is MessageModel.CLUSTERING:
            deadline = time.monotonic() + 1.0
            while pq.in_flight and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            if pq.in_flight:
                pq.try_unlock_times += 1
                _log.warning("%s: %s is still being consumed; it is unlocked later", self.group, queue)
                return False
            if pq.has_temp_message:
                asyncio.get_running_loop().call_later(
                    UNLOCK_DELAY_S, lambda: asyncio.ensure_future(self.unlock(queue, True)))
            else:
                await self.unlock(queue, True)
        return True

    def dispatch_pull_requests(self, started: Iterable[tuple[MessageQueue, ProcessQueue, int]]) -> None:
        for queue, pq, offset in started:
            self.consumer._start_pulling(queue, pq, offset)

    async def message_queue_changed(self, topic: str, mq_all: set[MessageQueue], mq_divided: set[MessageQueue]) -> None:
        subscription = self.subscription_inner.get(topic)
        if subscription is not None:
            subscription.sub_version = now_ms()
        count = len(self.process_queue_table)
        config = self.consumer.config
        if count:
            if config.pull_threshold_for_topic != -1:
                config.pull_threshold_for_queue = max(1, config.pull_threshold_for_topic // count)
            if config.pull_threshold_size_for_topic != -1:
                config.pull_threshold_size_for_queue = max(1, config.pull_threshold_size_for_topic // count)
        await self.instance.send_heartbeat_to_all_brokers()


class AsyncPushConsumer(ConsumerMember):
    """A push consumer on the running asyncio loop.

    ``AsyncPushConsumer("group", namesrv_addr="127.0.0.1:9876")``; any
    :class:`PushConsumerConfig` field can be given as a keyword. Subscribe,
    register a listener, then :meth:`start`; :meth:`shutdown` at the end (or
    ``async with``). ``async def`` listeners run on the event loop,
    ``consume_thread_min`` at a time; plain functions run in as many threads.
    """

    consume_type = ConsumeType.CONSUME_PASSIVELY

    def __init__(self, consumer_group: str | None = None, *, config: PushConsumerConfig | None = None,
                 rebalance_listener: RebalanceListener | None = None, **options: Any) -> None:
        super().__init__(make_config(PushConsumerConfig, consumer_group, config, options))
        if rebalance_listener is not None and not isinstance(rebalance_listener, RebalanceListener):
            raise InvalidArgumentError(
                f"rebalance_listener must be a RebalanceListener, not {type(rebalance_listener).__name__}")
        #: Told of the queues assigned and revoked by each rebalance (not used with assign()).
        self.rebalance_listener = rebalance_listener
        self.config: PushConsumerConfig
        self._subscriptions: dict[str, SubscriptionData] = {}
        self.listener: Listener | None = None
        self.consume_service: ConsumeMessageConcurrentlyService | ConsumeMessageOrderlyService | None = None
        self.rebalance: _PushRebalance | None = None
        self.pull_api: PullAPI | None = None
        self.paused = False
        self._pull_tasks: dict[MessageQueue, asyncio.Task[None]] = {}
        self._inner_producer: Any = None
        self._stream: BatchStream | None = None
        #: Failed pulls, logged once per broker and interval with a count.
        self._pull_failures = FailureLog(_log, f"pulls of group {self.config.consumer_group} from broker")
        #: Pulls that waited for the listener to catch up, since start.
        self.flow_control = FlowControlTimes()
        self._retry_topic = ""

    @property
    def consume_orderly(self) -> bool:
        """True when the listener is an orderly one."""
        return self.listener is not None and self.listener.orderly

    # --- setup ------------------------------------------------------------------------------------

    def subscribe(self, topic: str, selector: MessageSelector | str | None = "*") -> None:
        """Consume ``topic``: ``selector`` is a tag expression (``"*"``, ``"TagA || TagB"``) or a
        :class:`MessageSelector` (``MessageSelector.by_sql("a > 5")``)."""
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.common.filter import build_subscription

        validators.check_topic(topic)
        subscription = build_subscription(self.config.with_namespace(topic), selector)
        self._subscriptions[subscription.topic] = subscription
        if self.rebalance is not None:
            self.rebalance.subscription_inner[subscription.topic] = subscription
            self._announce_subscriptions()

    def unsubscribe(self, topic: str) -> None:
        """Stop consuming ``topic``."""
        topic = self.config.with_namespace(topic)
        self._subscriptions.pop(topic, None)
        if self.rebalance is not None:
            self.rebalance.subscription_inner.pop(topic, None)

    def register_message_listener(self, listener: ListenerLike, orderly: bool | None = None) -> None:
        """The listener: a function ``(messages, context) -> status`` (``async def`` allowed), concurrent unless
        ``orderly=True``, or a MessageListenerConcurrently / MessageListenerOrderly object."""
        if self.state is not ServiceState.CREATE_JUST:
            raise ClientStateError("register the message listener before start()")
        self.listener = Listener.of(listener, orderly)

    def listener_for(self, orderly: bool = False) -> Any:
        """Decorator form of :meth:`register_message_listener`: ``@consumer.listener_for()``."""
        def register(function: Any) -> Any:
            self.register_message_listener(function, orderly=orderly)
            return function
        return register

    def messages(self) -> AsyncIterator[list[MessageExt]]:
        """``async for batch in consumer.messages()``: the batches a listener would get (at most
        ``consume_message_batch_max_size`` messages each), for a consumer without a listener of its own.

        A batch counts as consumed when the loop body that got it is done (the loop asks for the next
        batch); leaving the loop early or shutting down while a batch is in the body sends that batch back
        to be consumed again, as a listener's RECONSUME_LATER does (at least once). Flow control and
        retries are the listener's. The loop ends when the consumer shuts down. Call it before
        :meth:`start`, since it takes the listener's place; each call gives another loop over the same
        batches: ``batches = consumer.messages()``, then ``async with consumer: async for batch in
        batches: ...``."""
        if self._stream is None:
            if self.listener is not None:
                raise ClientStateError("this consumer has a message listener: messages() is for consumers "
                                       "without one")
            if self.state is not ServiceState.CREATE_JUST:
                raise ClientStateError("call messages() before start(): it takes the listener's place")
            self._stream = BatchStream()
            self.listener = Listener.of(self._stream.listener)
        return self._stream.iterate()

    # --- lifecycle --------------------------------------------------------------------------------

    async def start(self) -> None:
        """Validate the settings, join the client instance and start rebalancing and pulling; a consumer
        starts once."""
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.client.consumer.consume_concurrently import ConsumeMessageConcurrentlyService
        from rocketmq_py.client.consumer.consume_orderly import ConsumeMessageOrderlyService
        from rocketmq_py.client.consumer.pull import PullAPI
        from rocketmq_py.client.instance import get_instance, resolve_instance_name
        from rocketmq_py.common.filter import build_subscription_data

        if self.state is not ServiceState.CREATE_JUST:
            raise ClientStateError(f"the consumer cannot start: it is {self.state.value} (a consumer starts once)")
        self.config.validate()
        if self.listener is None:
            raise ClientStateError("no message listener: call register_message_listener(...) before start(), "
                                   "or messages() to consume with async for")
        if not self._subscriptions:
            raise ClientStateError("no subscription: call subscribe(topic, expression) before start()")
        self.state = ServiceState.START_FAILED
        self._retry_topic = self.config.retry_topic
        strategy = resolve_strategy(self.config.allocate_message_queue_strategy)
        if self.config.message_model is MessageModel.CLUSTERING:
            resolve_instance_name(self.config)
            retry = self.config.retry_topic
            self._subscriptions.setdefault(retry, build_subscription_data(retry, "*"))
        instance = get_instance(self.config)
        self._register(instance)
        try:
            self.pull_api = PullAPI(instance, self.group)
            self.offset_store = self._make_offset_store()
            await self.offset_store.load()
            self.rebalance = _PushRebalance(self, self.config, instance, strategy, self.offset_store)
            self.rebalance.listener = self.rebalance_listener
            self.rebalance.subscription_inner.update(self._subscriptions)
            if self.listener.orderly:
                self.consume_service = ConsumeMessageOrderlyService(self, self.listener)
            else:
                self.consume_service = ConsumeMessageConcurrentlyService(self, self.listener)
            self.consume_service.start()
            instance.start()
        except BaseException:
            self.state = ServiceState.CREATE_JUST
            await self._unregister()
            raise
        self.state = ServiceState.RUNNING
        self._start_background(self.config.persist_consumer_offset_interval)
        await self._refresh_routes()
        await instance.send_heartbeat_to_all_brokers()
        self.rebalance_soon()

    async def shutdown(self) -> None:
        """Stop pulling, let the listener calls in progress finish, commit the offsets and unregister."""
        if self.state is not ServiceState.RUNNING:
            self.state = ServiceState.SHUTDOWN_ALREADY
            return
        self.state = ServiceState.SHUTDOWN_ALREADY
        assert self.consume_service is not None and self.rebalance is not None
        await self.rebalance.stop()
        pulls = list(self._pull_tasks.values())
        self._pull_tasks.clear()
        await cancel_and_wait(pulls, f"{self.group}: pull task")
        await self._stop_background()
        if self._stream is not None:
            self._stream.close()
        await self.consume_service.shutdown(self.config.await_termination_millis_when_shutdown / 1000.0)
        await self.persist_consumer_offset(force=True)
        self._pull_failures.flush()
        self.rebalance.destroy()
        if self._inner_producer is not None:
            await self._inner_producer.shutdown()
        await self._unregister()

    async def close(self) -> None:
        """The same as :meth:`shutdown`."""
        await self.shutdown()

    async def __aenter__(self) -> "AsyncPushConsumer":
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.shutdown()

    def suspend(self) -> None:
        """Pause pulling (Java's suspend); messages already pulled are still consumed."""
        self.paused = True

    def resume(self) -> None:
        """Resume pulling after :meth:`suspend`."""
        self.paused = False
        self.rebalance_soon()

    # --- pulling ----------------------------------------------------------------------------------

    def _start_pulling(self, queue: MessageQueue, pq: ProcessQueue, offset: int) -> None:
        old = self._pull_tasks.get(queue)
        if old is not None and not old.done():
            old.cancel()
        task = asyncio.get_running_loop().create_task(self._pull_loop(queue, pq, offset), name=f"pull {queue}")
        self._pull_tasks[queue] = task
        task.add_done_callback(functools.partial(self._pull_done, queue))

    def _pull_done(self, queue: MessageQueue, task: asyncio.Task[None]) -> None:
        if self._pull_tasks.get(queue) is task:
            del self._pull_tasks[queue]
        if not task.cancelled() and task.exception() is not None:
            _log.error("the pull task of %s stopped", queue, exc_info=task.exception())

    def _flow_control_delay(self, queue: MessageQueue, pq: ProcessQueue) -> float:
        """Java's flow control of pullMessage: a pause when the queue holds too much that is not consumed yet."""
        config = self.config
        times = self.flow_control
        count, size = pq.cached_now()
        if count > config.pull_threshold_for_queue:
            times.cached_count += 1
            what = f"{count} messages cached (pull_threshold_for_queue {config.pull_threshold_for_queue})"
        elif size > config.pull_threshold_size_for_queue * 1024 * 1024:
            times.cached_size += 1
            what = (f"{size // (1024 * 1024)} MiB cached "
                    f"(pull_threshold_size_for_queue {config.pull_threshold_size_for_queue})")
        elif not self.consume_orderly and pq.max_span > config.consume_concurrently_max_span:
            times.offset_span += 1
            what = (f"cached offsets {pq.max_span} apart "
                    f"(consume_concurrently_max_span {config.consume_concurrently_max_span})")
        else:
            return 0.0
        if times.total % FLOW_CONTROL_LOG_EVERY == 1:
            _log.warning("%s: pulls of %s wait for the listener: %s; %d such pauses so far", self.group, queue, what,
                         times.total)
        return FLOW_CONTROL_DELAY_S

    async def _pull_loop(self, queue: MessageQueue, pq: ProcessQueue, next_offset: int) -> None:
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.client.consumer.pull import PullStatus
        from rocketmq_py.common.headers.pull import build_pull_sys_flag

        config = self.config
        assert self.pull_api is not None and self.rebalance is not None and self.consume_service is not None
        exception_delay_s = config.pull_time_delay_millis_when_exception / 1000.0
        clustering = config.message_model is MessageModel.CLUSTERING
        orderly = self.consume_orderly
        previously_locked = False
        while not pq.dropped:
            pq.last_pull_timestamp = now_ms()
            if self.state is not ServiceState.RUNNING:
                return  # shut down (pulls start once the consumer runs)
            if self.paused:
                await asyncio.sleep(SUSPEND_DELAY_S)
                continue
            delay = self._flow_control_delay(queue, pq)
            if delay:
                await asyncio.sleep(delay)
                continue
            if orderly:
                if not pq.locked:
                    await asyncio.sleep(exception_delay_s)
                    continue
                if not previously_locked:
                    try:
                        next_offset = await self.rebalance.compute_pull_from_where(queue)
                    except (RocketMQError, OSError) as error:
                        _log.warning("%s cannot compute where to pull %s from: %s", self.group, queue, error)
                        await asyncio.sleep(exception_delay_s)
                        continue
                    previously_locked = True
            subscription = self.rebalance.subscription_inner.get(queue.topic)
            if subscription is None:
                await asyncio.sleep(exception_delay_s)
                continue
            assert self.offset_store is not None
            commit_offset = self.offset_store.peek_offset(queue) if clustering else 0
            sub_expression = None
            if config.post_subscription_when_pull and not subscription.class_filter_mode:
                sub_expression = subscription.sub_string
            sys_flag = build_pull_sys_flag(commit_offset > 0, True, sub_expression is not None,
                                           subscription.class_filter_mode)
            began = time.monotonic()
            try:
                result = await self.pull_api.pull(
                    queue, subscription, next_offset, config.pull_batch_size, sys_flag, max(commit_offset, 0),
                    BROKER_SUSPEND_MAX_TIME_MILLIS, CONSUMER_TIMEOUT_MILLIS_WHEN_SUSPEND, sub_expression,
                )
            except (RocketMQError, OSError) as error:
                flow = isinstance(error, BrokerResponseError) and error.code == ResponseCode.FLOW_CONTROL
                if not queue.topic.startswith("%RETRY%"):
                    self._pull_failures.failed(queue.broker_name, error, f"pulling {queue} again later")
                await asyncio.sleep(BROKER_FLOW_CONTROL_DELAY_S if flow else exception_delay_s)
                continue
            self._pull_failures.succeeded(queue.broker_name)
            if pq.dropped:
                return
            status = result.status
            if status is PullStatus.FOUND:
                next_offset = result.next_begin_offset
                messages = result.messages
                self.stats.pull(queue.topic, (time.monotonic() - began) * 1000.0, len(messages))
                if messages:
                    dispatch = pq.put_messages(messages)
                    self.consume_service.submit(messages, pq, queue, dispatch)
                    if config.pull_interval > 0:
                        await asyncio.sleep(config.pull_interval / 1000.0)
            elif status is PullStatus.NO_NEW_MSG or status is PullStatus.NO_MATCHED_MSG:
                next_offset = result.next_begin_offset
                if pq.msg_count == 0:
                    assert self.offset_store is not None
                    self.offset_store.update_offset(queue, next_offset, True)
            else:
                _log.warning("%s: the pull offset %d of %s is illegal; it restarts at %d", self.group, next_offset,
                             queue, result.next_begin_offset)
                pq.dropped = True
                self._spawn(self._fix_illegal_offset(queue, result.next_begin_offset),
                            f"fixing the offset of {queue}")
                return

    async def _fix_illegal_offset(self, queue: MessageQueue, offset: int) -> None:
        await asyncio.sleep(OFFSET_ILLEGAL_FIX_DELAY_S)
        assert self.rebalance is not None and self.offset_store is not None
        self.offset_store.update_offset(queue, offset, False)
        await self.offset_store.persist(queue)
        await self.rebalance.remove_process_queue(queue)

    # --- consuming helpers ------------------------------------------------------------------------

    def reset_retry_and_namespace(self, messages: Sequence[MessageExt]) -> None:
        """Messages of the retry topic show their original topic to the listener, as in Java."""
        retry = self._retry_topic
        namespace = self.config.namespace
        for message in messages:
            if message.topic == retry:
                original = message.properties.get(_RETRY_TOPIC)
                if original is not None:
                    message.topic = original
            if namespace:
                message.topic = self.config.without_namespace(message.topic)

    async def call_listener(self, listener: Listener, messages: list[MessageExt], context: Any) -> Any:
        """Call the registered listener with a batch (in a thread when it is a plain function)."""
        if listener.is_async:
            return await listener.function(messages, context)
        return await asyncio.get_running_loop().run_in_executor(None, listener.function, messages, context)

    async def send_message_back(self, message: MessageExt, delay_level: int, broker_name: str | None) -> bool:
        """CONSUMER_SEND_MSG_BACK, or on failure a re-send to the retry topic; False when both failed."""
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.common.headers.consumer import ConsumerSendMsgBackRequestHeader

        instance = self.instance_or_fail()
        max_times = self.config.concurrent_max_reconsume_times()
        topic = self.config.with_namespace(message.topic)
        try:
            addr = instance.find_broker_address_in_publish(broker_name) if broker_name else message.store_host
            if not addr:
                raise ClientError(f"no address of the broker {broker_name} to send {message.msg_id} back to")
            header = ConsumerSendMsgBackRequestHeader(
                offset=message.commit_log_offset, group=self.group, delay_level=delay_level,
                origin_msg_id=message.msg_id, origin_topic=topic, unit_mode=self.config.unit_mode,
                max_reconsume_times=max_times, broker_name=broker_name,
            )
            await instance.api.consumer_send_message_back(addr, header, SEND_BACK_TIMEOUT_MS)
            return True
        except (RocketMQError, OSError) as error:
            _log.warning("sending %s back to the broker failed (%s); re-sending it to %s", message.msg_id, error,
                         self.config.retry_topic)
        return await self.resend_to_retry_topic(message, max_times, message.reconsume_times + 1)

    async def resend_to_retry_topic(self, message: MessageExt, max_reconsume_times: int,
                                    reconsume_time: int) -> bool:
        """Send a copy to ``%RETRY%group`` through the inner producer (the fallback of a send-back, and where
        an orderly message past its maximum goes)."""
        retry = Message(self.config.retry_topic, message.body, flag=message.flag,
                        properties=message.properties)
        properties = retry.properties
        properties[MessageConst.ORIGIN_MESSAGE_ID] = (
            message.properties.get(MessageConst.ORIGIN_MESSAGE_ID) or message.msg_id)
        properties[_RETRY_TOPIC] = self.config.with_namespace(message.topic)
        properties[MessageConst.RECONSUME_TIME] = str(reconsume_time)
        properties[MessageConst.MAX_RECONSUME_TIMES] = str(max_reconsume_times)
        properties.pop(MessageConst.TRANSACTION_PREPARED, None)
        retry.delay_time_level = 3 + message.reconsume_times
        try:
            producer = await self._retry_producer()
            await producer.send(retry)
            return True
        except (RocketMQError, OSError) as error:
            _log.error("re-sending %s to %s failed: %s", message.msg_id, self.config.retry_topic, error)
            return False

    async def _retry_producer(self) -> Any:
        instance = self.instance_or_fail()
        shared = instance.select_producer(CLIENT_INNER_PRODUCER_GROUP)
        if shared is not None:
            return shared
        if self._inner_producer is None:
            from rocketmq_py.client.producer.core import AsyncProducer

            options = {name: getattr(self.config, name) for name in (
                "namesrv_addr", "instance_name", "client_ip", "unit_name", "mq_client_api_timeout", "access_key",
                "secret_key", "security_token", "serialize_type")}
            producer = AsyncProducer(CLIENT_INNER_PRODUCER_GROUP, **options)
            await producer.start()
            self._inner_producer = producer
        return self._inner_producer

    # --- what the client instance and the admin tools ask ----------------------------------------

    def subscriptions(self) -> list[SubscriptionData]:
        """The subscriptions sent in heartbeats (the retry topic's included)."""
        if self.rebalance is None:
            return list(self._subscriptions.values())
        return list(self.rebalance.subscription_inner.values())

    def on_route_changed(self, topic: str, route: TopicRouteData) -> None:
        """Take a new route of ``topic`` (called by the client instance)."""
        if self.rebalance is not None and topic in self.rebalance.subscription_inner:
            self.rebalance.topic_subscribe_info[topic] = self.subscribe_queues(topic, route)

    async def do_rebalance(self) -> bool:
        if self.rebalance is not None and not self.paused:
            return await self.rebalance.do_rebalance(self.consume_orderly)
        return False

    def queues_to_persist(self) -> set[MessageQueue]:
        """The queues whose offsets are persisted (those held now)."""
        return set(self.rebalance.process_queue_table) if self.rebalance is not None else set()

    def running_info_process_queues(self) -> dict[MessageQueue, ProcessQueue]:
        """The process queues, for GET_CONSUMER_RUNNING_INFO."""
        return dict(self.rebalance.process_queue_table) if self.rebalance is not None else {}

    def running_info_properties(self) -> dict[str, str]:
        properties = super().running_info_properties()
        properties["PROP_CONSUMEORDERLY"] = "true" if self.consume_orderly else "false"
        core = self.consume_service.core_pool_size if self.consume_service is not None else 0
        properties["PROP_THREADPOOL_CORE_SIZE"] = str(core)
        return properties

    async def consume_message_directly(self, message: MessageExt, broker_name: str | None
                                       ) -> ConsumeMessageDirectlyResult | None:
        if self.consume_service is None:
            return None
        return await self.consume_service.consume_message_directly(message, broker_name)

    async def reset_offset(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        """RESET_CONSUMER_CLIENT_OFFSET: drop the topic's queues, let their consumption drain, set the offsets
        and take the queues again from there (Java's MQClientInstance.resetOffset)."""
        if self.rebalance is None:
            return
        self.suspend()
        try:
            table = self.rebalance.process_queue_table
            touched = [(queue, pq) for queue, pq in table.items() if queue.topic == topic and queue in offsets]
            for _, pq in touched:
                pq.dropped = True
                pq.clear()
            deadline = time.monotonic() + RESET_DRAIN_TIMEOUT_S
            while any(pq.in_flight for _, pq in touched) and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            assert self.offset_store is not None
            for queue, pq in touched:
                self.offset_store.update_offset(queue, offsets[queue], False)
                await self.rebalance.remove_unnecessary_message_queue(queue, pq)
                table.pop(queue, None)
            _log.info("%s reset the offsets of %s: %s", self.group, topic,
                      {str(queue): offsets[queue] for queue, _ in touched})
        finally:
            self.resume()
