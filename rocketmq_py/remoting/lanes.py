"""Request lanes: bulk requests wait in their own queue, so the other requests never wait behind them.

Java's broker gives each family of requests its own executor with a bounded
queue (``BrokerController.registerProcessor``), and its ``BrokerFastFailure``
answers SYSTEM_BUSY to requests that waited in the send or pull queue longer
than allowed. Here all connections share one event loop, so a lane is a
FIFO served in place by one worker, which yields to the loop after every few
requests: whatever else is ready (an admin query, a heartbeat, bytes to read) runs
between two bursts instead of after the whole backlog. A lane knows nothing
of processors: each request comes with the callable that serves it (the
dispatcher's, see :mod:`rocketmq_py.remoting.dispatcher`), which answers it
at once or hands back what to await. What it hands back runs as a task of its
own (a send waiting for its flush or for a DLedger majority), up to
``workers`` of them at once, while the worker goes on to the next request,
as Java's send thread hands an asynchronous put its future and takes the next
task: at most ``burst`` requests start per pass of the loop. (A worker that
awaited each request itself, handing the queue to another worker when it
suspended, took one request every two passes of the loop: on a busy DLedger
leader, whose passes carry the pushes to its followers, sends then waited in
the queue for more than ``waitTimeMillsInSendQueue`` with most workers idle.)

The answers of a refused request are Java's: a full queue gives
``[OVERLOAD]``; a request that waited longer than ``max_wait_ms`` gives
``[TIMEOUT_CLEAN_QUEUE]``; while ``busy()`` holds (the store's page cache is
struggling) queued requests get ``[PCBUSY_CLEAN_QUEUE]``. The last two come
from a sweep of the queue every 10 ms, as Java's ``BrokerFastFailure`` does
it: the sweep refuses from the head while the head is too old, and the
worker serves whatever it takes between sweeps. Checking each request as a
worker takes it would be stricter than Java, and under a backlog longer than
the limit it would refuse nearly every request, storing nothing while
saturated; Java keeps storing the young part of the queue.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from typing import TYPE_CHECKING, Awaitable, Callable, Optional

from rocketmq_py.remoting import command as commands
from rocketmq_py.remoting.command import RemotingCommand, RemotingSysResponseCode

if TYPE_CHECKING:
    from rocketmq_py.remoting.protocol import RemotingConnection

__all__ = ["Lane", "LaneServe", "OVERLOAD_REMARK", "timeout_clean_queue_remark", "pcbusy_clean_queue_remark"]

_log = logging.getLogger(__name__)

OVERLOAD_REMARK = "[OVERLOAD]system busy, start flow control for a while"
#: How often a full lane is logged, at most (Java logs its RejectedExecutionException at most every 10 s).
_OVERLOAD_LOG_INTERVAL_S = 10.0
#: How often the queue is swept for requests that may not run any more (Java's BrokerFastFailure period).
SWEEP_INTERVAL_S = 0.01


def timeout_clean_queue_remark(waited_ms: int, queue_size: int) -> str:
    """Java's BrokerFastFailure remark for a request that waited too long in its queue."""
    return (f"[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: {waited_ms}ms, "
            f"size of queue: {queue_size}")


def pcbusy_clean_queue_remark(waited_ms: int, queue_size: int) -> str:
    """Java's BrokerFastFailure remark for a queued send while the page cache is busy."""
    return (f"[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: {waited_ms}ms, "
            f"size of queue: {queue_size}")


#: Serves a request a lane's worker takes: answers it at once and returns None, or returns what to await.
LaneServe = Callable[["RemotingConnection", RemotingCommand], Optional[Awaitable[None]]]


def _waited_ms(enqueued: float) -> int:
    return int((time.monotonic() - enqueued) * 1000)


