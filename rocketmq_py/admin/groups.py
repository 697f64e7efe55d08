"""Subscription groups on the brokers: create and update, delete, list (what ``mqadmin updateSubGroup`` and
``deleteSubGroup`` change, and the dashboard lists)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from rocketmq_py.admin.base import AdminBase

if TYPE_CHECKING:
    from rocketmq_py.common.subscription_group import SubscriptionGroupConfig


class GroupMethods(AdminBase):
    async def create_and_update_subscription_group_config(self, broker_addr: str,
                                                          config: SubscriptionGroupConfig) -> None:
        """Create the subscription group of ``config`` on the broker at ``broker_addr``, or change it."""
        await self._api.create_subscription_group(broker_addr, config, self._timeout)

    async def delete_subscription_group(self, broker_addr: str, group: str, remove_offset: bool = False) -> None:
        """Delete ``group`` on the broker at ``broker_addr``; with ``remove_offset`` its committed offsets too."""
        await self._api.delete_subscription_group(broker_addr, group, remove_offset, self._timeout)

    async def get_all_subscription_group(self, broker_addr: str) -> dict[str, SubscriptionGroupConfig]:
        """Every subscription group of the broker at ``broker_addr``, by name (the built-in ones included)."""
        return await self._api.get_all_subscription_group(broker_addr, self._timeout)

    async def examine_subscription_group_config(self, broker_addr: str, group: str) -> SubscriptionGroupConfig | None:
        """The settings of ``group`` on the broker at ``broker_addr``; None when it has none."""
        return (await self.get_all_subscription_group(broker_addr)).get(group)
