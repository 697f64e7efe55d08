"""Consumption statistics for ``mqadmin consumerStatus`` (Java's client/stat/ConsumerStatsManager, simplified:
rates over the last minute, failures over the last hour). Consume threads add to them after every message while the
event loop reads them; they must never wait for one another here, so the series sit behind a combining lock (see
rocketmq_py/common/combining_lock.py)."""
from __future__ import annotations

import collections
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rocketmq_py.common.combining_lock import CombiningLock

if TYPE_CHECKING:
    from rocketmq_py.common.consumer_body import ConsumeStatus

WINDOW_S = 60.0
HOUR_S = 3600.0


class _Series:
    """Per-second buckets ``[second, samples, total of figure 1, total of figure 2, ...]`` of the last window.

    The figures recorded together share a bucket (a pull's time and message count; a consume call's time and
    its consumed and failed messages), so recording them is one update, made for every batch."""

    __slots__ = ("window_s", "figure_count", "buckets")

    def __init__(self, window_s: float, figure_count: int) -> None:
        self.window_s = window_s
        self.figure_count = figure_count
        self.buckets: collections.deque[list[float]] = collections.deque()

    def add(self, now: float, *figures: float) -> None:
        second = int(now)
        buckets = self.buckets
        if buckets and buckets[-1][0] == second:
            bucket = buckets[-1]
            bucket[1] += 1
            for index, figure in enumerate(figures, 2):
                bucket[index] += figure
        else:
            buckets.append([second, 1, *figures])
            self._trim(now)

    def _trim(self, now: float) -> None:
        buckets = self.buckets
        while buckets and now - buckets[0][0] > self.window_s:
            buckets.popleft()

    def totals(self, now: float) -> list[float]:
        """The number of samples, then the total of each figure, over the window."""
        self._trim(now)
        if not self.buckets:
            return [0.0] * (1 + self.figure_count)
        return [sum(column) for column in zip(*self.buckets)][1:]


@dataclass
class FlowControlTimes:
    """How often a pull of a push consumer waited 50 ms because its queue held too much that the listener had not
    consumed yet (Java's queueFlowControlTimes and queueMaxSpanFlowControlTimes, split by reason). None while the
    listener keeps up with the pulls."""

    #: More than ``pull_threshold_for_queue`` messages cached.
    cached_count: int = 0
    #: More than ``pull_threshold_size_for_queue`` MiB cached.
    cached_size: int = 0
    #: Cached offsets spread over more than ``consume_concurrently_max_span`` (concurrent listeners only).
    offset_span: int = 0

    @property
    def total(self) -> int:
        return self.cached_count + self.cached_size + self.offset_span


class _TopicStats:
    __slots__ = ("pulls", "consumes", "failures_in_the_hour")

    def __init__(self) -> None:
        #: per pull: its round trip in ms, the messages it brought
        self.pulls = _Series(WINDOW_S, 2)
        #: per listener call: its time in ms, the messages consumed, the messages that failed
        self.consumes = _Series(WINDOW_S, 3)
        #: per listener call that failed: the messages that failed
        self.failures_in_the_hour = _Series(HOUR_S, 1)


class ConsumerStats:
    """Pull and consume figures per topic of one consumer group."""

    def __init__(self) -> None:
        self._topics: dict[str, _TopicStats] = {}
        self._updates = CombiningLock()

    def _topic(self, topic: str) -> _TopicStats:
        stats = self._topics.get(topic)
        if stats is None:
            stats = self._topics[topic] = _TopicStats()
        return stats

    def pull(self, topic: str, rt_ms: float, messages: int) -> None:
        self._updates.record(self._add_pull, topic, time.monotonic(), rt_ms, messages)

    def consumed(self, topic: str, rt_ms: float, ok: int, failed: int) -> None:
        self._updates.record(self._add_consumed, topic, time.monotonic(), rt_ms, ok, failed)

    def _add_pull(self, topic: str, now: float, rt_ms: float, messages: int) -> None:
        self._topic(topic).pulls.add(now, rt_ms, messages)

    def _add_consumed(self, topic: str, now: float, rt_ms: float, ok: int, failed: int) -> None:
        stats = self._topic(topic)
        stats.consumes.add(now, rt_ms, ok, failed)
        if failed:
            stats.failures_in_the_hour.add(now, failed)

    def status(self, topic: str) -> ConsumeStatus:
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.common.consumer_body import ConsumeStatus

        now = time.monotonic()
        with self._updates:
            stats = self._topic(topic)
            pulls, pull_rt, pulled = stats.pulls.totals(now)
            consumes, consume_rt, consume_ok, consume_failed = stats.consumes.totals(now)
            _, failed_hour = stats.failures_in_the_hour.totals(now)
        return ConsumeStatus(
            pull_rt=pull_rt / pulls if pulls else 0.0,
            pull_tps=pulled / WINDOW_S,
            consume_rt=consume_rt / consumes if consumes else 0.0,
            consume_ok_tps=consume_ok / WINDOW_S,
            consume_failed_tps=consume_failed / WINDOW_S,
            consume_failed_msgs=int(failed_hour),
        )
