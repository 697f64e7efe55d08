"""What limits a push consumer's steady rate: where its queues wait, measured in a running consumer.

``Probe`` wraps, for as long as it is entered, the few consumer methods that run once per pull or once per
orderly task (never once per message, so the figures cost little and change the pace little):

* ``PullAPI.pull``: each pull's round trip as the event loop sees it (from the request's encoding to the answer
  decoded: the broker's time, the network, the loop's wait for the GIL and the CPU, and the decoding), and the gap from one answer of a queue to that queue's next request (the loop's work in between);
* ``ProcessQueue.put_messages``: how many messages were still cached when a pull's answer came (none or one:
  the queue had run dry, its consume thread idle for want of messages), and how often the answer had to start a
  consume task (orderly: the queue's task had ended because its cache was empty);
* ``ConsumeMessageOrderlyService._consume_in_thread``: per orderly task, the wait from its submission to its
  start in a consume thread (the thread's wake-up and its wait for the GIL), and how long the queue then lay
  dry: from the end of its task to the answer that started the next;
* ``RemotingConnection``: how long a request (pulls, mostly), once written, waited in the connection's buffer for the write to
  the socket (``requestBufferedMs``: frames written in one pass of the loop go out together at its end);
* a ticker on the event loop every 10 ms: how late the loop runs a callback that is due (``loopLagMs``: the
  loop's wait for the GIL, the CPU, or its own work);
* ``/proc/self/task/<tid>/schedstat`` of the loop thread and the consume threads: CPU time, and the time spent
  runnable but waiting for a CPU (the machine's load; a wait for the GIL is a sleep, not counted there).

The figures are per run, over all queues; percentiles in milliseconds.
"""
from __future__ import annotations

import asyncio
import statistics
import threading
import time
from typing import Any, Callable

from rocketmq_py.client.consumer import consume_orderly, process_queue, pull
from rocketmq_py.remoting import future, protocol

TICK_S = 0.01


def _percentiles(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    ordered = sorted(values)

    def at(fraction: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] * 1000.0, 3)

    return {"count": len(ordered), "mean": round(statistics.fmean(ordered) * 1000.0, 3), "p50": at(0.5),
            "p90": at(0.9), "p99": at(0.99), "max": round(ordered[-1] * 1000.0, 3)}


def schedstat(native_id: int) -> tuple[float, float]:
    """CPU seconds and seconds spent runnable but waiting for a CPU, of a thread of this process."""
    with open(f"/proc/self/task/{native_id}/schedstat") as stat:
        on_cpu, waiting, _ = stat.read().split()
    return int(on_cpu) / 1e9, int(waiting) / 1e9


