"""What every area of the asyncio admin client stands on (Java's DefaultMQAdminExtImpl start, shutdown and the
lookups every command makes): the settings, the client instance, the route and cluster lookups on the name
servers, and the broker addresses they name."""
from __future__ import annotations

import dataclasses
import enum
import logging
from typing import TYPE_CHECKING, Any, Awaitable, Callable, TypeVar

from rocketmq_py.admin.config import AdminConfig
from rocketmq_py.client.mq_admin import MQAdminMethods
from rocketmq_py.errors import ClientError, ClientStateError, InvalidArgumentError, NoNameServerError, RocketMQError

if TYPE_CHECKING:
    from rocketmq_py.client.api import MQClientAPI
    from rocketmq_py.client.instance import MQClientInstance
    from rocketmq_py.client.mq_admin_impl import MQAdminImpl
    from rocketmq_py.common.route import ClusterInfo, TopicRouteData

_log = logging.getLogger(__name__)
_Self = TypeVar("_Self", bound="AdminBase")

#: The broker id of a master.
MASTER_ID = 0
#: Consumer statistics, running info and direct consumption wait this many admin timeouts (as Java's).
SLOW_CALL_FACTOR = 3


class AdminState(enum.Enum):
    CREATE_JUST = "CREATE_JUST"
    RUNNING = "RUNNING"
    SHUTDOWN_ALREADY = "SHUTDOWN_ALREADY"
    START_FAILED = "START_FAILED"


