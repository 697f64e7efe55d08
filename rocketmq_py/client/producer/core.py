"""The asyncio producer (Java's DefaultMQProducer and DefaultMQProducerImpl).

Sends go through :meth:`AsyncProducer._send_default` (round robin with
retries, fault avoidance), :meth:`AsyncProducer._send_select` (a queue
selector, no retry) or straight to a queue, and all end in
:meth:`AsyncProducer._send_kernel`, which builds the SEND_MESSAGE_V2 /
SEND_BATCH_MESSAGE request.

The retry loop (:meth:`AsyncProducer.sync_attempts`), the request
(``send_request_parts``) and the result (``send_result``) do no I/O, so the
blocking producer's send from the calling thread (:mod:`.direct`) runs the
same code.
"""
from __future__ import annotations

import asyncio
import dataclasses
import enum
import logging
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Generator, Sequence, TypeVar

from rocketmq_py.client.config import ProducerConfig
from rocketmq_py.client.failure_log import FailureLog
from rocketmq_py.client.mq_admin import MQAdminMethods
from rocketmq_py.client.producer.batch import BatchMessage
from rocketmq_py.client.producer.fault import FaultStrategy
from rocketmq_py.client.producer.publish_info import TopicPublishInfo, publish_info_from_route
from rocketmq_py.client.producer.result import SendResult, SendStatus
from rocketmq_py.client.producer.selector import as_selector_function
from rocketmq_py.common import sysflag, validators
from rocketmq_py.common.clock import monotonic_ms, now_ms
from rocketmq_py.common.codes import RequestCode
from rocketmq_py.common.message import Message, MessageConst
from rocketmq_py.common.message_queue import MessageQueue
from rocketmq_py.common.topic import REPLY_MESSAGE_FLAG, RETRY_GROUP_TOPIC_PREFIX
from rocketmq_py.errors import (
    BrokerNotFoundError,
    BrokerResponseError,
    ClientError,
    ClientErrorCode,
    ClientStateError,
    InvalidArgumentError,
    NoRouteInfoError,
    RemotingConnectError,
    RemotingError,
    RemotingTimeoutError,
    RequestTimeoutError,
    SendFailedError,
    SendTimeoutError,
)

if TYPE_CHECKING:
    from rocketmq_py.client.instance import MQClientInstance
    from rocketmq_py.client.mq_admin_impl import MQAdminImpl
    from rocketmq_py.client.producer.selector import SelectorLike
    from rocketmq_py.common.message import MessageExt
    from rocketmq_py.common.headers.send import SendMessageRequestHeaderV2
    from rocketmq_py.common.route import TopicRouteData
    from rocketmq_py.remoting.command import RemotingCommand

_log = logging.getLogger(__name__)
_Self = TypeVar("_Self", bound="AsyncProducer")

UNIQ_KEY = MessageConst.UNIQ_CLIENT_MESSAGE_ID_KEYIDX

#: Called after every send attempt that reached a broker or failed: (message, queue, broker address,
#: result or None, error or None, cost in ms). Used by message trace.
SendHook = Callable[[Message, MessageQueue, str, "SendResult | None", "BaseException | None", float], None]


class ServiceState(enum.Enum):
    CREATE_JUST = "CREATE_JUST"
    RUNNING = "RUNNING"
    SHUTDOWN_ALREADY = "SHUTDOWN_ALREADY"
    START_FAILED = "START_FAILED"


class CommunicationMode(enum.Enum):
    SYNC = "SYNC"
    ASYNC = "ASYNC"
    ONEWAY = "ONEWAY"


def no_broker_error(queue: MessageQueue) -> BrokerNotFoundError:
    return BrokerNotFoundError(
        f"the broker {queue.broker_name!r} does not exist or has no master: check the queue or the cluster"
    )