class Probe:
    """Enter before the consumer starts, leave after its last message; then ``report()``."""

    def __init__(self) -> None:
        self.round_trips: list[float] = []
        self.gaps: list[float] = []
        self.cached_at_answer: list[int] = []
        self.task_starts: list[float] = []
        self.dry: list[float] = []
        self.tasks = 0
        self.lags: list[float] = []
        self.queued: list[float] = []
        self.buffered: list[float] = []
        self._unflushed: list[float] = []
        self._arrived: dict[int, float] = {}
        self._answered: dict[Any, float] = {}
        self._submitted: dict[int, float] = {}
        self._ended: dict[int, float] = {}
        self._restore: list[Callable[[], None]] = []
        self._ticking = True
        self._loop_thread: int | None = None
        self._sched_before: dict[int, tuple[float, float]] = {}
        self._began = 0.0
        self.seconds = 0.0

    def _wrap(self, owner: Any, name: str, make: Callable[[Any], Any]) -> None:
        original = getattr(owner, name)
        setattr(owner, name, make(original))
        self._restore.append(lambda: setattr(owner, name, original))

    def __enter__(self) -> "Probe":
        probe = self

        def wrap_pull(original: Any) -> Any:
            async def timed_pull(api: Any, queue: Any, *args: Any, **kwargs: Any) -> Any:
                began = time.perf_counter()
                if probe._loop_thread is None:
                    probe._start_on_loop()
                answered = probe._answered.get(queue)
                if answered is not None:
                    probe.gaps.append(began - answered)
                try:
                    return await original(api, queue, *args, **kwargs)
                finally:
                    now = probe._answered[queue] = time.perf_counter()
                    probe.round_trips.append(now - began)
            return timed_pull

        def wrap_put(original: Any) -> Any:
            def counted_put(pq: Any, messages: Any) -> bool:
                probe.cached_at_answer.append(pq.cached_now()[0])
                dispatch = original(pq, messages)
                if dispatch:
                    now = time.perf_counter()
                    ended = probe._ended.pop(id(pq), None)
                    if ended is not None:
                        probe.dry.append(now - ended)
                    probe._submitted[id(pq)] = now
                return dispatch
            return counted_put

        def wrap_task(original: Any) -> Any:
            def timed_task(service: Any, request: Any) -> None:
                key = id(request.process_queue)
                probe.tasks += 1
                submitted = probe._submitted.pop(key, None)
                if submitted is not None:
                    probe.task_starts.append(time.perf_counter() - submitted)
                try:
                    original(service, request)
                finally:
                    probe._ended[key] = time.perf_counter()
            return timed_task

        def wrap_set_response(original: Any) -> Any:
            def noted_set_response(response_future: Any, response: Any) -> None:
                probe._arrived[id(response_future)] = time.perf_counter()
                original(response_future, response)
            return noted_set_response

        def wrap_wait(original: Any) -> Any:
            async def timed_wait(response_future: Any) -> Any:
                try:
                    return await original(response_future)
                finally:
                    arrived = probe._arrived.pop(id(response_future), None)
                    if arrived is not None:
                        probe.queued.append(time.perf_counter() - arrived)
            return timed_wait

        def wrap_send(original: Any) -> Any:
            async def noted_send(connection: Any, command: Any) -> None:
                probe._unflushed.append(time.perf_counter())
                await original(connection, command)
            return noted_send

        def wrap_flush(original: Any) -> Any:
            def timed_flush(connection: Any) -> None:
                now = time.perf_counter()
                probe.buffered.extend(now - written for written in probe._unflushed)
                probe._unflushed.clear()
                original(connection)
            return timed_flush

        self._wrap(protocol.RemotingConnection, "send", wrap_send)
        self._wrap(protocol.RemotingConnection, "_flush", wrap_flush)
        self._wrap(future.ResponseFuture, "set_response", wrap_set_response)
        self._wrap(future.ResponseFuture, "wait", wrap_wait)
        self._wrap(pull.PullAPI, "pull", wrap_pull)
        self._wrap(process_queue.ProcessQueue, "put_messages", wrap_put)
        self._wrap(consume_orderly.ConsumeMessageOrderlyService, "_consume_in_thread", wrap_task)
        return self

    def _start_on_loop(self) -> None:
        """At the first pull, in the loop thread: the ticker and the threads' schedstat."""
        self._loop_thread = threading.get_native_id()
        self._began = time.perf_counter()
        self._sched_before = {tid: schedstat(tid) for tid in self._threads()}
        loop = asyncio.get_running_loop()

        def tick(due: float) -> None:
            now = loop.time()
            self.lags.append(max(0.0, now - due))
            if self._ticking:
                loop.call_at(now + TICK_S, tick, now + TICK_S)

        loop.call_at(loop.time() + TICK_S, tick, loop.time() + TICK_S)

    def _threads(self) -> dict[int, str]:
        found = {thread.native_id: thread.name for thread in threading.enumerate()
                 if thread.name.startswith("ConsumeMessageThread_") and thread.native_id is not None}
        if self._loop_thread is not None:
            found[self._loop_thread] = "loop"
        return found

    def stop(self) -> dict[str, Any]:
        """At the consumer's last message (from any thread): the threads' schedstat since the first pull."""
        self._ticking = False
        self.seconds = time.perf_counter() - self._began
        spent = {"loop": [0.0, 0.0], "consume": [0.0, 0.0]}
        for tid, name in self._threads().items():
            try:
                on_cpu, waiting = schedstat(tid)
            except OSError:
                continue
            before = self._sched_before.get(tid, (0.0, 0.0))
            kind = spent["loop" if name == "loop" else "consume"]
            kind[0] += on_cpu - before[0]
            kind[1] += waiting - before[1]
        return {kind: {"cpuSeconds": round(cpu, 3), "runQueueWaitSeconds": round(waiting, 3)}
                for kind, (cpu, waiting) in spent.items()}

    def __exit__(self, *exc_info: object) -> None:
        self._ticking = False
        for restore in reversed(self._restore):
            restore()

    def report(self, threads: dict[str, Any]) -> dict[str, Any]:
        answers = len(self.cached_at_answer)
        dry = sum(1 for cached in self.cached_at_answer if cached <= 1)
        return {
            "seconds": round(self.seconds, 3),
            "pulls": len(self.round_trips),
            "pullRoundTripMs": _percentiles(self.round_trips),
            "answerQueuedInLoopMs": _percentiles(self.queued),
            "answerToNextPullMs": _percentiles(self.gaps),
            "requestBufferedMs": _percentiles(self.buffered),
            "answersToADryQueue": dry,
            "answersToADryQueueShare": round(dry / answers, 3) if answers else None,
            "meanCachedAtAnswer": round(statistics.fmean(self.cached_at_answer), 1) if answers else None,
            "orderlyTasks": self.tasks,
            "orderlyTaskStartWaitMs": _percentiles(self.task_starts),
            "orderlyQueueDryMs": _percentiles(self.dry),
            "orderlyQueueDrySecondsTotal": round(sum(self.dry), 3),
            "loopLagMs": _percentiles(self.lags),
            "threads": threads,
        }
