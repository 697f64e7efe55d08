"""The broker's counters: Java's StoreStatsService (store-wide TPS, the put latency histogram) and
BrokerStats (daily totals), in front of the per-topic and per-group :class:`BrokerStatsManager`.

The send and pull paths make one call per event (:meth:`BrokerStats.on_put`,
:meth:`on_get`, ...); :meth:`BrokerStats.sample` runs once a second and
keeps the history from which TPS over 10 s, 60 s and 600 s are computed as
Java does ("putTps" is "<10s> <60s> <600s>").
"""
from __future__ import annotations

import bisect
import time
from collections import deque
from typing import Callable

from rocketmq_py.broker.stats_manager import BrokerStatsManager
from rocketmq_py.common.clock import now_ms

WINDOWS_S = (10, 60, 600)
_HISTORY = max(WINDOWS_S) + 2
#: Java's PUT_MESSAGE_ENTIRE_TIME_MAX_DESC buckets: the upper bound (exclusive, ms) of each but the last two.
PUT_LATENCY_BOUNDS_MS = (1, 10, 50, 100, 200, 500, 1000, 2000, 3000, 4000, 5000, 10000)
PUT_LATENCY_LABELS = ("[<=0ms]", "[0~10ms]", "[10~50ms]", "[50~100ms]", "[100~200ms]", "[200~500ms]", "[500ms~1s]",
                      "[1~2s]", "[2~3s]", "[3~4s]", "[4~5s]", "[5~10s]", "[10s~]")
#: Java keeps the histogram of the last whole minute, and starts a new one every minute.
DISTRIBUTION_PERIOD_S = 60


class RateCounter:
    __slots__ = ("total", "_samples")

    def __init__(self) -> None:
        self.total = 0
        self._samples: deque[tuple[float, int]] = deque(maxlen=_HISTORY)

    def add(self, count: int = 1) -> None:
        self.total += count

    def sample(self, now: float) -> None:
        self._samples.append((now, self.total))

    def tps(self, window_s: int) -> float:
        if len(self._samples) < 2:
            return 0.0
        last_time, last_total = self._samples[-1]
        times = [t for t, _ in self._samples]
        index = max(0, bisect.bisect_left(times, last_time - window_s))
        first_time, first_total = self._samples[index]
        if last_time <= first_time:
            return 0.0
        return (last_total - first_total) / (last_time - first_time)

    def has_history(self, window_s: int) -> bool:
        """Java reports a window's TPS only once it has a sample that old (one sample a second)."""
        return len(self._samples) > window_s

    def tps_text(self) -> str:
        return tps_text(lambda window: self.tps(window) if self.has_history(window) else None)


def tps_text(tps_of: Callable[[int], float | None]) -> str:
    """Java's "<10 s> <60 s> <600 s>" line: each value as Java prints a double, empty while there is no history."""
    return " ".join("" if value is None else repr(float(value)) for value in map(tps_of, WINDOWS_S))


class PutLatencyHistogram:
    """Puts counted by Java's latency buckets: the running minute and the last whole one."""

    def __init__(self) -> None:
        self.current = [0] * len(PUT_LATENCY_LABELS)
        #: None until the first minute is over (Java then prints "null").
        self.last: list[int] | None = None
        self.all_time = [0] * len(PUT_LATENCY_LABELS)
        self.total_ms = 0

    def add(self, latency_ms: int, puts: int = 1) -> None:
        """``puts`` puts that each took ``latency_ms``."""
        # Nearly every put takes under a millisecond: bucket 0 without the search.
        bucket = 0 if latency_ms <= 0 else bisect.bisect_right(PUT_LATENCY_BOUNDS_MS, latency_ms)
        self.current[bucket] += puts
        self.all_time[bucket] += puts
        self.total_ms += max(latency_ms, 0) * puts

    def roll(self) -> None:
        self.last = self.current
        self.current = [0] * len(PUT_LATENCY_LABELS)

    def text(self) -> str:
        if self.last is None:
            return "null"
        return "".join(f"{label}:{count} " for label, count in zip(PUT_LATENCY_LABELS, self.last))

    def last_minute(self) -> list[int]:
        return self.last if self.last is not None else [0] * len(PUT_LATENCY_LABELS)

    def percentile_ms(self, fraction: float) -> float:
        """The upper bound of the bucket holding the ``fraction`` quantile of the last minute's puts."""
        counts = self.last_minute()
        total = sum(counts)
        if total == 0:
            return 0.0
        wanted = fraction * total
        seen = 0
        for index, count in enumerate(counts):
            seen += count
            if seen >= wanted:
                break
        return 0.0 if index == 0 else float(PUT_LATENCY_BOUNDS_MS[min(index, len(PUT_LATENCY_BOUNDS_MS) - 1)])