def make_admin_config(config: AdminConfig | None, options: dict[str, Any]) -> AdminConfig:
    base = dataclasses.replace(config) if config is not None else AdminConfig()
    known = {f.name for f in dataclasses.fields(AdminConfig)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise InvalidArgumentError(f"unknown admin option(s) {', '.join(unknown)}; see AdminConfig")
    return dataclasses.replace(base, **options)


class AdminBase(MQAdminMethods):
    """The settings and lifecycle of an admin client; the areas (cluster, topics, ...) are mixed in."""

    def __init__(self, *, config: AdminConfig | None = None, **options: Any) -> None:
        self.config = make_admin_config(config, options)
        self.state = AdminState.CREATE_JUST
        self.instance: MQClientInstance | None = None

    async def start(self) -> None:
        """Join the client instance of this client id (connections are made on first use); an admin starts
        once."""
        if self.state is not AdminState.CREATE_JUST:
            raise ClientStateError(f"the admin cannot start: it is {self.state.value} (an admin starts once)")
        if self.config.timeout_millis <= 0:
            raise InvalidArgumentError(f"timeout_millis must be positive, got {self.config.timeout_millis}")
        if (self.config.access_key is None) != (self.config.secret_key is None):
            raise InvalidArgumentError("set both access_key and secret_key for ACL, or neither")
        self.config.serialize_type_code()
        self.state = AdminState.START_FAILED
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.client.instance import get_instance, resolve_instance_name

        resolve_instance_name(self.config)
        instance = get_instance(self.config)
        if not instance.register_admin(self.config.admin_ext_group, self):
            self.state = AdminState.CREATE_JUST
            raise ClientError(f"the admin group {self.config.admin_ext_group!r} was already started in client "
                              f"{instance.client_id}: give this admin another admin_ext_group or instance_name")
        self.instance = instance
        instance.start()
        self.state = AdminState.RUNNING
        _log.info("admin %s started in client %s", self.config.admin_ext_group, instance.client_id)

    async def shutdown(self) -> None:
        """Leave the client instance (which stops when its last client leaves); calling it again does nothing."""
        if self.state is not AdminState.RUNNING:
            self.state = AdminState.SHUTDOWN_ALREADY
            return
        self.state = AdminState.SHUTDOWN_ALREADY
        assert self.instance is not None
        await self.instance.unregister_admin(self.config.admin_ext_group)

    async def close(self) -> None:
        """The same as :meth:`shutdown`."""
        await self.shutdown()

    async def __aenter__(self: _Self) -> _Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.shutdown()

    # --- the plumbing the areas use --------------------------------------------------------------------

    def _running_instance(self) -> MQClientInstance:
        if self.state is not AdminState.RUNNING or self.instance is None:
            raise ClientStateError(f"the admin is not running (state {self.state.value}): call start() first, "
                                   "or use it as a context manager")
        return self.instance

    @property
    def _api(self) -> MQClientAPI:
        return self._running_instance().api

    @property
    def _timeout(self) -> int:
        return self.config.timeout_millis

    def _mq_admin(self) -> MQAdminImpl:
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.client.mq_admin_impl import MQAdminImpl

        return MQAdminImpl(self._running_instance(), self.config)

    def name_server_addresses(self) -> list[str]:
        """The name server addresses this admin uses."""
        return self.config.namesrv_addresses()

    async def _on_every_namesrv(self, rpc: Callable[[str], Awaitable[None]]) -> None:
        """``rpc(address)`` on every name server (a change each of them must make); the last failure is raised
        after all were tried."""
        addresses = self.name_server_addresses()
        if not addresses:
            raise NoNameServerError("no name server address: pass namesrv_addr='host:9876' or set NAMESRV_ADDR")
        failure: RocketMQError | None = None
        for addr in addresses:
            try:
                await rpc(addr)
            except RocketMQError as error:
                _log.warning("name server %s refused the change: %s", addr, error)
                failure = error
        if failure is not None:
            raise failure

    async def examine_broker_cluster_info(self) -> ClusterInfo:
        """The clusters, their brokers and the brokers' addresses, as the name server knows them."""
        return await self._running_instance().call_namesrv(
            lambda addr: self._api.get_cluster_info(addr, self._timeout))

    async def examine_topic_route_info(self, topic: str) -> TopicRouteData:
        """The route of ``topic`` from the name server (its brokers and queues); TopicNotExistError when the
        name server has none."""
        return await self._running_instance().call_namesrv(
            lambda addr: self._api.get_topic_route(addr, topic, self._timeout))

    async def _broker_addrs_of_topic(self, topic: str) -> list[tuple[str, str]]:
        """(broker name, address) of each broker of ``topic``: its master, else a slave."""
        route = await self.examine_topic_route_info(topic)
        found = []
        for broker in route.broker_datas:
            addr = broker.select_broker_addr()
            if addr is not None:
                found.append((broker.broker_name, addr))
        return found

    async def master_addrs_of_cluster(self, cluster: str) -> list[str]:
        """The master address of each broker of ``cluster`` (Java's CommandUtil.fetchMasterAddrByClusterName);
        ClientError when the name server knows no such cluster."""
        info = await self.examine_broker_cluster_info()
        names = self._broker_names(info, cluster)
        return sorted(addr for name in names
                      if (broker := info.broker_addr_table.get(name)) is not None
                      and (addr := broker.broker_addrs.get(MASTER_ID)) is not None)

    async def broker_addrs_of_cluster(self, cluster: str) -> dict[str, list[str]]:
        """Each master address of ``cluster`` with its slaves' addresses (Java's
        CommandUtil.fetchMasterAndSlaveDistinguish)."""
        info = await self.examine_broker_cluster_info()
        found: dict[str, list[str]] = {}
        for name in sorted(self._broker_names(info, cluster)):
            broker = info.broker_addr_table.get(name)
            if broker is None or MASTER_ID not in broker.broker_addrs:
                continue
            found[broker.broker_addrs[MASTER_ID]] = [addr for broker_id, addr in sorted(broker.broker_addrs.items())
                                                     if broker_id != MASTER_ID]
        return found

    @staticmethod
    def _broker_names(info: ClusterInfo, cluster: str) -> set[str]:
        names = info.cluster_addr_table.get(cluster)
        if names is None:
            raise ClientError(f"the name server knows no cluster {cluster!r}: make sure the cluster name exists "
                              "and the name server connected to is right")
        return names

    async def broker_name_of_addr(self, addr: str) -> str:
        """The name of the broker at ``addr`` (Java's CommandUtil.fetchBrokerNameByAddr)."""
        info = await self.examine_broker_cluster_info()
        for name, broker in info.broker_addr_table.items():
            if addr in broker.broker_addrs.values():
                return name
        raise ClientError(f"the name server knows no broker at {addr}: is the address right?")
