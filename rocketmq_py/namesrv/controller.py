"""The name server process (Java's namesrv/NamesrvController and BrokerHousekeepingService).

Owns the remoting server, the route and KV managers, the broker expiry scan
(every 10 s, brokers silent for 120 s are dropped) and the connection
listener that drops a broker as soon as its connection closes.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, TYPE_CHECKING

from rocketmq_py.common.metrics_http import MetricsHttpServer
from rocketmq_py.namesrv.config import NamesrvConfig
from rocketmq_py.namesrv.kv_config import KVConfigManager
from rocketmq_py.namesrv.metrics import NamesrvMetrics
from rocketmq_py.namesrv.processor import NamesrvProcessor
from rocketmq_py.namesrv.route_info import RouteInfoManager
from rocketmq_py.remoting import ConnectionListener, ProcessorTable, RemotingServer, RemotingServerConfig

if TYPE_CHECKING:
    from rocketmq_py.remoting import RemotingConnection

_log = logging.getLogger(__name__)


class _BrokerHousekeeping(ConnectionListener):
    """Drops the broker of a connection that closed, idled out or failed."""

    def __init__(self, routes: RouteInfoManager) -> None:
        self.routes = routes

    def on_close(self, connection: RemotingConnection) -> None:
        self.routes.on_channel_destroy(connection.remote_address, connection)

    def on_idle(self, connection: RemotingConnection) -> None:
        self.routes.on_channel_destroy(connection.remote_address, connection)

    def on_exception(self, connection: RemotingConnection, error: BaseException) -> None:
        self.routes.on_channel_destroy(connection.remote_address, connection)


class NamesrvController:
    """A name server: ``await start()``, then ``await shutdown()`` (or ``async with``)."""

    def __init__(self, config: NamesrvConfig | None = None) -> None:
        self.config = config or NamesrvConfig()
        self.routes = RouteInfoManager(expired_millis=self.config.broker_channel_expired_millis)
        self.kv_config = KVConfigManager(self.config.kv_config_path or None)
        self.processor = NamesrvProcessor(self.config, self.routes, self.kv_config)
        server_config = RemotingServerConfig(
            server_channel_max_idle_time_seconds=self.config.server_channel_max_idle_time_seconds,
            server_async_semaphore_value=self.config.server_async_semaphore_value,
            server_oneway_semaphore_value=self.config.server_oneway_semaphore_value,
            server_socket_backlog=self.config.server_socket_backlog,
        )
        self.server = RemotingServer(
            self.config.bind_address, self.config.listen_port, self.processor.register_into(ProcessorTable()),
            config=server_config, listeners=[_BrokerHousekeeping(self.routes)],
        )
        self._scan_task: asyncio.Task[Any] | None = None
        self.metrics_server: MetricsHttpServer | None = None

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def address(self) -> str:
        host = self.config.bind_address
        if host in ("0.0.0.0", "", "::"):
            host = "127.0.0.1"
        return f"{host}:{self.port}"

    async def start(self) -> None:
        self.kv_config.load()
        await self.server.start()
        if self.config.metrics_port:
            metrics = NamesrvMetrics(self)
            self.metrics_server = MetricsHttpServer(self.config.bind_address, self.config.metrics_port,
                                                    metrics.collect, metrics.health, "name server")
            try:
                await self.metrics_server.start()
            except BaseException:
                await self.server.shutdown(0)
                raise
        self._scan_task = asyncio.get_running_loop().create_task(self._scan_brokers(), name="namesrv-broker-scan")
        _log.info("The Name Server boot success. listening on %s", self.address)

    async def _scan_brokers(self) -> None:
        interval = self.config.scan_not_active_broker_interval_millis / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                self.routes.scan_not_active_broker()
            except Exception:
                _log.exception("scanning for inactive brokers failed")

    async def shutdown(self) -> None:
        task, self._scan_task = self._scan_task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
        if self.metrics_server is not None:
            await self.metrics_server.shutdown()
        await self.server.shutdown()
        _log.info("the name server on port %s shut down", self.config.listen_port)

    async def __aenter__(self) -> NamesrvController:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.shutdown()
