"""The blocking consumers: the asyncio cores run on the process-wide background loop of the blocking clients
(shared with the blocking producers, so clients of one client id share one client instance, as in Java)."""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from rocketmq_py.client.consumer.config import LitePullConsumerConfig, PushConsumerConfig
from rocketmq_py.client.consumer.lite_pull import AsyncLitePullConsumer
from rocketmq_py.client.consumer.listener import ListenerLike
from rocketmq_py.client.consumer.push import AsyncPushConsumer
from rocketmq_py.client.producer.blocking import BlockingFacade
from rocketmq_py.common.filter import MessageSelector
from rocketmq_py.common.message import MessageExt
from rocketmq_py.common.message_queue import MessageQueue


class PushConsumer(BlockingFacade):
    """A blocking push consumer: plain-function listeners run on ``consume_thread_min`` threads; the same
    arguments and methods as :class:`AsyncPushConsumer`."""

    def __init__(self, consumer_group: str | None = None, *, config: PushConsumerConfig | None = None,
                 **options: Any) -> None:
        super().__init__()
        self._core = self._run(_make(AsyncPushConsumer, consumer_group, config, options))

    @property
    def core(self) -> AsyncPushConsumer:
        """The asyncio consumer underneath (it lives on the background loop)."""
        return self._core

    @property
    def config(self) -> PushConsumerConfig:
        return self._core.config

    def subscribe(self, topic: str, selector: MessageSelector | str | None = "*") -> None:
        self._run(_call(self._core.subscribe, topic, selector))

    def unsubscribe(self, topic: str) -> None:
        self._run(_call(self._core.unsubscribe, topic))

    def register_message_listener(self, listener: ListenerLike, *, orderly: bool | None = None) -> None:
        self._run(_call(self._core.register_message_listener, listener, orderly))

    def listener_for(self, orderly: bool = False) -> Any:
        """Decorator form of :meth:`register_message_listener`: ``@consumer.listener_for()``."""
        def register(function: Any) -> Any:
            self.register_message_listener(function, orderly=orderly)
            return function
        return register

    def start(self) -> None:
        self._run(self._core.start())

    def shutdown(self) -> None:
        self._run(self._core.shutdown())

    def __enter__(self) -> "PushConsumer":
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()

    def suspend(self) -> None:
        self._run(_call(self._core.suspend))

    def resume(self) -> None:
        self._run(_call(self._core.resume))


class LitePullConsumer(BlockingFacade):
    """A blocking lite pull consumer; the same arguments and methods as :class:`AsyncLitePullConsumer`."""

    def __init__(self, consumer_group: str | None = None, *, config: LitePullConsumerConfig | None = None,
                 **options: Any) -> None:
        super().__init__()
        self._core = self._run(_make(AsyncLitePullConsumer, consumer_group, config, options))

    @property
    def core(self) -> AsyncLitePullConsumer:
        """The asyncio consumer underneath (it lives on the background loop)."""
        return self._core

    @property
    def config(self) -> LitePullConsumerConfig:
        return self._core.config

    def start(self) -> None:
        self._run(self._core.start())

    def shutdown(self) -> None:
        self._run(self._core.shutdown())

    def __enter__(self) -> "LitePullConsumer":
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()

    def subscribe(self, topic: str, selector: MessageSelector | str | None = "*") -> None:
        self._run(self._core.subscribe(topic, selector))

    def unsubscribe(self, topic: str) -> None:
        self._run(_call(self._core.unsubscribe, topic))

    def assign(self, queues: Iterable[MessageQueue]) -> None:
        self._run(_call(self._core.assign, list(queues)))

    def assignment(self) -> set[MessageQueue]:
        return self._run(_call(self._core.assignment))

    def set_sub_expression_for_assign(self, topic: str, expression: str) -> None:
        self._run(_call(self._core.set_sub_expression_for_assign, topic, expression))

    def poll(self, timeout_ms: float | None = None) -> list[MessageExt]:
        return self._run(self._core.poll(timeout_ms))

    def seek(self, queue: MessageQueue, offset: int) -> None:
        self._run(self._core.seek(queue, offset))

    def seek_to_begin(self, queue: MessageQueue) -> None:
        self._run(self._core.seek_to_begin(queue))

    def seek_to_end(self, queue: MessageQueue) -> None:
        self._run(self._core.seek_to_end(queue))

    def offset_for_timestamp(self, queue: MessageQueue, timestamp_ms: int) -> int:
        return self._run(self._core.offset_for_timestamp(queue, timestamp_ms))

    def committed(self, queue: MessageQueue) -> int:
        return self._run(self._core.committed(queue))

    def commit(self, offsets: Mapping[MessageQueue, int] | Iterable[MessageQueue] | None = None,
               persist: bool = True) -> None:
        self._run(self._core.commit(offsets, persist))

    def commit_sync(self) -> None:
        self._run(self._core.commit_sync())

    def pause(self, queues: Iterable[MessageQueue]) -> None:
        self._run(_call(self._core.pause, list(queues)))

    def resume(self, queues: Iterable[MessageQueue]) -> None:
        self._run(_call(self._core.resume, list(queues)))

    def is_paused(self, queue: MessageQueue) -> bool:
        return self._run(_call(self._core.is_paused, queue))

    def fetch_message_queues(self, topic: str) -> set[MessageQueue]:
        return self._run(self._core.fetch_message_queues(topic))

    def min_offset(self, queue: MessageQueue) -> int:
        return self._run(self._core.min_offset(queue))

    def max_offset(self, queue: MessageQueue) -> int:
        return self._run(self._core.max_offset(queue))


async def _make(kind: type, group: str | None, config: Any, options: dict[str, Any]) -> Any:
    """Build an asyncio core on the background loop (it creates loop-bound objects)."""
    return kind(group, config=config, **options)


async def _call(function: Any, *args: Any) -> Any:
    """Run a plain method of an asyncio core on its loop (its state belongs to that loop)."""
    return function(*args)
