"""Clusters and brokers: runtime statistics and configuration (what ``mqadmin clusterList``, ``brokerStatus``,
``getBrokerConfig`` and ``updateBrokerConfig`` ask)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from rocketmq_py.admin.base import AdminBase

if TYPE_CHECKING:
    from rocketmq_py.common.kv import KVTable


class ClusterMethods(AdminBase):
    async def fetch_broker_runtime_stats(self, broker_addr: str) -> KVTable:
        """The runtime statistics of the broker at ``broker_addr`` (``putTps``, ``msgPutTotalTodayNow``,
        ``commitLogMaxOffset``, ...), as ``mqadmin brokerStatus`` prints them."""
        return await self._api.get_broker_runtime_info(broker_addr, self._timeout)

    async def get_broker_config(self, broker_addr: str) -> dict[str, str]:
        """Every configuration key of the broker at ``broker_addr`` with its value, in Java's names."""
        return await self._api.get_broker_config(broker_addr, self._timeout)

    async def update_broker_config(self, broker_addr: str, properties: Mapping[str, str]) -> None:
        """Change configuration keys (Java's names) of the broker at ``broker_addr`` while it runs; the broker
        refuses the keys it does not allow changing (NoPermissionError)."""
        await self._api.update_broker_config(broker_addr, properties, self._timeout)
