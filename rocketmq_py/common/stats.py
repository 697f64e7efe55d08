"""Rolling statistics as Java's common/stats StatsItem, StatsItemSet, and StatsSnapshot.

An item counts a ``value`` and the ``times`` it was added to. Snapshots of
(timestamp, times, value) are kept in three lists: one every 10 s (7 kept,
so one minute), one every 10 min (7 kept, one hour) and one every hour
(25 kept, one day). A window's figures are last minus first of its list:
``sum``, ``tps`` = sum per second and ``avgpt`` = sum / times. The first
sample of an empty list is preceded by a zero one dated one period earlier,
so an item's first window already counts everything it received.

Sampling is driven from outside (the broker's periodic tasks) with an
explicit clock, so tests can step time instead of sleeping.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Callable, Iterator

MINUTE_PERIOD_MS = 10_000
HOUR_PERIOD_MS = 600_000
DAY_PERIOD_MS = 3_600_000
_MINUTE_KEEP = 7
_HOUR_KEEP = 7
_DAY_KEEP = 25


@dataclass(frozen=True)
class StatsSnapshot:
    sum: int = 0
    tps: float = 0.0
    avgpt: float = 0.0
    times: int = 0


class _Window:
    __slots__ = ("period_ms", "_snapshots")

    def __init__(self, period_ms: int, keep: int) -> None:
        self.period_ms = period_ms
        self._snapshots: deque[tuple[int, int, int]] = deque(maxlen=keep)

    def sample(self, at_ms: int, times: int, value: int) -> None:
        if not self._snapshots:
            self._snapshots.append((at_ms - self.period_ms, 0, 0))
        self._snapshots.append((at_ms, times, value))

    def snapshot(self) -> StatsSnapshot:
        if not self._snapshots:
            return StatsSnapshot()
        first_at, first_times, first_value = self._snapshots[0]
        last_at, last_times, last_value = self._snapshots[-1]
        total = last_value - first_value
        times = last_times - first_times
        elapsed = last_at - first_at
        tps = total * 1000.0 / elapsed if elapsed > 0 else 0.0
        return StatsSnapshot(total, tps, total / times if times > 0 else 0.0, times)


class StatsItem:
    __slots__ = ("name", "key", "value", "times", "_minute", "_hour", "_day")

    def __init__(self, name: str, key: str) -> None:
        self.name = name
        self.key = key
        self.value = 0
        self.times = 0
        self._minute = _Window(MINUTE_PERIOD_MS, _MINUTE_KEEP)
        self._hour = _Window(HOUR_PERIOD_MS, _HOUR_KEEP)
        self._day = _Window(DAY_PERIOD_MS, _DAY_KEEP)

    def add(self, value: int, times: int) -> None:
        self.value += value
        self.times += times

    def sample_minute(self, at_ms: int) -> None:
        self._minute.sample(at_ms, self.times, self.value)

    def sample_hour(self, at_ms: int) -> None:
        self._hour.sample(at_ms, self.times, self.value)

    def sample_day(self, at_ms: int) -> None:
        self._day.sample(at_ms, self.times, self.value)

    def in_minute(self) -> StatsSnapshot:
        return self._minute.snapshot()

    def in_hour(self) -> StatsSnapshot:
        return self._hour.snapshot()

    def in_day(self) -> StatsSnapshot:
        return self._day.snapshot()


class StatsItemSet:
    """The items of one statistic (``TOPIC_PUT_NUMS``, ...) by key (a topic, ``topic@group``, ...)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.items: dict[str, StatsItem] = {}

    def item(self, key: str) -> StatsItem:
        found = self.items.get(key)
        if found is None:
            found = self.items[key] = StatsItem(self.name, key)
        return found

    def add(self, key: str, value: int, times: int) -> None:
        # Every pull adds to four items: the lookup inline, without a call to item() each time.
        item = self.items.get(key)
        if item is None:
            item = self.item(key)
        item.add(value, times)

    def get(self, key: str) -> StatsItem | None:
        return self.items.get(key)

    def in_minute(self, key: str) -> StatsSnapshot:
        found = self.items.get(key)
        return found.in_minute() if found is not None else StatsSnapshot()

    def sample_minute(self, at_ms: int) -> None:
        for found in self.items.values():
            found.sample_minute(at_ms)

    def sample_hour(self, at_ms: int) -> None:
        for found in self.items.values():
            found.sample_hour(at_ms)

    def sample_day(self, at_ms: int) -> None:
        for found in self.items.values():
            found.sample_day(at_ms)

    def remove_where(self, matches: Callable[[str], bool]) -> None:
        for key in [key for key in self.items if matches(key)]:
            del self.items[key]

    def __iter__(self) -> Iterator[StatsItem]:
        return iter(list(self.items.values()))
