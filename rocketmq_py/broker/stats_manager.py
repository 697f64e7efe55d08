"""Per-topic and per-group statistics as Java's store/stats BrokerStatsManager.

The statistic names and key shapes are Java's, because mqadmin and the
dashboard ask for them by name (VIEW_BROKER_STATS_DATA): ``TOPIC_PUT_NUMS``
keyed by topic, ``GROUP_GET_NUMS`` keyed by ``topic@group``,
``BROKER_PUT_NUMS`` keyed by the cluster name, and so on. Every statistic
set is sampled every 10 s, 10 min and 1 h from the manager's creation, as
Java's timers do.
"""
from __future__ import annotations

from rocketmq_py.common.clock import now_ms
from rocketmq_py.common.stats import (
    DAY_PERIOD_MS,
    HOUR_PERIOD_MS,
    MINUTE_PERIOD_MS,
    StatsItem,
    StatsItemSet,
    StatsSnapshot,
)

TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
TOPIC_PUT_SIZE = "TOPIC_PUT_SIZE"
GROUP_GET_NUMS = "GROUP_GET_NUMS"
GROUP_GET_SIZE = "GROUP_GET_SIZE"
GROUP_GET_LATENCY = "GROUP_GET_LATENCY"
SNDBCK_PUT_NUMS = "SNDBCK_PUT_NUMS"
BROKER_PUT_NUMS = "BROKER_PUT_NUMS"
BROKER_GET_NUMS = "BROKER_GET_NUMS"
STATS_NAMES = (TOPIC_PUT_NUMS, TOPIC_PUT_SIZE, GROUP_GET_NUMS, GROUP_GET_SIZE, GROUP_GET_LATENCY, SNDBCK_PUT_NUMS,
               BROKER_PUT_NUMS, BROKER_GET_NUMS)


def group_key(topic: str, group: str) -> str:
    return f"{topic}@{group}"


class BrokerStatsManager:
    def __init__(self, cluster_name: str, started_ms: int | None = None) -> None:
        self.cluster_name = cluster_name
        self.sets = {name: StatsItemSet(name) for name in STATS_NAMES}
        start = now_ms() if started_ms is None else started_ms
        self._due = {MINUTE_PERIOD_MS: start, HOUR_PERIOD_MS: start, DAY_PERIOD_MS: start}
        #: Each topic's three items a put adds to, found once: a put is the broker's most frequent event.
        #: Emptied when a topic's items are removed, so it never holds an item its set has dropped.
        self._put_items: dict[str, tuple[StatsItem, StatsItem, StatsItem]] = {}
        #: The same for each (topic, group) a pull adds to: its four items. Emptied as ``_put_items`` is.
        self._get_items: dict[tuple[str, str], tuple[StatsItem, StatsItem, StatsItem, StatsItem]] = {}

    def on_put(self, topic: str, messages: int, size: int, puts: int = 1) -> None:
        """``puts`` puts of ``topic``, of ``messages`` messages and ``size`` bytes in all."""
        items = self._put_items.get(topic)
        if items is None:
            sets = self.sets
            items = self._put_items[topic] = (sets[TOPIC_PUT_NUMS].item(topic), sets[TOPIC_PUT_SIZE].item(topic),
                                              sets[BROKER_PUT_NUMS].item(self.cluster_name))
        # StatsItem.add, written out: a put is the broker's most frequent event, and these are three calls.
        nums, sizes, broker = items
        nums.value += messages
        nums.times += puts
        sizes.value += size
        sizes.times += puts
        # Java adds to the broker-wide items' value only, leaving their times at 0.
        broker.value += messages

    def on_get(self, group: str, topic: str, messages: int, size: int, latency_ms: int) -> None:
        items = self._get_items.get((topic, group))
        if items is None:
            sets = self.sets
            key = group_key(topic, group)
            items = self._get_items[(topic, group)] = (
                sets[GROUP_GET_NUMS].item(key), sets[GROUP_GET_SIZE].item(key),
                sets[BROKER_GET_NUMS].item(self.cluster_name), sets[GROUP_GET_LATENCY].item(key))
        # StatsItem.add, written out, as for a put.
        nums, sizes, broker, latency = items
        nums.value += messages
        nums.times += 1
        sizes.value += size
        sizes.times += 1
        broker.value += messages
        latency.value += latency_ms
        latency.times += 1

    def on_send_back(self, group: str, topic: str) -> None:
        self.sets[SNDBCK_PUT_NUMS].add(group_key(topic, group), 1, 1)

    def item(self, stats_name: str, stats_key: str) -> StatsItem | None:
        found = self.sets.get(stats_name)
        return found.get(stats_key) if found is not None else None

    def group_get_tps(self, group: str, topic: str) -> float:
        return self.sets[GROUP_GET_NUMS].in_minute(group_key(topic, group)).tps

    def value(self, stats_name: str, stats_key: str) -> int:
        found = self.item(stats_name, stats_key)
        return found.value if found is not None else 0

    def minute(self, stats_name: str, stats_key: str) -> StatsSnapshot:
        return self.sets[stats_name].in_minute(stats_key)

    def on_topic_deleted(self, topic: str) -> None:
        self._put_items.clear()
        self._get_items.clear()
        prefix = topic + "@"
        for name in (TOPIC_PUT_NUMS, TOPIC_PUT_SIZE):
            self.sets[name].remove_where(lambda key: key == topic)
        for name in (GROUP_GET_NUMS, GROUP_GET_SIZE, SNDBCK_PUT_NUMS, GROUP_GET_LATENCY):
            self.sets[name].remove_where(lambda key: key.startswith(prefix))

    def on_group_deleted(self, group: str) -> None:
        self._get_items.clear()
        suffix = "@" + group
        for name in (GROUP_GET_NUMS, GROUP_GET_SIZE, SNDBCK_PUT_NUMS, GROUP_GET_LATENCY):
            self.sets[name].remove_where(lambda key: key.endswith(suffix))

    def tick(self, at_ms: int | None = None) -> None:
        """Take every sample that is due; called often (once a second), it samples on Java's periods."""
        at = now_ms() if at_ms is None else at_ms
        for period, due in self._due.items():
            if at < due:
                continue
            for stats in self.sets.values():
                if period == MINUTE_PERIOD_MS:
                    stats.sample_minute(at)
                elif period == HOUR_PERIOD_MS:
                    stats.sample_hour(at)
                else:
                    stats.sample_day(at)
            following = due + period
            # After a stall longer than a period, go on from now rather than sampling in a burst.
            self._due[period] = following if following > at else at + period
