"""Consumption statistics for ``mqadmin consumerStatus`` (Java's client/stat/ConsumerStatsManager, simplified:
rates over the last minute, failures over the last hour). Consume threads add to them after every batch while the
event loop reads them; they must never wait for one another here, so the figures sit behind a combining lock (see
rocketmq_py/common/combining_lock.py). A batch's figures go into the record of the current second, a few
attribute additions: Java counts them with atomics, and here they are part of every message's cost."""
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


class _Second:
    """One topic's figures of one second."""

    __slots__ = ("second", "pulls", "pull_rt_ms", "pulled", "consumes", "consume_rt_ms", "consumed", "failed")

    def __init__(self, second: int) -> None:
        self.second = second
        self.pulls = 0
        self.pull_rt_ms = 0.0
        self.pulled = 0
        #: listener calls, their time, the messages they consumed and those that failed
        self.consumes = 0
        self.consume_rt_ms = 0.0
        self.consumed = 0
        self.failed = 0


class _TopicStats:
    """A topic's seconds of the last minute, newest last, and its failures of the last hour."""

    __slots__ = ("seconds", "failures")

    def __init__(self) -> None:
        self.seconds: collections.deque[_Second] = collections.deque([_Second(0)])
        #: (second, failed messages) of the calls that failed
        self.failures: collections.deque[tuple[int, int]] = collections.deque()

    def at(self, now: float) -> _Second:
        """The record of the second ``now`` falls in (monotonic seconds)."""
        current = self.seconds[-1]
        second = int(now)
        if current.second != second:
            current = _Second(second)
            self.seconds.append(current)
            self.trim(now)
        return current

    def trim(self, now: float) -> None:
        seconds, failures = self.seconds, self.failures
        while len(seconds) > 1 and now - seconds[0].second > WINDOW_S:
            seconds.popleft()
        while failures and now - failures[0][0] > HOUR_S:
            failures.popleft()

    def in_window(self, now: float) -> list[_Second]:
        return [record for record in self.seconds if now - record.second <= WINDOW_S]


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
        record = self._topic(topic).at(now)
        record.pulls += 1
        record.pull_rt_ms += rt_ms
        record.pulled += messages

    def _add_consumed(self, topic: str, now: float, rt_ms: float, ok: int, failed: int) -> None:
        stats = self._topics.get(topic) or self._topic(topic)
        record = stats.at(now)
        record.consumes += 1
        record.consume_rt_ms += rt_ms
        record.consumed += ok
        if failed:
            record.failed += failed
            stats.failures.append((record.second, failed))

    def status(self, topic: str) -> ConsumeStatus:
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.common.consumer_body import ConsumeStatus

        now = time.monotonic()
        with self._updates:
            stats = self._topic(topic)
            stats.trim(now)
            window = stats.in_window(now)
            failed_hour = sum(failed for _, failed in stats.failures)
        pulls = sum(record.pulls for record in window)
        consumes = sum(record.consumes for record in window)
        return ConsumeStatus(
            pull_rt=sum(record.pull_rt_ms for record in window) / pulls if pulls else 0.0,
            pull_tps=sum(record.pulled for record in window) / WINDOW_S,
            consume_rt=sum(record.consume_rt_ms for record in window) / consumes if consumes else 0.0,
            consume_ok_tps=sum(record.consumed for record in window) / WINDOW_S,
            consume_failed_tps=sum(record.failed for record in window) / WINDOW_S,
            consume_failed_msgs=failed_hour,
        )
