"""Where concurrent listener calls run: worker tasks on the event loop (``async`` listeners) or worker threads
(plain functions), as many as ``consume_thread_min`` (Java's consume thread pool, whose unbounded queue never
lets it grow past its core size).

A request is taken by a worker, its listener call runs there, and the outcome
goes back to the event loop, which owns the process queues and offsets.
Threads hand their outcomes over in batches: one loop wake-up drains every
outcome that arrived since the last one.
"""
from __future__ import annotations

import asyncio
import collections
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
        self.active = 0

    def submit(self, request: R) -> None:
        self._queue.put_nowait(request)

    async def _work(self) -> None:
        while True:
            request = await self._queue.get()
            if request is None:
                return
            self.active += 1
            try:
                await self._consume(request)
            except asyncio.CancelledError:
                raise
            except Exception:
                _log.error("a consume request failed", exc_info=True)
            finally:
                self.active -= 1

    def pending(self) -> int:
        return self._queue.qsize()

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
    """``threads`` threads calling ``consume(request)``; ``finish(request, outcome)`` runs on the loop after."""

    def __init__(self, threads: int, consume: Callable[[R], Any], finish: Callable[[R, Any], None], name: str) -> None:
        self._loop = asyncio.get_running_loop()
        self._consume = consume
        self._finish = finish
        self._queue: "queue.SimpleQueue[R | None]" = queue.SimpleQueue()
        self._outcomes: collections.deque[tuple[R, Any]] = collections.deque()
        self._lock = threading.Lock()
        self._drain_scheduled = False
        self.active = 0
        self._threads = [threading.Thread(target=self._work, name=f"{name}_{i + 1}", daemon=True)
                         for i in range(threads)]
        for thread in self._threads:
            thread.start()

    def submit(self, request: R) -> None:
        self._queue.put(request)

    def pending(self) -> int:
        return self._queue.qsize()

    def _work(self) -> None:
        while True:
            request = self._queue.get()
            if request is None:
                return
            with self._lock:
                self.active += 1
            try:
                outcome = self._consume(request)
            except Exception:
                _log.error("a consume request failed", exc_info=True)
                outcome = None
            self._outcomes.append((request, outcome))
            with self._lock:
                self.active -= 1
                if self._drain_scheduled:
                    continue
                self._drain_scheduled = True
            try:
                self._loop.call_soon_threadsafe(self._drain)
            except RuntimeError:
                return  # the loop is closed: the consumer is gone

    def _drain(self) -> None:
        with self._lock:
            self._drain_scheduled = False
        outcomes = self._outcomes
        while outcomes:
            request, outcome = outcomes.popleft()
            try:
                self._finish(request, outcome)
            except Exception:
                _log.error("handling a consume outcome failed", exc_info=True)

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
        self._drain()
