"""The blocking consumers: the asyncio cores run on the process-wide background loop of the blocking clients
(shared with the blocking producers, so clients of one client id share one client instance, as in Java)."""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, ParamSpec, TypeVar

from rocketmq_py.client.mq_admin import BlockingMQAdminMethods
from rocketmq_py.client.producer.blocking import BlockingFacade

if TYPE_CHECKING:
    from rocketmq_py.client.consumer.config import LitePullConsumerConfig, PushConsumerConfig
    from rocketmq_py.client.consumer.listener import ListenerLike
    from rocketmq_py.client.consumer.lite_pull import AsyncLitePullConsumer
    from rocketmq_py.client.consumer.push import AsyncPushConsumer
    from rocketmq_py.client.consumer.rebalance_listener import RebalanceListener
    from rocketmq_py.client.consumer.stats import FlowControlTimes
    from rocketmq_py.common.filter import MessageSelector
    from rocketmq_py.common.message import MessageExt
    from rocketmq_py.common.message_queue import MessageQueue


class PushConsumer(BlockingMQAdminMethods, BlockingFacade):
    """A blocking push consumer: plain-function listeners run on ``consume_thread_min`` threads; the same
    arguments and methods as :class:`AsyncPushConsumer`."""

    def __init__(self, consumer_group: str | None = None, *, config: PushConsumerConfig | None = None,
                 rebalance_listener: RebalanceListener | None = None, **options: Any) -> None:
        # lazy: a PushConsumer program does not load the lite pull consumer, nor the reverse
        from rocketmq_py.client.consumer.push import AsyncPushConsumer

        super().__init__()
        self._core: AsyncPushConsumer = self._run(
            _make(AsyncPushConsumer, consumer_group, config, rebalance_listener, options))

    @property
    def core(self) -> AsyncPushConsumer:
        """The asyncio consumer underneath (it lives on the background loop)."""
        return self._core

    @property
    def config(self) -> PushConsumerConfig:
        """The settings (a copy made at construction; change them before :meth:`start`)."""
        return self._core.config

    @property
    def flow_control(self) -> FlowControlTimes:
        """How often pulls waited for the listener since :meth:`start` (a copy)."""
        return self._run(_call(dataclasses.replace, self._core.flow_control))

    def subscribe(self, topic: str, selector: MessageSelector | str | None = "*") -> None:
        """Consume ``topic``: ``selector`` is a tag expression (``"*"``, ``"TagA || TagB"``) or a
        :class:`MessageSelector`."""
        self._run(_call(self._core.subscribe, topic, selector))

    def unsubscribe(self, topic: str) -> None:
        """Stop consuming ``topic``."""
        self._run(_call(self._core.unsubscribe, topic))

    def register_message_listener(self, listener: ListenerLike, *, orderly: bool | None = None) -> None:
        """The listener, before :meth:`start`: a function ``(messages, context) -> status`` (run in a
        consume thread), or a MessageListenerConcurrently / MessageListenerOrderly object."""
        self._run(_call(self._core.register_message_listener, listener, orderly))

    def listener_for(self, orderly: bool = False) -> Callable[[_F], _F]:
        """Decorator form of :meth:`register_message_listener`: ``@consumer.listener_for()``."""
        def register(function: _F) -> _F:
            self.register_message_listener(function, orderly=orderly)
            return function
        return register

    def start(self) -> None:
        """Validate the settings, connect and start consuming (see :meth:`AsyncPushConsumer.start`)."""
        self._run(self._core.start())

    def shutdown(self) -> None:
        """Stop pulling, let listener calls in progress finish, commit the offsets and disconnect."""
        self._run(self._core.shutdown())

    def close(self) -> None:
        """The same as :meth:`shutdown`."""
        self.shutdown()

    def __enter__(self) -> "PushConsumer":
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()

    def suspend(self) -> None:
        """Pause pulling; messages already pulled are still consumed."""
        self._run(_call(self._core.suspend))

    def resume(self) -> None:
        """Resume pulling after :meth:`suspend`."""
        self._run(_call(self._core.resume))


