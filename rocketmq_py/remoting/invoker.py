"""The three ways to send a request over a connection (the invoke half of Java's ``NettyRemotingAbstract``).

* ``invoke``: wait for the response (Java's invokeSync);
* ``invoke_callback``: return once the request is written and hand the
  response, or the error that replaced it, to a callback (invokeAsync);
* ``invoke_oneway``: write the request with the oneway flag; no response
  comes (invokeOneway).

Async and oneway calls take a permit first, as Java's semaphores do: an async
permit is held until the response (or its timeout) arrives, a oneway permit
until the frame is written. A permit that cannot be had within the call's
timeout raises ``RemotingTooMuchRequestError``.
"""
from __future__ import annotations

import asyncio
import inspect
import logging
from collections import deque
from concurrent.futures import Executor
from typing import Any, Callable

from rocketmq_py.errors import RemotingSendRequestError, RemotingTimeoutError, RemotingTooMuchRequestError
from rocketmq_py.remoting.command import RemotingCommand, mark_oneway
from rocketmq_py.remoting.future import Outcome
from rocketmq_py.remoting.protocol import RemotingConnection

__all__ = ["Invoker", "InvokeCallback", "Permits"]

_log = logging.getLogger(__name__)

#: Called with the response, or with the ``RemotingError`` that ended the wait.
#: A coroutine function is run as a task on the event loop.
InvokeCallback = Callable[[Outcome], Any]


class Permits:
    """A counting semaphore whose timed acquire never loses a permit to a race with its timeout."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"a permit limit must be at least 1, not {limit}")
        self.limit = limit
        self._free = limit
        self._waiters: deque[asyncio.Future[bool]] = deque()

    @property
    def available(self) -> int:
        return self._free

    async def acquire(self, timeout_s: float) -> bool:
        """Take a permit, waiting up to ``timeout_s``; False when none came."""
        if self._free > 0 and not self._waiters:
            self._free -= 1
            return True
        if timeout_s <= 0:
            return False
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[bool] = loop.create_future()
        self._waiters.append(waiter)
        timer = loop.call_later(timeout_s, _resolve, waiter, False)
        try:
            return await waiter
        except asyncio.CancelledError:
            if _granted(waiter):
                self.release()
            raise
        finally:
            timer.cancel()
            if not _granted(waiter) and waiter in self._waiters:
                self._waiters.remove(waiter)

    def release(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(True)
                return
        self._free += 1


def _granted(waiter: asyncio.Future[bool]) -> bool:
    return waiter.done() and not waiter.cancelled() and waiter.result()


def _resolve(waiter: asyncio.Future[bool], value: bool) -> None:
    if not waiter.done():
        waiter.set_result(value)


class Invoker:
    """Sends requests over connections with Java's limits on async and oneway calls."""

    def __init__(self, async_permits: int, oneway_permits: int, callback_executor: Executor | None = None) -> None:
        self.async_permits = Permits(async_permits)
        self.oneway_permits = Permits(oneway_permits)
        self.callback_executor = callback_executor
        self._callback_tasks: set[asyncio.Task[Any]] = set()

    async def invoke(
        self, connection: RemotingConnection, request: RemotingCommand, timeout_ms: float,
    ) -> RemotingCommand:
        waiting = connection.expect_response(request.opaque, timeout_ms)
        try:
            await connection.send(request)
        except BaseException:
            waiting.discard()
            raise
        return await waiting.wait()

    async def invoke_callback(
        self,
        connection: RemotingConnection,
        request: RemotingCommand,
        timeout_ms: float,
        callback: InvokeCallback,
    ) -> None:
        loop = asyncio.get_running_loop()
        started = loop.time()
        await self._acquire(self.async_permits, timeout_ms, "async")
        remaining_ms = timeout_ms - (loop.time() - started) * 1000.0
        if remaining_ms <= 0:
            self.async_permits.release()
            raise RemotingTimeoutError(connection.remote_address, timeout_ms, request.opaque)
        try:
            waiting = connection.expect_response(
                request.opaque, remaining_ms, lambda outcome: self.run_callback(callback, outcome),
                self.async_permits.release,
            )
        except BaseException:
            self.async_permits.release()
            raise
        try:
            await connection.send(request)
        except RemotingSendRequestError:
            if waiting.done:
                return  # the connection broke after the write; the callback already has the error
            waiting.discard()
            raise
        except BaseException:
            waiting.discard()
            raise

    async def invoke_oneway(self, connection: RemotingConnection, request: RemotingCommand, timeout_ms: float) -> None:
        mark_oneway(request)
        await self._acquire(self.oneway_permits, timeout_ms, "oneway")
        try:
            await connection.send(request)
        finally:
            self.oneway_permits.release()

    def run_callback(self, callback: InvokeCallback, outcome: Outcome) -> None:
        """Run ``callback`` in the callback executor if there is one, else on the loop; log what it raises."""
        if inspect.iscoroutinefunction(callback):
            task = asyncio.get_running_loop().create_task(callback(outcome))
            self._callback_tasks.add(task)
            task.add_done_callback(self._callback_task_done)
            return
        if self.callback_executor is not None:
            try:
                self.callback_executor.submit(_call_logged, callback, outcome)
                return
            except RuntimeError:
                _log.warning("the callback executor is shut down; running the callback on the event loop")
        _call_logged(callback, outcome)

    def cancel_callbacks(self) -> None:
        for task in tuple(self._callback_tasks):
            task.cancel()

    def _callback_task_done(self, task: asyncio.Task[Any]) -> None:
        self._callback_tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            _log.error("an invoke callback raised", exc_info=task.exception())

    async def _acquire(self, permits: Permits, timeout_ms: float, kind: str) -> None:
        if not await permits.acquire(timeout_ms / 1000.0):
            raise RemotingTooMuchRequestError(
                f"{permits.limit} {kind} requests are already in flight and none finished within {timeout_ms:g} ms: "
                f"send more slowly or raise the {kind} request limit"
            )


def _call_logged(callback: InvokeCallback, outcome: Outcome) -> None:
    try:
        callback(outcome)
    except Exception:
        _log.exception("an invoke callback raised")
