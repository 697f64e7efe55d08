"""Broker fault avoidance (Java's MQFaultStrategy and LatencyFaultToleranceImpl).

With ``send_latency_fault_enable`` every send reports its latency; a slow or
failed broker is avoided for the ``not_available_duration`` that matches the
latency (a failure counts as 30 s). Without it, selection is plain round robin
that skips the broker that failed last.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dataclasses import dataclass

from rocketmq_py.common.clock import monotonic_ms
from rocketmq_py.common.message_queue import MessageQueue

if TYPE_CHECKING:
    from rocketmq_py.client.producer.publish_info import TopicPublishInfo

ISOLATION_LATENCY_MS = 30_000


@dataclass
class FaultItem:
    broker_name: str
    current_latency: float
    start_timestamp: float

    def is_available(self, now: float | None = None) -> bool:
        return (monotonic_ms() if now is None else now) >= self.start_timestamp

    def sort_key(self, now: float) -> tuple[Any, ...]:
        return (not self.is_available(now), self.current_latency, self.start_timestamp)


class LatencyFaultTolerance:
    def __init__(self) -> None:
        self.items: dict[str, FaultItem] = {}
        self._worst = 0

    def update(self, broker_name: str, current_latency: float, not_available_ms: float) -> None:
        start = monotonic_ms() + not_available_ms
        item = self.items.get(broker_name)
        if item is None:
            self.items[broker_name] = FaultItem(broker_name, current_latency, start)
        else:
            item.current_latency = current_latency
            item.start_timestamp = start

    def is_available(self, broker_name: str) -> bool:
        item = self.items.get(broker_name)
        return item is None or item.is_available()

    def remove(self, broker_name: str) -> None:
        self.items.pop(broker_name, None)

    def pick_one_at_least(self) -> str | None:
        """A broker to try when all are marked unavailable: among the better half, in turn."""
        if not self.items:
            return None
        now = monotonic_ms()
        import random  # lazy: see rocketmq_py/_lazy.py

        ranked = list(self.items.values())
        random.shuffle(ranked)
        ranked.sort(key=lambda item: item.sort_key(now))
        half = len(ranked) // 2
        if half <= 0:
            return ranked[0].broker_name
        self._worst += 1
        return ranked[self._worst % half].broker_name


class FaultStrategy:
    def __init__(
        self, enabled: bool, latency_max: tuple[int, ...], not_available_duration: tuple[int, ...],
    ) -> None:
        self.enabled = enabled
        self.latency_max = latency_max
        self.not_available_duration = not_available_duration
        self.tolerance = LatencyFaultTolerance()

    def not_available_ms(self, latency: float) -> float:
        for limit, duration in zip(reversed(self.latency_max), reversed(self.not_available_duration)):
            if latency >= limit:
                return duration
        return 0

    def update(self, broker_name: str, latency_ms: float, isolation: bool) -> None:
        if self.enabled:
            duration = self.not_available_ms(ISOLATION_LATENCY_MS if isolation else latency_ms)
            self.tolerance.update(broker_name, latency_ms, duration)

    def select(self, info: TopicPublishInfo, last_broker_name: str | None) -> MessageQueue | None:
        if not self.enabled:
            return info.select_one(last_broker_name)
        queues = info.message_queues
        if not queues:
            return None
        for _ in range(len(queues)):
            candidate = queues[info.index.next() % len(queues)]
            if self.tolerance.is_available(candidate.broker_name):
                return candidate
        fallback = self.tolerance.pick_one_at_least()
        if fallback is not None:
            write_queues = info.write_queue_nums(fallback)
            if write_queues > 0:
                return MessageQueue(info.message_queues[0].topic, fallback, info.index.next() % write_queues)
            self.tolerance.remove(fallback)
        return info.select_one()