class BrokerStats:
    def __init__(self, cluster_name: str = "DefaultCluster") -> None:
        self.boot_timestamp = now_ms()
        self.manager = BrokerStatsManager(cluster_name, self.boot_timestamp)
        self.put = RateCounter()
        self.put_size = 0
        self.put_failed = 0
        self.put_latency = PutLatencyHistogram()
        self.get_found = RateCounter()
        self.get_miss = RateCounter()
        self.get_transferred = RateCounter()
        self.put_max_latency_ms = 0
        self.get_max_latency_ms = 0
        self.put_total_today_morning = 0
        self.put_total_yesterday_morning = 0
        self.get_total_today_morning = 0
        self.get_total_yesterday_morning = 0
        self._day = time.localtime().tm_yday
        self._next_roll = time.monotonic() + DISTRIBUTION_PERIOD_S

    def on_put(self, topic: str, messages: int, size: int, latency_ms: int, puts: int = 1) -> None:
        """``puts`` stored sends of ``topic`` (``messages`` messages of ``size`` bytes in all), each of which took
        ``latency_ms``: the same counts as that many calls of one put each (a front's buffer makes one call
        per topic)."""
        # Every stored send comes here: the counter's total is added to in place, one call fewer per put.
        self.put.total += messages
        self.put_size += size
        self.put_latency.add(latency_ms, puts)
        if latency_ms > self.put_max_latency_ms:
            self.put_max_latency_ms = latency_ms
        self.manager.on_put(topic, messages, size, puts)

    def on_put_failed(self) -> None:
        self.put_failed += 1

    def on_get(self, group: str, topic: str, messages: int, size: int = 0, latency_ms: int = 0) -> None:
        """One pull answered: ``messages`` found (0 for a miss) of ``size`` bytes, read in ``latency_ms``."""
        if latency_ms > self.get_max_latency_ms:
            self.get_max_latency_ms = latency_ms
        if messages > 0:
            self.get_found.add(1)
            self.get_transferred.add(messages)
            self.manager.on_get(group, topic, messages, size, latency_ms)
        else:
            self.get_miss.add(1)

    def on_send_back(self, group: str, topic: str) -> None:
        self.manager.on_send_back(group, topic)

    def group_get_tps(self, group: str, topic: str) -> float:
        return self.manager.group_get_tps(group, topic)

    def sample(self) -> None:
        now = time.monotonic()
        for counter in (self.put, self.get_found, self.get_miss, self.get_transferred):
            counter.sample(now)
        self.manager.tick()
        if now >= self._next_roll:
            self._next_roll = now + DISTRIBUTION_PERIOD_S
            self.put_latency.roll()
        day = time.localtime().tm_yday
        if day != self._day:
            self._day = day
            self.put_total_yesterday_morning = self.put_total_today_morning
            self.put_total_today_morning = self.put.total
            self.get_total_yesterday_morning = self.get_total_today_morning
            self.get_total_today_morning = self.get_transferred.total

    def runtime_info(self) -> dict[str, str]:
        runtime_ms = now_ms() - self.boot_timestamp
        seconds = runtime_ms // 1000
        times_total = max(self.put.total, 1)
        return {
            "bootTimestamp": str(self.boot_timestamp),
            "runtime": f"[ {seconds // 86400} days, {seconds // 3600 % 24} hours, {seconds // 60 % 60} minutes, "
                       f"{seconds % 60} seconds ]",
            "putMessageEntireTimeMax": str(self.put_max_latency_ms),
            "putMessageTimesTotal": str(times_total),
            "putMessageFailedTimes": str(self.put_failed),
            "putMessageSizeTotal": str(self.put_size),
            "putMessageAverageSize": str(self.put_size / times_total),
            "putMessageDistributeTime": self.put_latency.text(),
            "putLatency99": f"{self.put_latency.percentile_ms(0.99):.2f}",
            "putLatency999": f"{self.put_latency.percentile_ms(0.999):.2f}",
            "getMessageEntireTimeMax": str(self.get_max_latency_ms),
            "dispatchMaxBuffer": "0",
            "putTps": self.put.tps_text(),
            "getFoundTps": self.get_found.tps_text(),
            "getMissTps": self.get_miss.tps_text(),
            "getTotalTps": tps_text(lambda window: self.get_found.tps(window) + self.get_miss.tps(window)
                                    if self.get_found.has_history(window) else None),
            "getTransferedTps": self.get_transferred.tps_text(),
            "msgPutTotalTodayNow": str(self.put.total),
            "msgPutTotalTodayMorning": str(self.put_total_today_morning),
            "msgPutTotalYesterdayMorning": str(self.put_total_yesterday_morning),
            "msgGetTotalTodayNow": str(self.get_transferred.total),
            "msgGetTotalTodayMorning": str(self.get_total_today_morning),
            "msgGetTotalYesterdayMorning": str(self.get_total_yesterday_morning),
        }
