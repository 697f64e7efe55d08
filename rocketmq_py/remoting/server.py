"""The listening side (Java's ``NettyRemotingServer``): a thin protocol, a processor table, a connection registry.

Every accepted connection is a :class:`RemotingConnection` that serves its
requests through the shared processor table. The registry keeps the live
connections so the broker can send requests back to a client (transaction
checks, consumer-ids-changed notices) and learn, through listeners, when a
client connects, idles or goes away.
"""
from __future__ import annotations

import asyncio
import logging
from concurrent.futures import Executor
from typing import Iterable

from rocketmq_py.errors import RemotingConnectError
from rocketmq_py.remoting.command import RemotingCommand
from rocketmq_py.remoting.config import RemotingServerConfig
from rocketmq_py.remoting.invoker import InvokeCallback, Invoker
from rocketmq_py.remoting.listener import ConnectionListener, ListenerGroup
from rocketmq_py.remoting.processor import ProcessorTable
from rocketmq_py.remoting.protocol import RemotingConnection

__all__ = ["RemotingServer"]

_log = logging.getLogger(__name__)

#: How long closing connections may take to flush before they are aborted.
_CLOSE_GRACE_S = 1.0


class _Registry(ConnectionListener):
    def __init__(self) -> None:
        self.connections: dict[RemotingConnection, None] = {}

    def on_connect(self, connection: RemotingConnection) -> None:
        self.connections[connection] = None

    def on_close(self, connection: RemotingConnection) -> None:
        self.connections.pop(connection, None)


class RemotingServer:
    """Accepts connections on ``host:port`` (port 0 picks a free one; see :attr:`port`)."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        processors: ProcessorTable | None = None,
        *,
        config: RemotingServerConfig | None = None,
        listeners: Iterable[ConnectionListener] = (),
        callback_executor: Executor | None = None,
    ) -> None:
        self.host = host
        self.config = config or RemotingServerConfig()
        self.processors = processors if processors is not None else ProcessorTable()
        self._requested_port = port
        self._bound_port: int | None = None
        self._registry = _Registry()
        self._events = ListenerGroup([self._registry, *listeners])
        self._invoker = Invoker(
            self.config.server_async_semaphore_value, self.config.server_oneway_semaphore_value, callback_executor,
        )
        self._server: asyncio.AbstractServer | None = None

    @property
    def port(self) -> int:
        """The bound port; known once :meth:`start` returned."""
        if self._bound_port is None:
            raise RuntimeError("the server has no port yet: await start() first")
        return self._bound_port

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def is_serving(self) -> bool:
        return self._server is not None

    async def start(self) -> None:
        """Bind and start accepting connections."""
        if self._server is not None:
            raise RuntimeError(f"the server is already listening on {self.address}")
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            self._new_connection, self.host, self._requested_port,
            backlog=self.config.server_socket_backlog, reuse_address=True,
        )
        sockets = self._server.sockets or ()
        self._bound_port = sockets[0].getsockname()[1] if sockets else self._requested_port
        _log.info("remoting server listening on %s", self.address)

    def _new_connection(self) -> RemotingConnection:
        config = self.config
        return RemotingConnection(
            self.processors, self._events,
            idle_timeout_s=config.server_channel_max_idle_time_seconds,
            pause_reading_when_write_blocked=True,
            max_frame_length=config.max_frame_length,
            write_buffer_limits=(config.write_buffer_high_water_mark, config.write_buffer_low_water_mark),
        )

    # --- connections ----------------------------------------------------------------

    @property
    def connections(self) -> list[RemotingConnection]:
        """The live connections, oldest first."""
        return list(self._registry.connections)

    def find_connection(self, remote_address: str) -> RemotingConnection | None:
        """The live connection from ``remote_address`` (``"ip:port"``), if any."""
        for connection in self._registry.connections:
            if connection.remote_address == remote_address:
                return connection
        return None

    def add_listener(self, listener: ConnectionListener) -> None:
        self._events.add(listener)

    def remove_listener(self, listener: ConnectionListener) -> None:
        self._events.remove(listener)

    def _resolve(self, connection: RemotingConnection | str) -> RemotingConnection:
        if isinstance(connection, RemotingConnection):
            return connection
        found = self.find_connection(connection)
        if found is None:
            raise RemotingConnectError(connection, "no client is connected from this address")
        return found

    # --- requests to clients -----------------------------------------------------------

    async def invoke(
        self, connection: RemotingConnection | str, request: RemotingCommand, timeout_ms: float,
    ) -> RemotingCommand:
        """Send ``request`` to a connected client and wait for its response."""
        return await self._invoker.invoke(self._resolve(connection), request, timeout_ms)

    async def invoke_callback(
        self, connection: RemotingConnection | str, request: RemotingCommand, timeout_ms: float,
        callback: InvokeCallback,
    ) -> None:
        """Send ``request`` to a connected client; ``callback`` gets the response or the error."""
        await self._invoker.invoke_callback(self._resolve(connection), request, timeout_ms, callback)

    async def invoke_oneway(
        self, connection: RemotingConnection | str, request: RemotingCommand, timeout_ms: float,
    ) -> None:
        """Send ``request`` to a connected client without waiting for any answer."""
        await self._invoker.invoke_oneway(self._resolve(connection), request, timeout_ms)

    # --- lifecycle ---------------------------------------------------------------------

    async def shutdown(self, timeout_s: float | None = None) -> None:
        """Stop accepting, let running processors finish (up to ``timeout_s``), then close every connection."""
        if timeout_s is None:
            timeout_s = self.config.shutdown_timeout_seconds
        server, self._server = self._server, None
        if server is not None:
            server.close()
        connections = self.connections
        for connection in connections:
            connection.stop_reading()
        finished = await asyncio.gather(*(c.wait_requests(timeout_s) for c in connections))
        if not all(finished):
            _log.warning("shutting down with requests still being processed after %.1f s; cancelling them", timeout_s)
        for connection in connections:
            connection.cancel_requests()
            connection.close()
        closed = await asyncio.gather(*(c.wait_closed(_CLOSE_GRACE_S) for c in connections))
        for connection, was_closed in zip(connections, closed):
            if not was_closed:
                connection.abort()
        self._invoker.cancel_callbacks()
        if server is not None:
            await server.wait_closed()
            _log.info("remoting server on %s:%s shut down", self.host, self._bound_port)

    async def __aenter__(self) -> RemotingServer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.shutdown()