def make_config(producer_group: str | None, config: ProducerConfig | None, options: dict[str, Any]) -> ProducerConfig:
    base = dataclasses.replace(config) if config is not None else ProducerConfig()
    if producer_group is not None:
        options = {**options, "producer_group": producer_group}
    known = {f.name for f in dataclasses.fields(ProducerConfig)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise InvalidArgumentError(f"unknown producer option(s) {', '.join(unknown)}; see ProducerConfig")
    return dataclasses.replace(base, **options)


class AsyncProducer(MQAdminMethods):
    """A producer on the running asyncio loop.

    ``AsyncProducer("group", namesrv_addr="127.0.0.1:9876")``; any
    :class:`ProducerConfig` field can be given as a keyword, or pass a
    whole ``config``. Use ``async with`` or :meth:`start` / :meth:`shutdown`.
    """

    def __init__(self, producer_group: str | None = None, *, config: ProducerConfig | None = None,
                 **options: Any) -> None:
        # lazy: the codec (and JSON with it) loads when a producer is made, not when the class is imported
        from rocketmq_py import codec

        self.config = make_config(producer_group, config, options)
        self.state = ServiceState.CREATE_JUST
        self.instance: MQClientInstance | None = None
        self.publish_infos: dict[str, TopicPublishInfo] = {}
        self.fault_strategy = FaultStrategy(
            self.config.send_latency_fault_enable, self.config.latency_max, self.config.not_available_duration,
        )
        self.send_hooks: list[SendHook] = []
        self._compression = codec.COMPRESSION_ZLIB
        self._ids: codec.UniqueIdGenerator | None = None
        self._trace: Any = None
        self._pending: set[asyncio.Task[Any]] = set()
        #: Failed send attempts, logged once per broker and interval with a count.
        self._failures = FailureLog(_log, "send to broker")

    # --- lifecycle ---------------------------------------------------------------------------

    @property
    def group(self) -> str:
        """The producer group as sent on the wire (with the namespace, if any)."""
        return self.config.with_namespace(self.config.producer_group)

    async def start(self) -> None:
        """Validate the settings, join the client instance of this client id and reach the name servers;
        a producer starts once."""
        if self.state is not ServiceState.CREATE_JUST:
            raise ClientStateError(f"the producer cannot start: it is {self.state.value} (a producer starts once)")
        self.state = ServiceState.START_FAILED
        validators.check_producer_group(self.config.producer_group)
        self.config.validate()
        self._compression = self.config.compression_code()
        # lazy: the client instance, its RPCs and the remoting client load when the first client starts
        from rocketmq_py import codec
        from rocketmq_py.client.instance import get_instance, resolve_instance_name
        from rocketmq_py.client.net import ip_bytes, local_address

        resolve_instance_name(self.config)
        self._ids = codec.UniqueIdGenerator(ip_bytes(self.config.client_ip or local_address()))
        instance = get_instance(self.config)
        if not instance.register_producer(self.group, self):
            self.state = ServiceState.CREATE_JUST
            raise ClientError(
                f"the producer group {self.group!r} was already started in client {instance.client_id}: "
                "give this producer another group or another instance_name"
            )
        self.instance = instance
        self.publish_infos[self.config.create_topic_key] = TopicPublishInfo()
        instance.start()
        self.state = ServiceState.RUNNING
        if self.config.enable_msg_trace:
            from rocketmq_py.client.trace import TraceDispatcher

            self._trace = TraceDispatcher(self, AsyncProducer)
            await self._trace.start()
        await instance.send_heartbeat_to_all_brokers()

    async def shutdown(self) -> None:
        """Wait for the sends started by :meth:`send_async`, then leave the client instance (which stops
        when its last client leaves). Calling it again does nothing."""
        if self.state is not ServiceState.RUNNING:
            self.state = ServiceState.SHUTDOWN_ALREADY
            return
        await self.flush()
        if self._trace is not None:
            await self._trace.shutdown()
        self._failures.flush()
        self.state = ServiceState.SHUTDOWN_ALREADY
        assert self.instance is not None
        await self.instance.unregister_producer(self.group)

    async def close(self) -> None:
        """The same as :meth:`shutdown` (the name Python libraries use)."""
        await self.shutdown()

    async def flush(self, timeout_ms: float | None = None) -> None:
        """Wait until every send started by :meth:`send_async` so far has ended (sent or failed: the
        results are in their tasks). With ``timeout_ms``, raise :class:`SendTimeoutError` if some are
        still in flight after that long (they go on)."""
        pending = tuple(self._pending)
        if not pending:
            return
        timeout = None if timeout_ms is None else timeout_ms / 1000.0
        _done, not_done = await asyncio.wait(pending, timeout=timeout)
        if not_done:
            raise SendTimeoutError(f"{len(not_done)} async send(s) still in flight after {timeout_ms} ms")

    async def __aenter__(self: _Self) -> _Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.shutdown()

    def _running_instance(self) -> MQClientInstance:
        if self.state is not ServiceState.RUNNING or self.instance is None:
            raise ClientStateError(
                f"the producer is not running (state {self.state.value}): call start() first, "
                "or use it as a context manager"
            )
        return self.instance

    def _mq_admin(self) -> MQAdminImpl:
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.client.mq_admin_impl import MQAdminImpl

        return MQAdminImpl(self._running_instance(), self.config)

    # --- what the client instance asks -------------------------------------------------------

    def topics(self) -> set[str]:
        """The topics this producer has routes for (asked by the client instance)."""
        return set(self.publish_infos)

    def on_route_changed(self, topic: str, route: TopicRouteData) -> None:
        """Take a new route of ``topic`` (called by the client instance)."""
        info = publish_info_from_route(topic, route)
        old = self.publish_infos.get(topic)
        if old is not None:
            info.index = old.index
        self.publish_infos[topic] = info

    # --- routes ---------------------------------------------------------------------------------

    async def find_publish_info(self, topic: str) -> TopicPublishInfo | None:
        """Java's tryToFindTopicPublishInfo: the cached route, the name server's, or TBW102's."""
        info = self.publish_infos.get(topic)
        if info is not None and info.ok():
            return info
        instance = self._running_instance()
        self.publish_infos.setdefault(topic, TopicPublishInfo())
        await instance.update_topic_route(topic)
        info = self.publish_infos.get(topic)
        if info is not None and (info.have_topic_router_info or info.ok()):
            return info
        await instance.update_topic_route(topic, self.config.create_topic_key, self.config.default_topic_queue_nums)
        return self.publish_infos.get(topic)

    async def fetch_publish_message_queues(self, topic: str) -> list[MessageQueue]:
        """The writable queues of ``topic`` (Java's fetchPublishMessageQueues)."""
        info = await self._publish_info_or_raise(self.config.with_namespace(topic))
        return [MessageQueue(self.config.without_namespace(q.topic), q.broker_name, q.queue_id)
                for q in info.message_queues]

    async def _publish_info_or_raise(self, topic: str) -> TopicPublishInfo:
        info = await self.find_publish_info(topic)
        if info is not None and info.ok():
            return info
        if not self.config.namesrv_addresses():
            from rocketmq_py.errors import NoNameServerError

            raise NoNameServerError("no name server address: pass namesrv_addr='host:9876' or set NAMESRV_ADDR")
        raise NoRouteInfoError(
            f"no route info of this topic: {topic}; create the topic (mqadmin updateTopic) or enable "
            "autoCreateTopicEnable on the broker, and check the name server address"
        )

    # --- public send API ------------------------------------------------------------------------

    async def send(
        self,
        message: Message | Sequence[Message],
        queue: MessageQueue | None = None,
        *,
        selector: SelectorLike | None = None,
        arg: Any = None,
        timeout_ms: float | None = None,
    ) -> SendResult:
        """Send and wait for the broker's answer; retries as Java's sync send does.

        A list of messages is sent as one batch. With ``queue`` the message
        goes to that queue; with ``selector`` to the queue it picks for ``arg``
        (ordered messages); neither is retried, as in Java.
        """
        timeout = self.config.send_msg_timeout if timeout_ms is None else timeout_ms
        message = self.prepare_message(message)
        if selector is not None:
            return await self._send_select(message, selector, arg, CommunicationMode.SYNC, timeout)  # type: ignore
        if queue is not None:
            return await self._send_to_queue(message, queue, CommunicationMode.SYNC, timeout)  # type: ignore
        return await self._send_default(message, CommunicationMode.SYNC, timeout)  # type: ignore[return-value]

    def send_async(
        self,
        message: Message | Sequence[Message],
        queue: MessageQueue | None = None,
        *,
        selector: SelectorLike | None = None,
        arg: Any = None,
        timeout_ms: float | None = None,
    ) -> "asyncio.Task[SendResult]":
        """Start a send and return at once; the returned task gives the result.

        Errors are checked before anything is sent and raised here. A failed
        attempt is retried ``retry_times_when_send_async_failed`` times when
        the broker could not be reached, as Java's async send does.
        """
        self._running_instance()
        timeout = self.config.send_msg_timeout if timeout_ms is None else timeout_ms
        prepared = self.prepare_message(message)
        if selector is not None:
            work: Awaitable[Any] = self._send_select(prepared, selector, arg, CommunicationMode.ASYNC, timeout)
        elif queue is not None:
            work = self._send_to_queue(prepared, queue, CommunicationMode.ASYNC, timeout)
        else:
            work = self._send_default(prepared, CommunicationMode.ASYNC, timeout)
        task: asyncio.Task[SendResult] = asyncio.get_running_loop().create_task(work)  # type: ignore[arg-type]
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)
        return task

    async def send_oneway(
        self,
        message: Message | Sequence[Message],
        queue: MessageQueue | None = None,
        *,
        selector: SelectorLike | None = None,
        arg: Any = None,
    ) -> None:
        """Send without waiting for an answer (no result, no retry)."""
        timeout = self.config.send_msg_timeout
        message = self.prepare_message(message)
        if selector is not None:
            await self._send_select(message, selector, arg, CommunicationMode.ONEWAY, timeout)
        elif queue is not None:
            await self._send_to_queue(message, queue, CommunicationMode.ONEWAY, timeout)
        else:
            await self._send_default(message, CommunicationMode.ONEWAY, timeout)

    async def send_batch(self, messages: Sequence[Message], queue: MessageQueue | None = None, *,
                         timeout_ms: float | None = None) -> SendResult:
        """Send messages of one topic as one SEND_BATCH_MESSAGE request."""
        return await self.send(list(messages), queue, timeout_ms=timeout_ms)

    async def request(
        self,
        message: Message,
        timeout_ms: float | None = None,
        queue: MessageQueue | None = None,
        *,
        selector: SelectorLike | None = None,
        arg: Any = None,
    ) -> MessageExt:
        """Send a request message and wait for its reply (Java's request()); the reply comes back as a
        :class:`MessageExt` pushed by the broker. Raises :class:`RequestTimeoutError` when no reply
        arrives within ``timeout_ms`` (default ``send_msg_timeout``), sending included."""
        started = monotonic_ms()
        instance = self._running_instance()
        timeout = self.config.send_msg_timeout if timeout_ms is None else timeout_ms
        validators.check_message(message, self.config.max_message_size)
        from rocketmq_py.client.reply import new_correlation_id  # lazy: most producers never send requests

        correlation_id = new_correlation_id()
        message.properties[MessageConst.CORRELATION_ID] = correlation_id
        message.properties[MessageConst.MESSAGE_REPLY_TO_CLIENT] = instance.client_id
        message.properties[MessageConst.MESSAGE_TTL] = str(int(timeout))
        topic = self.config.with_namespace(message.topic)
        if topic not in instance.topic_routes:
            await self.find_publish_info(topic)
            await instance.send_heartbeat_to_all_brokers()
        reply = instance.reply_futures.expect(correlation_id)
        try:
            await self.send_async(message, queue, selector=selector, arg=arg, timeout_ms=timeout - (monotonic_ms() - started))
            remaining_s = max(timeout - (monotonic_ms() - started), 0.0) / 1000.0
            return await asyncio.wait_for(reply, remaining_s)
        except asyncio.TimeoutError:
            raise RequestTimeoutError(
                f"send request message to <{message.topic}> OK, but wait reply message timeout, {timeout:g} ms: "
                "is a consumer replying to this topic?"
            ) from None
        finally:
            instance.reply_futures.forget(correlation_id)

    # --- the send paths --------------------------------------------------------------------------

    def prepare_message(self, message: Message | Sequence[Message]) -> Message:
        """Validate (nothing is sent when this raises) and turn a list into a batch."""
        self._running_instance()
        if isinstance(message, Message):
            validators.check_message(message, self.config.max_message_size)
            return message
        if isinstance(message, (list, tuple)):
            messages = list(message)
            validators.check_batch(messages, self.config.max_message_size)
            assert self._ids is not None
            for item in messages:
                if UNIQ_KEY not in item.properties:
                    item.properties[UNIQ_KEY] = self._ids.next_id()
                item.topic = self.config.with_namespace(item.topic)
            batch = BatchMessage.from_messages(messages)
            validators.check_message(batch, self.config.max_message_size)
            return batch
        raise InvalidArgumentError(f"expected a Message or a list of messages, got {type(message).__name__}")

    async def _send_default(self, message: Message, mode: CommunicationMode, timeout_ms: float) -> SendResult | None:
        started = monotonic_ms()
        info = await self._publish_info_or_raise(self.config.with_namespace(message.topic))
        if mode is CommunicationMode.ASYNC:
            return await self._send_async_attempts(message, info, started, timeout_ms)
        attempts = self.sync_attempts(message, info, mode, timeout_ms, started)
        try:
            queue, remaining_ms = next(attempts)
            while True:
                try:
                    result = await self._send_kernel(message, queue, mode, remaining_ms)
                except BaseException as error:
                    queue, remaining_ms = attempts.throw(error)
                else:
                    queue, remaining_ms = attempts.send(result)
        except StopIteration as end:
            final: SendResult | None = end.value
            return final

    def sync_attempts(self, message: Message, info: TopicPublishInfo, mode: CommunicationMode, timeout_ms: float,
                      started: float) -> Generator[tuple[MessageQueue, float], SendResult | None, SendResult | None]:
        """Java's sync send loop (retries, fault avoidance) without its I/O, so that the asyncio send and the
        blocking send from the calling thread (:mod:`.direct`) share it.

        Yields the queue of each attempt and the time left for it (ms); the driver sends the attempt's result
        in, or throws its error in. Returns the final result, or raises as Java's sendDefaultImpl does.
        """
        total = 1 + self.config.retry_times_when_send_failed if mode is CommunicationMode.SYNC else 1
        queue: MessageQueue | None = None
        brokers_sent: list[str] = []
        last_error: BaseException | None = None
        result: SendResult | None = None
        timed_out = False
        for _ in range(total):
            queue = self.fault_strategy.select(info, None if queue is None else queue.broker_name)
            if queue is None:
                break
            brokers_sent.append(queue.broker_name)
            attempt_started = monotonic_ms()
            spent = attempt_started - started
            if spent > timeout_ms:
                timed_out = True
                break
            try:
                result = yield queue, timeout_ms - spent
            except (RemotingError, ClientError) as error:
                self.fault_strategy.update(queue.broker_name, monotonic_ms() - attempt_started, True)
                self._failures.failed(queue.broker_name, error, f"trying again (queue {queue.queue_id})")
                last_error = error
                continue
            except BrokerResponseError as error:
                self.fault_strategy.update(queue.broker_name, monotonic_ms() - attempt_started, True)
                last_error = error
                if error.code in self.config.retry_response_codes:
                    self._failures.failed(queue.broker_name, error, "refused, trying again")
                    continue
                if result is not None:
                    return result
                raise
            self.fault_strategy.update(queue.broker_name, monotonic_ms() - attempt_started, False)
            self._failures.succeeded(queue.broker_name)
            if mode is CommunicationMode.ONEWAY:
                return None
            assert result is not None
            if result.send_status is not SendStatus.SEND_OK and self.config.retry_another_broker_when_not_store_ok:
                continue
            return result
        if result is not None:
            return result
        if timed_out:
            raise SendTimeoutError(
                f"the send timeout of {timeout_ms:g} ms was used up before attempt {len(brokers_sent)} "
                f"to topic {message.topic}; raise send_msg_timeout or check the brokers"
            ) from last_error
        raise self._send_failed(message, brokers_sent, started, last_error)

    def _send_failed(self, message: Message, brokers: list[str], started: float,
                     error: BaseException | None) -> SendFailedError:
        code = -1
        if isinstance(error, BrokerResponseError):
            code = error.code
        elif isinstance(error, RemotingConnectError):
            code = ClientErrorCode.CONNECT_BROKER_EXCEPTION
        elif isinstance(error, RemotingTimeoutError):
            code = ClientErrorCode.ACCESS_BROKER_TIMEOUT
        elif isinstance(error, ClientError):
            code = ClientErrorCode.BROKER_NOT_EXIST_EXCEPTION
        failure = SendFailedError(
            f"send [{len(brokers)}] times, still failed, cost [{monotonic_ms() - started:.0f}]ms, topic: {message.topic}, "
            f"brokers sent: {brokers}; last error: {error}", code,
        )
        failure.__cause__ = error
        return failure

    async def _send_async_attempts(self, message: Message, info: TopicPublishInfo, started: float,
                                   timeout_ms: float) -> SendResult:
        queue = self.fault_strategy.select(info, None)
        if queue is None:
            raise NoRouteInfoError(f"no writable queue of topic {message.topic}")
        retries = self.config.retry_times_when_send_async_failed
        attempt = 0
        while True:
            attempt_started = monotonic_ms()
            spent = attempt_started - started
            if spent > timeout_ms:
                raise SendTimeoutError(f"the send timeout of {timeout_ms:g} ms was used up (topic {message.topic})")
            try:
                result = await self._send_kernel(message, queue, CommunicationMode.SYNC, timeout_ms - spent)
            except BrokerResponseError:
                self.fault_strategy.update(queue.broker_name, monotonic_ms() - attempt_started, True)
                raise
            except (RemotingError, ClientError) as error:
                self.fault_strategy.update(queue.broker_name, monotonic_ms() - attempt_started, True)
                attempt += 1
                if attempt > retries:
                    raise
                self._failures.failed(queue.broker_name, error, f"async send retry {attempt}")
                queue = self.fault_strategy.select(info, queue.broker_name) or queue
                continue
            self.fault_strategy.update(queue.broker_name, monotonic_ms() - attempt_started, False)
            self._failures.succeeded(queue.broker_name)
            assert result is not None
            return result

    async def _send_select(self, message: Message, selector: SelectorLike, arg: Any, mode: CommunicationMode,
                           timeout_ms: float) -> SendResult | None:
        started = monotonic_ms()
        info = await self._publish_info_or_raise(self.config.with_namespace(message.topic))
        chosen, remaining = self.selected_queue(info, message, selector, arg, started, timeout_ms)
        return await self._send_kernel(message, chosen, mode, remaining)

    def selected_queue(self, info: TopicPublishInfo, message: Message, selector: SelectorLike, arg: Any,
                       started: float, timeout_ms: float) -> tuple[MessageQueue, float]:
        """The queue ``selector`` picks for ``arg``, among the queues it is shown without the namespace, and the
        time left (ms) of a send that started at ``started``."""
        select = as_selector_function(selector)
        queues = [MessageQueue(self.config.without_namespace(q.topic), q.broker_name, q.queue_id)
                  for q in info.message_queues]
        chosen = select(queues, message, arg)
        if chosen is None:
            raise InvalidArgumentError("the message queue selector returned None: it must return one of the queues")
        spent = monotonic_ms() - started
        if spent > timeout_ms:
            raise SendTimeoutError(f"the send timeout of {timeout_ms:g} ms was used up while selecting a queue")
        return MessageQueue(self.config.with_namespace(chosen.topic), chosen.broker_name, chosen.queue_id), \
            timeout_ms - spent

    async def _send_to_queue(self, message: Message, queue: MessageQueue, mode: CommunicationMode,
                             timeout_ms: float) -> SendResult | None:
        return await self._send_kernel(message, self.target_queue(message, queue), mode, timeout_ms)

    def target_queue(self, message: Message, queue: MessageQueue) -> MessageQueue:
        """``queue``, given by the caller for ``message``, with the namespace; it must be of the message's topic."""
        topic = self.config.with_namespace(message.topic)
        if self.config.with_namespace(queue.topic) != topic:
            raise InvalidArgumentError(
                f"the message's topic {message.topic!r} is not the queue's topic {queue.topic!r}"
            )
        return MessageQueue(topic, queue.broker_name, queue.queue_id)

    async def _broker_address(self, queue: MessageQueue) -> str:
        instance = self._running_instance()
        addr = instance.find_broker_address_in_publish(queue.broker_name)
        if addr is None:
            await self.find_publish_info(queue.topic)
            addr = instance.find_broker_address_in_publish(queue.broker_name)
        if addr is None:
            raise no_broker_error(queue)
        return addr

    async def _send_kernel(self, message: Message, queue: MessageQueue, mode: CommunicationMode,
                           timeout_ms: float) -> SendResult | None:
        started = monotonic_ms()
        instance = self._running_instance()
        addr = await self._broker_address(queue)
        code, header, body, remaining = self.send_request_parts(message, queue, started, timeout_ms)
        if mode is CommunicationMode.ONEWAY:
            await instance.api.send_message_oneway(addr, code, header, body, remaining)
            return None
        try:
            response = await instance.api.send_message(addr, code, header, body, remaining)
        except BaseException as error:
            self._run_hooks(message, queue, addr, None, error, monotonic_ms() - started)
            raise
        result = self.send_result(message, queue, response)
        self._run_hooks(message, queue, addr, result, None, monotonic_ms() - started)
        return result

    def send_request_parts(self, message: Message, queue: MessageQueue, started: float, timeout_ms: float
                           ) -> tuple[int, SendMessageRequestHeaderV2, bytes, float]:
        """The request code, header and body that send ``message`` (prepared) to ``queue``, as Java's
        sendKernelImpl builds them, and the time left (ms) of an attempt that started at ``started``; gives the
        message its UNIQ_KEY when it has none."""
        # lazy: loaded with the first send, not at import (a repeated import is a lookup in sys.modules)
        from rocketmq_py import codec
        from rocketmq_py.common.headers.send import SendMessageRequestHeaderV2

        properties = message.properties
        is_batch = isinstance(message, BatchMessage)
        if not is_batch and UNIQ_KEY not in properties:
            assert self._ids is not None
            properties[UNIQ_KEY] = self._ids.next_id()
        if self.config.namespace:
            properties[MessageConst.INSTANCE_ID] = self.config.namespace
        body = message.body
        sys_flag = 0
        if not is_batch and len(body) >= self.config.compress_msg_body_over_howmuch:
            body = codec.compress(bytes(body), self._compression, self.config.compress_level)
            sys_flag |= sysflag.compressed_flag(self._compression)
        if properties.get(MessageConst.TRANSACTION_PREPARED) == "true":
            sys_flag |= sysflag.TRANSACTION_PREPARED_TYPE
        # Positional, in the declared field order: a class called with keywords pays for a dict on every send.
        header = SendMessageRequestHeaderV2(
            self.group,  # producer_group
            queue.topic,  # topic
            self.config.create_topic_key,  # default_topic
            self.config.default_topic_queue_nums,  # default_topic_queue_nums
            queue.queue_id,  # queue_id
            sys_flag,  # sys_flag
            now_ms(),  # born_timestamp
            message.flag,  # flag
            codec.properties_to_string(properties),  # properties
            0,  # reconsume_times
            False,  # unit_mode
            None,  # max_reconsume_times
            is_batch,  # batch
            queue.broker_name,  # broker_name
        )
        if queue.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            reconsume = properties.get(MessageConst.RECONSUME_TIME)
            if reconsume is not None:
                header.reconsume_times = int(reconsume)
            max_reconsume = properties.get(MessageConst.MAX_RECONSUME_TIMES)
            if max_reconsume is not None:
                header.max_reconsume_times = int(max_reconsume)
        if properties.get(MessageConst.MESSAGE_TYPE) == REPLY_MESSAGE_FLAG:
            code = RequestCode.SEND_REPLY_MESSAGE_V2
        elif is_batch:
            code = RequestCode.SEND_BATCH_MESSAGE
        else:
            code = RequestCode.SEND_MESSAGE_V2
        remaining = timeout_ms - (monotonic_ms() - started)
        if remaining <= 0:
            raise SendTimeoutError(f"the send timeout of {timeout_ms:g} ms was used up before the request was sent")
        return code, header, body, remaining

    def send_result(self, message: Message, queue: MessageQueue, response: RemotingCommand) -> SendResult:
        """The SendResult of a stored ``message`` from the broker's response."""
        ext = response.ext_fields or {}
        is_batch = isinstance(message, BatchMessage)
        return SendResult(
            SendStatus.from_response_code(response.code),
            message.msg_ids if is_batch else message.properties[UNIQ_KEY],  # type: ignore[attr-defined]
            ext.get("msgId", ""),
            MessageQueue(self.config.without_namespace(queue.topic), queue.broker_name, int(ext.get("queueId", -1))),
            int(ext.get("queueOffset", -1)),
            ext.get("transactionId"),
            ext.get(MessageConst.MSG_REGION) or "DefaultRegion",
            ext.get(MessageConst.TRACE_SWITCH) != "false",
        )

    def _run_hooks(self, message: Message, queue: MessageQueue, addr: str, result: SendResult | None,
                   error: BaseException | None, cost_ms: float) -> None:
        for hook in self.send_hooks:
            try:
                hook(message, queue, addr, result, error, cost_ms)
            except Exception:
                _log.exception("a send hook raised")

    # --- fault strategy (Java's updateFaultItem / selectOneMessageQueue, public for tests) -------

    def select_one_message_queue(self, info: TopicPublishInfo, last_broker_name: str | None) -> MessageQueue | None:
        """The queue the next send to ``info``'s topic goes to (fault avoidance included)."""
        return self.fault_strategy.select(info, last_broker_name)