class Lane:
    """A bounded FIFO of requests, ``burst`` started per loop pass, up to ``workers`` of them in progress.

    ``workers`` bounds the requests suspended at once (sends waiting for
    their flush under SYNC_FLUSH, say); beyond it, requests wait in the
    queue. ``max_wait_ms`` (None: no limit) and ``busy`` may be changed at
    any time.
    """

    def __init__(
        self,
        name: str,
        *,
        capacity: int,
        max_wait_ms: float | None = None,
        workers: int = 1,
        burst: int = 16,
        busy: Callable[[], bool] | None = None,
    ) -> None:
        if capacity <= 0 or workers <= 0 or burst <= 0:
            raise ValueError("a lane needs a positive capacity, worker count and burst")
        self.name = name
        self.capacity = capacity
        self.max_wait_ms = max_wait_ms
        self.busy = busy
        self._max_serving = workers
        self._burst = burst
        self._queue: deque[tuple[LaneServe, RemotingConnection, RemotingCommand, float]] = deque()
        #: The one task that takes requests from the queue (None: not started, or closed).
        self._worker: asyncio.Task[None] | None = None
        #: What the worker awaits while it may not start a request (the queue is empty, or ``workers`` are in
        #: progress); a submit or a finished request ends it.
        self._wakeup: asyncio.Future[None] | None = None
        #: The requests in progress, each awaited in a task of its own.
        self._serving: set[asyncio.Task[None]] = set()
        self._last_overload_log = 0.0
        self._sweep_timer: asyncio.TimerHandle | None = None
        #: Requests refused since the lane was made, by reason (for statistics and tests).
        self.refused = {"overload": 0, "timeout": 0, "pcbusy": 0}

    @property
    def size(self) -> int:
        """Requests waiting in the queue (not counting those being served)."""
        return len(self._queue)

    def submit(self, serve: LaneServe, connection: RemotingConnection, request: RemotingCommand) -> None:
        """Queue ``request`` for ``serve``; answered at once with ``[OVERLOAD]`` when the queue is full."""
        if len(self._queue) >= self.capacity:
            self.refused["overload"] += 1
            now = time.monotonic()
            if now - self._last_overload_log >= _OVERLOAD_LOG_INTERVAL_S:
                self._last_overload_log = now
                _log.warning("the %s lane is full (%d requests): answering SYSTEM_BUSY to %s (code %d) and others",
                             self.name, self.capacity, connection.remote_address, request.code)
            self._refuse(connection, request, OVERLOAD_REMARK)
            return
        self._queue.append((serve, connection, request, time.monotonic()))
        if self._sweep_timer is None:
            self._sweep_later()
        self._wake_worker()

    def _sweep_later(self) -> None:
        """Schedule the next sweep, when there is a limit to enforce."""
        if self.max_wait_ms is not None or self.busy is not None:
            self._sweep_timer = asyncio.get_running_loop().call_later(SWEEP_INTERVAL_S, self._sweep)

    def _wake_worker(self) -> None:
        """Start the worker, or end its wait, when it may start a request."""
        if not self._queue or len(self._serving) >= self._max_serving:
            return
        if self._worker is None:
            self._worker = asyncio.get_running_loop().create_task(self._work(), name=f"lane-{self.name}")
        elif self._wakeup is not None and not self._wakeup.done():
            self._wakeup.set_result(None)

    @staticmethod
    def _refuse(connection: RemotingConnection, request: RemotingCommand, remark: str) -> None:
        if request.is_oneway:
            return
        response = commands.create_response(request, RemotingSysResponseCode.SYSTEM_BUSY, remark,
                                            serialize_type=commands.DEFAULT_SERIALIZE_TYPE)
        connection.write_answer(request, response)

    def _sweep(self) -> None:
        """Answer SYSTEM_BUSY to the queued requests that may not run any more (Java's BrokerFastFailure)."""
        self._sweep_timer = None
        queue = self._queue
        busy = self.busy
        while queue and busy is not None and busy():
            _, connection, request, enqueued = queue.popleft()
            self.refused["pcbusy"] += 1
            self._refuse(connection, request, pcbusy_clean_queue_remark(_waited_ms(enqueued), len(queue)))
        max_wait_ms = self.max_wait_ms
        while queue and max_wait_ms is not None:
            _, connection, request, enqueued = queue[0]
            waited_ms = _waited_ms(enqueued)
            if waited_ms < max_wait_ms:
                break
            queue.popleft()
            self.refused["timeout"] += 1
            self._refuse(connection, request, timeout_clean_queue_remark(waited_ms, len(queue)))
        if queue:
            self._sweep_later()

    async def _work(self) -> None:
        loop = asyncio.get_running_loop()
        queue = self._queue
        served = 0
        # Whether a request of this pass runs in a task that has not started yet: the next ones then run in
        # tasks too, after it, so that a request the fast path answers never overtakes an earlier one.
        deferred = False
        while True:
            if not queue or len(self._serving) >= self._max_serving:
                self._wakeup = loop.create_future()
                await self._wakeup
                self._wakeup = None
                served = 0
                deferred = False
                continue
            # A request whose sender has closed its connection is served all the same, as Java's executors
            # do: a oneway send written just before the producer disconnects is a message to store.
            serve, connection, request, _enqueued = queue.popleft()
            if deferred:
                self._start(loop, self._serve_in_task(serve, connection, request), request)
            else:
                try:
                    pending = serve(connection, request)
                except Exception:
                    # The one worker must outlive a request that fails: the lane would take nothing any more.
                    _log.exception("serving %r from the %s lane failed", request, self.name)
                    pending = None
                if pending is not None:
                    self._start(loop, pending, request)
                    deferred = True
            served += 1
            if served >= self._burst:
                served = 0
                deferred = False  # the tasks of this pass start before the worker's next step
                await asyncio.sleep(0)

    def _start(self, loop: asyncio.AbstractEventLoop, pending: Awaitable[None], request: RemotingCommand) -> None:
        # Tasks start in the order they were made: the requests' first steps (a send's placement) run in
        # arrival order.
        serving = loop.create_task(self._finish(pending, request))
        self._serving.add(serving)
        serving.add_done_callback(self._finished)

    async def _serve_in_task(self, serve: LaneServe, connection: RemotingConnection,
                             request: RemotingCommand) -> None:
        pending = serve(connection, request)
        if pending is not None:
            await pending

    async def _finish(self, pending: Awaitable[None], request: RemotingCommand) -> None:
        try:
            await pending
        except asyncio.CancelledError:
            raise
        except Exception:
            _log.exception("serving %r from the %s lane failed", request, self.name)

    def _finished(self, serving: asyncio.Task[None]) -> None:
        self._serving.discard(serving)
        self._wake_worker()

    async def drain(self, timeout_s: float | None) -> bool:
        """Wait until nothing is queued or being served; False when ``timeout_s`` ran out first."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while self._queue or self._serving:
            if deadline is not None and time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.01)
        return True

    def close(self) -> None:
        """Drop what is queued and stop the worker (a later submit starts it again)."""
        self._queue.clear()
        if self._sweep_timer is not None:
            self._sweep_timer.cancel()
            self._sweep_timer = None
        if self._worker is not None:
            self._worker.cancel()
            self._worker = None
        self._wakeup = None
        for serving in tuple(self._serving):
            serving.cancel()

    def __repr__(self) -> str:
        return f"Lane({self.name}, queued={len(self._queue)}, serving={len(self._serving)}/{self._max_serving})"
