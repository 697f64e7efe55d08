"""The name server's KV config (what ``mqadmin updateKvConfig`` and ``deleteKvConfig`` change): namespaced keys
such as ``ORDER_TOPIC_CONFIG``, the ordered topics' broker queue counts."""
from __future__ import annotations

from typing import TYPE_CHECKING

from rocketmq_py.admin.base import AdminBase

if TYPE_CHECKING:
    from rocketmq_py.common.kv import KVTable


class KVConfigMethods(AdminBase):
    async def create_and_update_kv_config(self, namespace: str, key: str, value: str) -> None:
        """Set ``key`` of ``namespace`` to ``value`` on every name server."""
        await self._on_every_namesrv(
            lambda addr: self._api.put_kv_config(addr, namespace, key, value, self._timeout))

    async def delete_kv_config(self, namespace: str, key: str) -> None:
        """Remove ``key`` of ``namespace`` from every name server."""
        await self._on_every_namesrv(lambda addr: self._api.delete_kv_config(addr, namespace, key, self._timeout))

    async def get_kv_config(self, namespace: str, key: str) -> str | None:
        """The value of ``key`` in ``namespace`` (from one name server); QueryNotFoundError when it is not
        there."""
        return await self._running_instance().call_namesrv(
            lambda addr: self._api.get_kv_config(addr, namespace, key, self._timeout))

    async def get_kv_list_by_namespace(self, namespace: str) -> KVTable:
        """Every key of ``namespace`` with its value (from one name server)."""
        return await self._running_instance().call_namesrv(
            lambda addr: self._api.get_kv_list_by_namespace(addr, namespace, self._timeout))
