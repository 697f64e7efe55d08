"""The blocking producer: the asyncio core run on a background event loop.

Every blocking producer of a process shares one background loop, so
producers with the same client id share one client instance, as in Java.
Callbacks of :meth:`Producer.send_async` run in a small thread pool, so they
may call the blocking methods themselves.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Callable, Coroutine, Sequence, TypeVar

from rocketmq_py.client.mq_admin import BlockingMQAdminMethods
from rocketmq_py.client.producer.core import AsyncProducer
from rocketmq_py.client.producer.result import SendResult
from rocketmq_py.remoting.blocking import BackgroundLoop

if TYPE_CHECKING:
    from rocketmq_py.client.config import ProducerConfig
    from rocketmq_py.client.producer.direct import DirectSender
    from rocketmq_py.client.producer.selector import SelectorLike
    from rocketmq_py.common.message import Message, MessageExt
    from rocketmq_py.common.message_queue import MessageQueue

_T = TypeVar("_T")
_Self = TypeVar("_Self", bound="Producer")

_shared_lock = threading.Lock()
_shared_loop: BackgroundLoop | None = None
_shared_executor: ThreadPoolExecutor | None = None


def shared_loop() -> BackgroundLoop:
    """The process-wide background loop of the blocking clients."""
    global _shared_loop
    with _shared_lock:
        if _shared_loop is None or _shared_loop.is_closed:
            _shared_loop = BackgroundLoop("rocketmq-py-client")
        return _shared_loop


def callback_executor() -> ThreadPoolExecutor:
    """The small thread pool where the callbacks of the blocking clients' async calls run."""
    global _shared_executor
    with _shared_lock:
        if _shared_executor is None:
            _shared_executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="rocketmq-py-callback")
        return _shared_executor


OnSuccess = Callable[[SendResult], Any]
OnException = Callable[[BaseException], Any]


class BlockingFacade:
    """Runs the coroutines of an asyncio client on the shared background loop."""

    def __init__(self) -> None:
        self._loop = shared_loop()

    def _run(self, coro: Coroutine[Any, Any, _T]) -> _T:
        return self._loop.run(coro)


