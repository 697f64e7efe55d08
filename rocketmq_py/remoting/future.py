"""One request waiting for its response (Java's ``ResponseFuture``).

It sits in its connection's pending table under the request's opaque and
ends exactly once: with the response, with a timeout, or with the error that
broke the connection. Ending it removes it from the table, gives back the
permit of an async call, and either wakes the awaiting caller or runs the
callback.
"""
from __future__ import annotations

import asyncio
from typing import Callable, Union

from rocketmq_py.errors import RemotingError, RemotingTimeoutError
from rocketmq_py.remoting.command import RemotingCommand

__all__ = ["ResponseFuture", "Outcome"]

#: What a callback receives: the response, or the error that replaced it.
Outcome = Union[RemotingCommand, RemotingError]


class ResponseFuture:
    __slots__ = (
        "opaque", "remote_address", "timeout_ms",
        "_table", "_future", "_callback", "_on_done", "_on_discard", "_timer", "_done",
    )

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        table: dict[int, ResponseFuture],
        opaque: int,
        remote_address: str,
        timeout_ms: float,
        callback: Callable[[Outcome], None] | None = None,
        on_done: Callable[[], None] | None = None,
        on_discard: Callable[[int], None] | None = None,
    ) -> None:
        self.opaque = opaque
        self.remote_address = remote_address
        self.timeout_ms = timeout_ms
        self._table = table
        self._callback = callback
        self._on_done = on_done
        self._on_discard = on_discard
        self._future: asyncio.Future[RemotingCommand] | None = None if callback else loop.create_future()
        self._done = False
        self._timer = loop.call_later(max(timeout_ms, 0.0) / 1000.0, self._expire)
        table[opaque] = self

    @property
    def done(self) -> bool:
        return self._done

    def set_response(self, response: RemotingCommand) -> None:
        self._finish(response)

    def fail(self, error: RemotingError) -> None:
        self._finish(error)

    async def wait(self) -> RemotingCommand:
        """The response; raises the error that ended the wait instead."""
        assert self._future is not None, "a callback request is not awaited"
        try:
            return await self._future
        finally:
            if not self._done:
                self.discard()

    def discard(self) -> None:
        """End without telling anyone: the caller has given up (cancelled, or the write failed)."""
        if self._settle():
            if self._on_discard is not None:
                self._on_discard(self.opaque)
            if self._future is not None:
                self._future.cancel()
        if self._future is not None and self._future.done() and not self._future.cancelled():
            self._future.exception()  # marks an error nobody will await as seen

    def _expire(self) -> None:
        self._finish(RemotingTimeoutError(self.remote_address, self.timeout_ms, self.opaque))

    def _settle(self) -> bool:
        if self._done:
            return False
        self._done = True
        self._timer.cancel()
        if self._table.get(self.opaque) is self:
            del self._table[self.opaque]
        if self._on_done is not None:
            self._on_done()
        return True

    def _finish(self, outcome: Outcome) -> None:
        if not self._settle():
            return
        if self._callback is not None:
            self._callback(outcome)
            return
        future = self._future
        assert future is not None
        if future.done():
            return
        if isinstance(outcome, RemotingCommand):
            future.set_result(outcome)
        else:
            future.set_exception(outcome)

    def __repr__(self) -> str:
        state = "done" if self._done else "waiting"
        return f"ResponseFuture(opaque={self.opaque} to {self.remote_address}, {self.timeout_ms:g} ms, {state})"
