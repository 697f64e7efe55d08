"""Blocking APIs over the asyncio core: the core runs on an event loop in a daemon thread.

The producer and consumer build their blocking classes the same way as
:class:`BlockingRemotingClient` does here: every method hands a coroutine of
the asyncio object to :meth:`BackgroundLoop.run` and waits. A blocking method
called from the loop's own thread would wait for itself forever, so it raises
``RuntimeError`` instead.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Coroutine, Generic, TypeVar

from rocketmq_py.remoting.loop import new_event_loop

if TYPE_CHECKING:
    from rocketmq_py.remoting.client import RemotingClient
    from rocketmq_py.remoting.command import RemotingCommand
    from rocketmq_py.remoting.config import RemotingClientConfig
    from rocketmq_py.remoting.invoker import InvokeCallback
    from rocketmq_py.remoting.processor import ProcessorTable

__all__ = ["BackgroundLoop", "BlockingRemotingClient"]

_log = logging.getLogger(__name__)
_T = TypeVar("_T")

_CLOSE_TIMEOUT_S = 10.0


class BackgroundLoop:
    """An event loop (uvloop when available) running in a daemon thread until :meth:`close`."""

    def __init__(self, name: str = "rocketmq-py-loop") -> None:
        self._loop = new_event_loop()
        self._closed = False
        started = threading.Event()
        self._thread = threading.Thread(target=self._run_forever, args=(started,), name=name, daemon=True)
        self._thread.start()
        started.wait()

    def _run_forever(self, started: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.call_soon(started.set)
        self._loop.run_forever()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    @property
    def is_closed(self) -> bool:
        return self._closed

    def in_loop_thread(self) -> bool:
        """True when called from the thread that runs the loop."""
        return threading.get_ident() == self._thread.ident

    def submit(self, coro: Coroutine[Any, Any, _T]) -> concurrent.futures.Future[_T]:
        """Schedule ``coro`` on the loop; the future resolves with its result or exception."""
        if self._closed:
            coro.close()
            raise RuntimeError("the background loop is closed")
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def run(self, coro: Coroutine[Any, Any, _T], timeout: float | None = None) -> _T:
        """Run ``coro`` on the loop and block until it ends; its exception is raised as is.

        ``timeout`` (seconds) cancels the coroutine and raises ``TimeoutError``.
        """
        if self.in_loop_thread():
            coro.close()
            raise RuntimeError(
                "a blocking call was made from the event loop thread it would wait on, which would deadlock; "
                "from a coroutine or a callback on that loop, await the asyncio API instead"
            )
        if self._closed:
            coro.close()
            raise RuntimeError("the background loop is closed")
        # The hop costs two thread switches whatever is done, so nothing else is added to it: one callback
        # starts the task, its done callback releases a plain lock (run_coroutine_threadsafe would also
        # chain a concurrent Future to the task, through two more callbacks and a condition variable).
        call = _Call(self._loop, coro)
        self._loop.call_soon_threadsafe(call.start)
        if not call.finished.acquire(timeout=-1 if timeout is None else max(timeout, 0)):
            self._loop.call_soon_threadsafe(call.cancel)
            raise TimeoutError(f"the call did not finish within {timeout} s and was cancelled")
        return call.result()

    def close(self) -> None:
        """Cancel what still runs on the loop, stop it and join its thread."""
        if self.in_loop_thread():
            raise RuntimeError("the background loop cannot be closed from its own thread")
        if self._closed:
            return
        try:
            asyncio.run_coroutine_threadsafe(_cancel_everything(), self._loop).result(_CLOSE_TIMEOUT_S)
        except concurrent.futures.TimeoutError:
            _log.warning("tasks on the background loop did not end within %.0f s of being cancelled", _CLOSE_TIMEOUT_S)
        self._closed = True
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def __enter__(self) -> BackgroundLoop:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class _Call(Generic[_T]):
    """One coroutine run for a blocked thread: started on the loop, its end signalled by releasing a lock."""

    __slots__ = ("_loop", "_coro", "_task", "finished")

    def __init__(self, loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, _T]) -> None:
        self._loop = loop
        self._coro = coro
        self._task: asyncio.Task[_T] | None = None
        self.finished = threading.Lock()
        self.finished.acquire()

    def start(self) -> None:
        try:
            self._task = self._loop.create_task(self._coro)
        except BaseException:
            self._coro.close()
            self.finished.release()
            raise
        self._task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[_T]) -> None:
        self.finished.release()

    def cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()

    def result(self) -> _T:
        task = self._task
        if task is None:
            raise RuntimeError("the background loop could not start the call")
        if task.cancelled():
            raise concurrent.futures.CancelledError()
        return task.result()


async def _cancel_everything() -> None:
    current = asyncio.current_task()
    tasks = [task for task in asyncio.all_tasks() if task is not current]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.get_running_loop().shutdown_asyncgens()


class BlockingRemotingClient:
    """A blocking :class:`RemotingClient`, to be called from ordinary threads.

    Callbacks run in ``callback_executor`` (by default a small pool owned by
    this client), so they may call the blocking methods themselves.
    """

    def __init__(
        self,
        processors: ProcessorTable | None = None,
        *,
        config: RemotingClientConfig | None = None,
        loop: BackgroundLoop | None = None,
        callback_executor: Executor | None = None,
    ) -> None:
        self._owns_loop = loop is None
        self._loop = loop if loop is not None else BackgroundLoop()
        self._owns_executor = callback_executor is None
        self._callback_executor = callback_executor if callback_executor is not None else ThreadPoolExecutor(
            max_workers=4, thread_name_prefix="rocketmq-py-callback",
        )
        # lazy: the blocking producer and consumers import this module for BackgroundLoop alone
        from rocketmq_py.remoting.client import RemotingClient

        self.client = RemotingClient(processors, config=config, callback_executor=self._callback_executor)

    @property
    def background_loop(self) -> BackgroundLoop:
        return self._loop

    def invoke(self, addr: str, request: RemotingCommand, timeout_ms: float) -> RemotingCommand:
        return self._loop.run(self.client.invoke(addr, request, timeout_ms))

    def invoke_callback(self, addr: str, request: RemotingCommand, timeout_ms: float, callback: InvokeCallback) -> None:
        self._loop.run(self.client.invoke_callback(addr, request, timeout_ms, callback))

    def invoke_oneway(self, addr: str, request: RemotingCommand, timeout_ms: float) -> None:
        self._loop.run(self.client.invoke_oneway(addr, request, timeout_ms))

    def close(self) -> None:
        """Close the connections; also the loop and the callback pool when this client made them."""
        if not self._loop.is_closed:
            self._loop.run(self.client.shutdown())
        if self._owns_executor:
            self._callback_executor.shutdown(wait=False)
        if self._owns_loop:
            self._loop.close()

    def __enter__(self) -> BlockingRemotingClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