class LitePullConsumer(BlockingMQAdminMethods, BlockingFacade):
    """A blocking lite pull consumer; the same arguments and methods as :class:`AsyncLitePullConsumer`."""

    def __init__(self, consumer_group: str | None = None, *, config: LitePullConsumerConfig | None = None,
                 rebalance_listener: RebalanceListener | None = None, **options: Any) -> None:
        # lazy: a PushConsumer program does not load the lite pull consumer, nor the reverse
        from rocketmq_py.client.consumer.lite_pull import AsyncLitePullConsumer

        super().__init__()
        self._core: AsyncLitePullConsumer = self._run(
            _make(AsyncLitePullConsumer, consumer_group, config, rebalance_listener, options))

    @property
    def core(self) -> AsyncLitePullConsumer:
        """The asyncio consumer underneath (it lives on the background loop)."""
        return self._core

    @property
    def config(self) -> LitePullConsumerConfig:
        """The settings (a copy made at construction; change them before :meth:`start`)."""
        return self._core.config

    def start(self) -> None:
        """Validate the settings, connect and start pulling (see :meth:`AsyncLitePullConsumer.start`)."""
        self._run(self._core.start())

    def shutdown(self) -> None:
        """Stop pulling, commit what was handed out and disconnect; a ``for`` loop over the consumer ends."""
        self._run(self._core.shutdown())

    def close(self) -> None:
        """The same as :meth:`shutdown`."""
        self.shutdown()

    def __enter__(self) -> "LitePullConsumer":
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()

    def __iter__(self) -> Iterator[MessageExt]:
        """``for message in consumer`` (see :meth:`__next__`)."""
        return self

    def __next__(self) -> MessageExt:
        """``for message in consumer``: the next message, waiting as long as it takes; the loop ends when
        the consumer shuts down (from another thread). Offsets move as with :meth:`poll`."""
        message = self._run(_next_or_none(self._core))
        if message is None:
            raise StopIteration
        return message

    def subscribe(self, topic: str, selector: MessageSelector | str | None = "*") -> None:
        """Consume ``topic`` with the group's rebalance (``selector``: tag expression or MessageSelector)."""
        self._run(_call(self._core.subscribe, topic, selector))

    def unsubscribe(self, topic: str) -> None:
        """Stop consuming ``topic``."""
        self._run(_call(self._core.unsubscribe, topic))

    def assign(self, queues: Iterable[MessageQueue]) -> None:
        """Consume exactly these queues (no rebalance; exclusive with :meth:`subscribe`)."""
        self._run(_call(self._core.assign, list(queues)))

    def assignment(self) -> set[MessageQueue]:
        """The queues this consumer pulls now."""
        return self._run(_call(self._core.assignment))

    def set_sub_expression_for_assign(self, topic: str, expression: str) -> None:
        """The tag expression for assigned queues of ``topic`` (before :meth:`start`)."""
        self._run(_call(self._core.set_sub_expression_for_assign, topic, expression))

    def poll(self, timeout_ms: float | None = None) -> list[MessageExt]:
        """The next pulled messages, or [] when none came within ``timeout_ms`` (default
        ``poll_timeout_millis``)."""
        return self._run(self._core.poll(timeout_ms))

    def seek(self, queue: MessageQueue, offset: int) -> None:
        """Pull ``queue`` from ``offset`` next; InvalidArgumentError, and no change, when ``offset`` is outside
        the queue's min and max offsets (as Java's seek)."""
        self._run(self._core._seek_checked(queue, offset))

    def seek_to_begin(self, queue: MessageQueue) -> None:
        """Pull ``queue`` from its first offset next."""
        self._run(self._core.seek_to_begin(queue))

    def seek_to_end(self, queue: MessageQueue) -> None:
        """Pull ``queue`` from its end next (only new messages)."""
        self._run(self._core.seek_to_end(queue))

    def offset_for_timestamp(self, queue: MessageQueue, timestamp_ms: int) -> int:
        """The first offset of ``queue`` stored at or after ``timestamp_ms``."""
        return self._run(self._core.offset_for_timestamp(queue, timestamp_ms))

    def committed(self, queue: MessageQueue) -> int:
        """The committed offset of ``queue`` (from the broker or the local file)."""
        return self._run(self._core.committed(queue))

    def commit(self, offsets: Mapping[MessageQueue, int] | Iterable[MessageQueue] | None = None,
               persist: bool = True) -> None:
        """Commit what was handed out (all queues, or the given ones), or the given ``{queue: offset}``;
        ``persist`` writes them to the broker now."""
        self._run(self._core.commit(offsets, persist))

    def commit_sync(self) -> None:
        """Commit every assigned queue and write the offsets now."""
        self._run(self._core.commit_sync())

    def pause(self, queues: Iterable[MessageQueue]) -> None:
        """Stop pulling these queues until :meth:`resume`."""
        self._run(_call(self._core.pause, list(queues)))

    def resume(self, queues: Iterable[MessageQueue]) -> None:
        """Pull these queues again."""
        self._run(_call(self._core.resume, list(queues)))

    def is_paused(self, queue: MessageQueue) -> bool:
        """Whether ``queue`` is paused."""
        return self._run(_call(self._core.is_paused, queue))

    def fetch_message_queues(self, topic: str) -> set[MessageQueue]:
        """The readable queues of ``topic``."""
        return self._run(self._core.fetch_message_queues(topic))


_F = TypeVar("_F", bound=Callable[..., Any])
_T = TypeVar("_T")
_P = ParamSpec("_P")


async def _make(kind: type, group: str | None, config: Any, rebalance_listener: RebalanceListener | None,
                options: dict[str, Any]) -> Any:
    """Build an asyncio core on the background loop (it creates loop-bound objects)."""
    return kind(group, config=config, rebalance_listener=rebalance_listener, **options)


async def _next_or_none(consumer: AsyncLitePullConsumer) -> MessageExt | None:
    """The next message of ``async for``, or None when the loop ended (StopAsyncIteration cannot cross
    into the calling thread as such)."""
    try:
        return await consumer.__anext__()
    except StopAsyncIteration:
        return None


async def _call(function: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
    """Run a plain method of an asyncio core on its loop (its state belongs to that loop)."""
    return function(*args, **kwargs)
