"""Where listener calls run: worker tasks on the event loop (``async`` listeners) or worker threads (plain
functions), as many as ``consume_thread_min`` (Java's consume thread pool, whose unbounded queue never lets it
grow past its core size).

A thread runs a request to the end, the handling of its result included, as
Java's consume threads do: the event loop is not woken for each result, so it
is free for the pulls, whose round trips set the pace of the consumer.
"""
from __future__ import annotations

import asyncio
import logging
import queue
import threading
from typing import Any, Callable, Generic, TypeVar

_log = logging.getLogger(__name__)

R = TypeVar("R")


class AsyncRunner(Generic[R]):
    """``workers`` tasks awaiting ``consume(request)`` for each submitted request."""

    def __init__(self, workers: int, consume: Callable[[R], Any], name: str) -> None:
        self._queue: asyncio.Queue[R | None] = asyncio.Queue()
        self._consume = consume
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._work(), name=f"{name}_{i + 1}") for i in range(workers)]

    def submit(self, request: R) -> None:
        self._queue.put_nowait(request)

    async def _work(self) -> None:
        while True:
            request = await self._queue.get()
            if request is None:
                return
            try:
                await self._consume(request)
            except asyncio.CancelledError:
                raise
            except Exception:
                _log.error("a consume request failed", exc_info=True)

    async def shutdown(self, timeout_s: float) -> None:
        """Drop what waits, let the calls in progress finish (up to ``timeout_s``), stop the workers."""
        while not self._queue.empty():
            self._queue.get_nowait()
        for _ in self._tasks:
            self._queue.put_nowait(None)
        done, running = await asyncio.wait(self._tasks, timeout=timeout_s)
        for task in running:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


class ThreadRunner(Generic[R]):
    """``threads`` threads calling ``consume(request)`` for each submitted request."""

    def __init__(self, threads: int, consume: Callable[[R], Any], name: str) -> None:
        self._consume = consume
        self._queue: "queue.SimpleQueue[R | None]" = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._work, name=f"{name}_{i + 1}", daemon=True)
                         for i in range(threads)]
        for thread in self._threads:
            thread.start()

    def submit(self, request: R) -> None:
        self._queue.put(request)

    def _work(self) -> None:
        while True:
            request = self._queue.get()
            if request is None:
                return
            try:
                self._consume(request)
            except Exception:
                _log.error("a consume request failed", exc_info=True)

    async def shutdown(self, timeout_s: float) -> None:
        """Drop what waits, let the calls in progress finish (up to ``timeout_s``), stop the threads."""
        try:
            while True:
                self._queue.get_nowait()
        except queue.Empty:
            pass
        for _ in self._threads:
            self._queue.put(None)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        for thread in self._threads:
            remaining = max(0.0, deadline - loop.time())
            await loop.run_in_executor(None, thread.join, remaining)
            if thread.is_alive():
                _log.warning("consume thread %s is still in its listener after %.0f s; leaving it", thread.name,
                             timeout_s)
