"""Broker counters for GET_BROKER_RUNTIME_INFO and GET_CONSUME_STATS (the parts of Java's
StoreStatsService, BrokerStats and BrokerStatsManager that mqadmin shows).

Counters only count; :meth:`BrokerStats.sample` (once a second) keeps their
history, from which TPS over 10 s, 60 s and 600 s are computed as Java does
("putTps" is "<10s> <60s> <600s>").
"""
from __future__ import annotations

import bisect
import time
from collections import deque

WINDOWS_S = (10, 60, 600)
_HISTORY = max(WINDOWS_S) + 2


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

    def tps_text(self) -> str:
        return " ".join(f"{self.tps(window):.2f}" for window in WINDOWS_S)


class BrokerStats:
    def __init__(self) -> None:
        self.boot_timestamp = time.time_ns() // 1_000_000
        self.put = RateCounter()
        self.put_size = 0
        self.put_failed = 0
        self.get_found = RateCounter()
        self.get_miss = RateCounter()
        self.get_transferred = RateCounter()
        self.group_get: dict[tuple[str, str], RateCounter] = {}
        self.put_max_latency_ms = 0
        self.put_total_today_morning = 0
        self.put_total_yesterday_morning = 0
        self.get_total_today_morning = 0
        self.get_total_yesterday_morning = 0
        self._day = time.localtime().tm_yday

    def on_put(self, messages: int, size: int, latency_ms: int) -> None:
        self.put.add(messages)
        self.put_size += size
        if latency_ms > self.put_max_latency_ms:
            self.put_max_latency_ms = latency_ms

    def on_get(self, group: str, topic: str, messages: int) -> None:
        if messages > 0:
            self.get_found.add(1)
            self.get_transferred.add(messages)
            counter = self.group_get.get((group, topic))
            if counter is None:
                counter = self.group_get[(group, topic)] = RateCounter()
            counter.add(messages)
        else:
            self.get_miss.add(1)

    def group_get_tps(self, group: str, topic: str) -> float:
        counter = self.group_get.get((group, topic))
        return counter.tps(60) if counter is not None else 0.0

    def sample(self) -> None:
        now = time.monotonic()
        for counter in (self.put, self.get_found, self.get_miss, self.get_transferred, *self.group_get.values()):
            counter.sample(now)
        day = time.localtime().tm_yday
        if day != self._day:
            self._day = day
            self.put_total_yesterday_morning = self.put_total_today_morning
            self.put_total_today_morning = self.put.total
            self.get_total_yesterday_morning = self.get_total_today_morning
            self.get_total_today_morning = self.get_transferred.total

    def runtime_info(self) -> dict[str, str]:
        runtime_ms = time.time_ns() // 1_000_000 - self.boot_timestamp
        seconds = runtime_ms // 1000
        times_total = max(self.put.total, 1)
        get_total = [self.get_found.tps(w) + self.get_miss.tps(w) for w in WINDOWS_S]
        return {
            "bootTimestamp": str(self.boot_timestamp),
            "runtime": f"[ {seconds // 86400} days, {seconds // 3600 % 24} hours, {seconds // 60 % 60} minutes, "
                       f"{seconds % 60} seconds ]",
            "putMessageEntireTimeMax": str(self.put_max_latency_ms),
            "putMessageTimesTotal": str(times_total),
            "putMessageFailedTimes": str(self.put_failed),
            "putMessageSizeTotal": str(self.put_size),
            "putMessageAverageSize": str(self.put_size / times_total),
            "putTps": self.put.tps_text(),
            "getFoundTps": self.get_found.tps_text(),
            "getMissTps": self.get_miss.tps_text(),
            "getTotalTps": " ".join(f"{value:.2f}" for value in get_total),
            "getTransferedTps": self.get_transferred.tps_text(),
            "msgPutTotalTodayNow": str(self.put.total),
            "msgPutTotalTodayMorning": str(self.put_total_today_morning),
            "msgPutTotalYesterdayMorning": str(self.put_total_yesterday_morning),
            "msgGetTotalTodayNow": str(self.get_transferred.total),
            "msgGetTotalTodayMorning": str(self.get_total_today_morning),
            "msgGetTotalYesterdayMorning": str(self.get_total_yesterday_morning),
        }
