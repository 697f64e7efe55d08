"""Broker statistics: one statistic of one broker, and the put and get rates of every topic and group (what
``mqadmin statsAll`` prints)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from rocketmq_py.admin.messages import MessageMethods
from rocketmq_py.admin.results import TopicGroupStats
from rocketmq_py.common.topic import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX
from rocketmq_py.errors import RocketMQError

if TYPE_CHECKING:
    from rocketmq_py.common.admin_body import BrokerStatsData

#: The statistics of puts per topic and of gets per ``topic@group`` (Java's BrokerStatsManager names).
TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
GROUP_GET_NUMS = "GROUP_GET_NUMS"


class StatsMethods(MessageMethods):
    async def view_broker_stats_data(self, broker_addr: str, stats_name: str, stats_key: str) -> BrokerStatsData:
        """The statistic ``stats_name`` (``TOPIC_PUT_NUMS``, ``GROUP_GET_NUMS``, ...) of ``stats_key`` (a topic,
        ``topic@group``, ...) on the broker at ``broker_addr``, over the last minute, hour and day."""
        return await self._api.view_broker_stats_data(broker_addr, stats_name, stats_key, self._timeout)

    async def stats_all(self, topic: str | None = None, active_only: bool = False) -> list[TopicGroupStats]:
        """For each topic (but retry and DLQ topics; only ``topic`` when given) and each of its groups: the lag,
        the put and get rates of the last minute and the puts and gets of the last 24 hours, summed over the
        topic's masters (``mqadmin statsAll``). With ``active_only``, topics with no put or get in 24 hours
        are left out. A topic whose statistics cannot be read is left out too, as Java does."""
        rows: list[TopicGroupStats] = []
        for name in sorted((await self.fetch_all_topic_list()).topics):
            if name.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX)) or (topic and name != topic):
                continue
            try:
                rows.extend(await self._topic_stats(name, active_only))
            except RocketMQError:
                continue
        return rows

    async def _topic_stats(self, topic: str, active_only: bool) -> list[TopicGroupStats]:
        masters = [addr for broker in (await self.examine_topic_route_info(topic)).broker_datas
                   if (addr := broker.master_addr) is not None]
        groups = sorted((await self.query_topic_consume_by_who(topic)).group_list)
        in_tps, in_today = await self._rates(masters, TOPIC_PUT_NUMS, topic)
        if not groups:
            return [TopicGroupStats(topic, None, 0, in_tps, in_today)] if not active_only or in_today > 0 else []
        rows = []
        for group in groups:
            out_tps, out_today = await self._rates(masters, GROUP_GET_NUMS, f"{topic}@{group}")
            try:
                accumulation = max((await self.examine_consume_stats(group, topic)).compute_total_diff(), 0)
            except RocketMQError:
                accumulation = 0
            if not active_only or in_today > 0 or out_today > 0:
                rows.append(TopicGroupStats(topic, group, accumulation, in_tps, in_today, out_tps, out_today))
        return rows

    async def _rates(self, masters: list[str], stats_name: str, stats_key: str) -> tuple[float, int]:
        """The minute's rate and the 24 hours' count of a statistic, summed over ``masters`` (a broker that
        cannot say counts as 0)."""
        tps, count = 0.0, 0
        for addr in masters:
            try:
                data = await self.view_broker_stats_data(addr, stats_name, stats_key)
            except RocketMQError:
                continue
            tps += data.stats_minute.tps
            count += data.compute_24_hour_sum()
        return tps, count
