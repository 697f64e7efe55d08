"""Serving the requests that connections read: in their lane or at once, the fast path first, the answer written.

Plays the part of Java's ``NettyRemotingAbstract.processRequestCommand`` that
picks the executor of a request's code and runs it there. A request is served
in one of three ways, chosen by what its code has in the
:class:`~rocketmq_py.remoting.processor.ProcessorTable`:

- **queued**: a code with a lane (sends, pulls) waits in it; when the lane's
  worker takes it, it is served **fast** if the code's fast handler answers it,
  else by its processor, which the worker awaits. Either answer is written
  without waiting for the write buffer to drain: a lane serves every
  connection, and a peer that does not read its answers stops being read
  instead (see ``RemotingConnection.pause_writing``).
- **ordinary**: any other code is served at once by its processor, in a task
  of its own, whose answer waits while the write buffer is full.

The connection only decodes and writes; the table only says what answers a
request and computes the answer; the lanes only queue (and refuse what cannot
wait).
"""
from __future__ import annotations

import asyncio
from typing import Awaitable

from rocketmq_py.remoting.command import RemotingCommand
from rocketmq_py.remoting.lanes import LaneServe
from rocketmq_py.remoting.processor import ProcessorTable
from rocketmq_py.remoting.protocol import RemotingConnection

__all__ = ["RequestDispatcher"]


class RequestDispatcher:
    """Serves the requests of every connection of one server or client through ``processors`` and its lanes."""

    def __init__(self, processors: ProcessorTable) -> None:
        self.processors = processors
        self._running: set[asyncio.Task[None]] = set()
        # One bound method for every request a lane takes, rather than one made per request.
        self._serve_taken: LaneServe = self._serve_from_lane

    @property
    def running_requests(self) -> int:
        """Requests served at once (each in its own task) whose processing has not finished."""
        return len(self._running)

    def serve(self, connection: RemotingConnection, request: RemotingCommand) -> None:
        """Serve ``request``, read from ``connection``: queue it in its code's lane, or start it at once."""
        lane = self.processors.lane_of(request.code)
        if lane is not None:
            lane.submit(self._serve_taken, connection, request)
            return
        task = asyncio.get_running_loop().create_task(self._serve_at_once(connection, request))
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    def _serve_from_lane(self, connection: RemotingConnection, request: RemotingCommand) -> Awaitable[None] | None:
        """Answer a request a lane took on its code's fast path; when it has none or it declines, return the
        processor's serving for the lane to await."""
        response = self.processors.answer_fast(connection.context, request)
        if response is None:
            return self._serve_queued(connection, request)
        if not request.is_oneway:
            connection.write_answer(request, response)
        return None

    async def _serve_queued(self, connection: RemotingConnection, request: RemotingCommand) -> None:
        response = await self.processors.dispatch(connection.context, request)
        if response is not None:
            connection.write_answer(request, response)

    async def _serve_at_once(self, connection: RemotingConnection, request: RemotingCommand) -> None:
        response = await self.processors.dispatch(connection.context, request)
        if response is not None:
            await connection.send_answer(request, response)

    # --- lifecycle ----------------------------------------------------------------------

    async def drain(self, timeout_s: float | None) -> bool:
        """Wait until the requests being served have finished and the lanes are empty; False when some are
        still there after ``timeout_s``."""
        finished = await asyncio.gather(self._wait_running(timeout_s),
                                        *(lane.drain(timeout_s) for lane in self.processors.lanes))
        return all(finished)

    async def _wait_running(self, timeout_s: float | None) -> bool:
        running = set(self._running)
        if not running:
            return True
        _, still_running = await asyncio.wait(running, timeout=timeout_s)
        return not still_running

    def close(self) -> None:
        """Cancel the requests being served and drop what waits in the lanes (a later request starts them again)."""
        for task in tuple(self._running):
            task.cancel()
        for lane in self.processors.lanes:
            lane.close()