class Producer(BlockingMQAdminMethods, BlockingFacade):
    """A blocking producer; the same arguments and methods as :class:`AsyncProducer`, without ``await``."""

    def __init__(self, producer_group: str | None = None, *, config: ProducerConfig | None = None,
                 **options: Any) -> None:
        super().__init__()
        self._core: AsyncProducer = self._make_core(producer_group, config, options)
        self._direct: DirectSender | None = None

    def _make_core(self, producer_group: str | None, config: ProducerConfig | None,
                   options: dict[str, Any]) -> AsyncProducer:
        return AsyncProducer(producer_group, config=config, **options)

    @property
    def config(self) -> ProducerConfig:
        """The settings (a copy made at construction; change them before :meth:`start`)."""
        return self._core.config

    @property
    def core(self) -> AsyncProducer:
        """The asyncio producer underneath (it lives on the background loop)."""
        return self._core

    def start(self) -> None:
        """Validate the settings and connect (see :meth:`AsyncProducer.start`); a producer starts once."""
        self._run(self._core.start())
        if self._core.config.send_in_calling_thread:
            # lazy: the remoting client comes with start, not with the import (tests/test_import_cost.py)
            from rocketmq_py.client.producer.direct import DirectSender

            self._direct = DirectSender(self._core, self._loop)

    def shutdown(self) -> None:
        """Wait for the sends in flight, then disconnect (see :meth:`AsyncProducer.shutdown`)."""
        try:
            self._run(self._core.shutdown())
        finally:
            if self._direct is not None:
                self._direct.close()

    def close(self) -> None:
        """The same as :meth:`shutdown`."""
        self.shutdown()

    def flush(self, timeout_ms: float | None = None) -> None:
        """Wait until every send started by :meth:`send_async` so far has ended (see
        :meth:`AsyncProducer.flush`); their callbacks may still be running in the callback threads."""
        self._run(self._core.flush(timeout_ms))

    def __enter__(self: _Self) -> _Self:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()

    def send(self, message: Message | Sequence[Message], queue: MessageQueue | None = None, *,
             selector: SelectorLike | None = None, arg: Any = None, timeout_ms: float | None = None) -> SendResult:
        """Send and wait for the broker's answer, retrying as Java's sync send does; a list of messages is
        one batch. ``queue`` or ``selector`` + ``arg`` pick the queue (then no retry). See
        :meth:`AsyncProducer.send`. Safe to call from many threads at once; each sends on its own connection
        (``ProducerConfig.send_in_calling_thread``)."""
        if self._direct is not None:
            result = self._direct.send(message, queue, selector, arg, timeout_ms)
            if result is not None:
                return result
        return self._run(self._core.send(message, queue, selector=selector, arg=arg, timeout_ms=timeout_ms))

    def send_batch(self, messages: Sequence[Message], queue: MessageQueue | None = None, *,
                   timeout_ms: float | None = None) -> SendResult:
        """Send messages of one topic as one batch request."""
        return self._run(self._core.send_batch(messages, queue, timeout_ms=timeout_ms))

    def send_oneway(self, message: Message | Sequence[Message], queue: MessageQueue | None = None, *,
                    selector: SelectorLike | None = None, arg: Any = None) -> None:
        """Send without waiting for an answer: no result, no retry."""
        self._run(self._core.send_oneway(message, queue, selector=selector, arg=arg))

    def send_async(
        self,
        message: Message | Sequence[Message],
        queue: MessageQueue | None = None,
        *,
        selector: SelectorLike | None = None,
        arg: Any = None,
        timeout_ms: float | None = None,
        on_success: OnSuccess | None = None,
        on_exception: OnException | None = None,
    ) -> "concurrent.futures.Future[SendResult]":
        """Start a send and return at once: a future of the result; ``on_success`` / ``on_exception``
        (Java's SendCallback) run in a callback thread when it ends. Bad input raises here."""
        result: concurrent.futures.Future[SendResult] = concurrent.futures.Future()

        async def start() -> None:
            task = self._core.send_async(message, queue, selector=selector, arg=arg, timeout_ms=timeout_ms)
            task.add_done_callback(lambda done: callback_executor().submit(self._finish, done, result,
                                                                           on_success, on_exception))

        self._run(start())
        return result

    @staticmethod
    def _finish(task: Any, result: "concurrent.futures.Future[Any]", on_success: Callable[[Any], Any] | None,
                on_exception: OnException | None) -> None:
        error = task.exception() if not task.cancelled() else concurrent.futures.CancelledError()
        try:
            if error is None:
                if on_success is not None:
                    on_success(task.result())
            elif on_exception is not None:
                on_exception(error)
        finally:
            if error is None:
                result.set_result(task.result())
            else:
                result.set_exception(error)

    def request(self, message: Message, timeout_ms: float | None = None, queue: MessageQueue | None = None, *,
                selector: SelectorLike | None = None, arg: Any = None) -> MessageExt:
        """Send a request message and wait for the reply (see :meth:`AsyncProducer.request`)."""
        return self._run(self._core.request(message, timeout_ms, queue, selector=selector, arg=arg))

    def request_async(
        self,
        message: Message,
        timeout_ms: float | None = None,
        queue: MessageQueue | None = None,
        *,
        selector: SelectorLike | None = None,
        arg: Any = None,
        on_success: Callable[[MessageExt], Any] | None = None,
        on_exception: OnException | None = None,
    ) -> "concurrent.futures.Future[MessageExt]":
        """Start a request and return at once: a future of the reply; the callbacks (Java's
        RequestCallback) run in a callback thread."""
        result: concurrent.futures.Future[MessageExt] = concurrent.futures.Future()

        async def start() -> None:
            task = asyncio.get_running_loop().create_task(
                self._core.request(message, timeout_ms, queue, selector=selector, arg=arg))
            task.add_done_callback(lambda done: callback_executor().submit(self._finish, done, result,
                                                                           on_success, on_exception))

        self._run(start())
        return result

    def send_reply(self, request: Message, body: bytes, timeout_ms: float | None = None) -> SendResult:
        """Create the reply to a received request message and send it (the consumer-side helper)."""
        from rocketmq_py.client.producer.request import send_reply

        return self._run(send_reply(self._core, request, body, timeout_ms))

    def fetch_publish_message_queues(self, topic: str) -> list[MessageQueue]:
        """The writable queues of ``topic``."""
        return self._run(self._core.fetch_publish_message_queues(topic))
