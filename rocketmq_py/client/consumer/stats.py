"""Consumption statistics for ``mqadmin consumerStatus`` (Java's client/stat/ConsumerStatsManager, simplified:
rates over the last minute, failures over the last hour). Consume threads add to them after every message while the
event loop reads them; they must never wait for one another here, so the series sit behind a combining lock (see
rocketmq_py/common/combining_lock.py)."""
from __future__ import annotations

import collections
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rocketmq_py.common.combining_lock import CombiningLock

if TYPE_CHECKING:
    from rocketmq_py.common.consumer_body import ConsumeStatus

WINDOW_S = 60.0
HOUR_S = 3600.0


@dataclass
class _Series:
    """Per-second buckets ``[second, samples, sum]`` of the last window."""

    window_s: float
    buckets: collections.deque[Any] = field(default_factory=collections.deque[Any])

    def add(self, value: float, now: float) -> None:
        second = int(now)
        buckets = self.buckets
        if buckets and buckets[-1][0] == second:
            bucket = buckets[-1]
            bucket[1] += 1
            bucket[2] += value
        else:
            buckets.append([second, 1, value])
            self._trim(now)

    def _trim(self, now: float) -> None:
        buckets = self.buckets
        while buckets and now - buckets[0][0] > self.window_s:
            buckets.popleft()

    def summary(self, now: float) -> tuple[int, float]:
        """The number of samples and their sum."""
        self._trim(now)
        return sum(b[1] for b in self.buckets), sum(b[2] for b in self.buckets)


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
    def __init__(self) -> None:
        self.pull_rt = _Series(WINDOW_S)
        self.pull_tps = _Series(WINDOW_S)
        self.consume_rt = _Series(WINDOW_S)
        self.consume_ok = _Series(WINDOW_S)
        self.consume_failed = _Series(WINDOW_S)
        self.consume_failed_hour = _Series(HOUR_S)


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
        stats = self._topic(topic)
        stats.pull_rt.add(rt_ms, now)
        if messages:
            stats.pull_tps.add(messages, now)

    def _add_consumed(self, topic: str, now: float, rt_ms: float, ok: int, failed: int) -> None:
        stats = self._topic(topic)
        stats.consume_rt.add(rt_ms, now)
        if ok:
            stats.consume_ok.add(ok, now)
        if failed:
            stats.consume_failed.add(failed, now)
            stats.consume_failed_hour.add(failed, now)

    def status(self, topic: str) -> ConsumeStatus:
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.common.consumer_body import ConsumeStatus

        now = time.monotonic()
        with self._updates:
            stats = self._topic(topic)
            pulls, pull_rt = stats.pull_rt.summary(now)
            consumes, consume_rt = stats.consume_rt.summary(now)
            pull_tps = stats.pull_tps.summary(now)[1]
            consume_ok = stats.consume_ok.summary(now)[1]
            consume_failed = stats.consume_failed.summary(now)[1]
            failed_hour = stats.consume_failed_hour.summary(now)[1]
        return ConsumeStatus(
            pull_rt=pull_rt / pulls if pulls else 0.0,
            pull_tps=pull_tps / WINDOW_S,
            consume_rt=consume_rt / consumes if consumes else 0.0,
            consume_ok_tps=consume_ok / WINDOW_S,
            consume_failed_tps=consume_failed / WINDOW_S,
            consume_failed_msgs=int(failed_hour),
        )
