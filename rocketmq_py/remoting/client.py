"""The connecting side (Java's ``NettyRemotingClient``): one connection per address, made on demand.

Concurrent callers for an address share one connect attempt; a connection
that closed is replaced by a new one on the next call. Requests that a server
sends to this client (transaction checks, consumer-ids-changed notices, reply
pushes) go through the client's own processor table and are answered as a
server answers.

With ``config.use_tls`` every connection (name servers and brokers alike, as
Java's ``useTLS``) is made with TLS; the SSL context is built when the client
is created, so bad TLS settings fail there with ``TlsConfigError``.
"""
from __future__ import annotations

import asyncio
import logging
import ssl
from concurrent.futures import Executor
from functools import partial
from typing import Iterable

from rocketmq_py.errors import RemotingConnectError, RemotingTimeoutError, TlsHandshakeError
from rocketmq_py.remoting.command import RemotingCommand
from rocketmq_py.remoting.config import RemotingClientConfig
from rocketmq_py.remoting.dispatcher import RequestDispatcher
from rocketmq_py.remoting.invoker import InvokeCallback, Invoker
from rocketmq_py.remoting.processor import ProcessorTable
from rocketmq_py.remoting.protocol import ConnectionListener, ListenerGroup, RemotingConnection
from rocketmq_py.remoting.tls import TlsConfig

__all__ = ["RemotingClient", "parse_address"]

_log = logging.getLogger(__name__)

_CLOSE_GRACE_S = 1.0

#: Errors of a connection attempt that, with TLS, mean the handshake failed rather than the TCP connect.
_HANDSHAKE_ERRORS = (ssl.SSLError, ConnectionResetError, ConnectionAbortedError, BrokenPipeError)


def parse_address(addr: str) -> tuple[str, int]:
    """``"host:port"`` (or ``"[v6]:port"``) as a host and a port."""
    host, sep, port_text = addr.rpartition(":")
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise RemotingConnectError(addr, "the address must look like host:port")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port_text)


class _ConnectionTable(ConnectionListener):
    def __init__(self) -> None:
        self.by_address: dict[str, RemotingConnection] = {}

    def on_close(self, connection: RemotingConnection) -> None:
        for addr, known in tuple(self.by_address.items()):
            if known is connection:
                del self.by_address[addr]


class RemotingClient:
    """Sends requests to servers by address and serves the requests they send back."""

    def __init__(
        self,
        processors: ProcessorTable | None = None,
        *,
        config: RemotingClientConfig | None = None,
        listeners: Iterable[ConnectionListener] = (),
        callback_executor: Executor | None = None,
    ) -> None:
        self.config = config or RemotingClientConfig()
        self.processors = processors if processors is not None else ProcessorTable()
        #: Serves the requests servers send back (transaction checks, consumer id changes, ...).
        self.dispatcher = RequestDispatcher(self.processors)
        self._table = _ConnectionTable()
        self._events = ListenerGroup([self._table, *listeners])
        self._connecting: dict[str, asyncio.Task[RemotingConnection]] = {}
        self._invoker = Invoker(
            self.config.client_async_semaphore_value, self.config.client_oneway_semaphore_value, callback_executor,
        )
        self._closed = False
        self._ssl_context: ssl.SSLContext | None = None
        self._handshake_timeout_s: float | None = None
        if self.config.use_tls:
            tls = self.config.tls if self.config.tls is not None else TlsConfig.from_env()
            self._ssl_context = tls.client_context()
            self._handshake_timeout_s = tls.handshake_timeout_seconds

    @property
    def use_tls(self) -> bool:
        """True when connections are made with TLS."""
        return self._ssl_context is not None

    @property
    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context of the connections (None without TLS)."""
        return self._ssl_context

    # --- requests ------------------------------------------------------------------

    async def invoke(self, addr: str, request: RemotingCommand, timeout_ms: float) -> RemotingCommand:
        """Send ``request`` to ``addr`` and wait up to ``timeout_ms`` (connecting included) for the response."""
        connection = self.connection(addr)
        if connection is None:  # connecting first: what that took comes off the timeout
            connection, timeout_ms = await self._connection_within(addr, request, timeout_ms)
        return await self._invoker.invoke(connection, request, timeout_ms)

    async def invoke_callback(
        self, addr: str, request: RemotingCommand, timeout_ms: float, callback: InvokeCallback,
    ) -> None:
        """Send ``request`` and return once it is written; ``callback`` later gets the response or the error.

        Errors before the request is on the wire (connect, too many requests)
        are raised here; everything after goes to the callback.
        """
        connection, remaining_ms = await self._connection_within(addr, request, timeout_ms)
        await self._invoker.invoke_callback(connection, request, remaining_ms, callback)

    async def invoke_oneway(self, addr: str, request: RemotingCommand, timeout_ms: float) -> None:
        """Send ``request`` with the oneway flag; no response will come."""
        connection, remaining_ms = await self._connection_within(addr, request, timeout_ms)
        await self._invoker.invoke_oneway(connection, request, remaining_ms)

    async def _connection_within(
        self, addr: str, request: RemotingCommand, timeout_ms: float,
    ) -> tuple[RemotingConnection, float]:
        loop = asyncio.get_running_loop()
        started = loop.time()
        connection = await self.get_connection(addr, timeout_ms)
        remaining_ms = timeout_ms - (loop.time() - started) * 1000.0
        if remaining_ms <= 0:
            raise RemotingTimeoutError(addr, timeout_ms, request.opaque)
        return connection, remaining_ms

    # --- connections ---------------------------------------------------------------

    def connection(self, addr: str) -> RemotingConnection | None:
        """The open connection to ``addr``, if there is one."""
        connection = self._table.by_address.get(addr)
        return connection if connection is not None and connection.is_open else None

    async def get_connection(self, addr: str, timeout_ms: float | None = None) -> RemotingConnection:
        """The connection to ``addr``, connecting first when there is none."""
        connection = self.connection(addr)
        if connection is not None:
            return connection
        if self._closed:
            raise RemotingConnectError(addr, "the client is shut down")
        attempt = self._connecting.get(addr)
        if attempt is None:
            attempt = asyncio.get_running_loop().create_task(self._connect(addr))
            self._connecting[addr] = attempt
            attempt.add_done_callback(partial(self._connect_done, addr))
        wait_ms = float(self.config.connect_timeout_millis)
        if timeout_ms is not None:
            wait_ms = min(wait_ms, timeout_ms)
        # asyncio.wait, not wait_for(shield(attempt)): the attempt goes on for the other callers, and this
        # caller's cancellation is never lost (before Python 3.12 wait_for returns the connection when it is
        # cancelled just as the attempt ends, CPython gh-86296, and a cancelled pull would go on pulling).
        done, _ = await asyncio.wait((attempt,), timeout=max(wait_ms, 0.0) / 1000.0)
        if not done:
            raise RemotingConnectError(addr, f"not connected within {wait_ms:g} ms")
        if attempt.cancelled():
            raise RemotingConnectError(addr, "the client was shut down while connecting")
        return attempt.result()

    async def _connect(self, addr: str) -> RemotingConnection:
        host, port = parse_address(addr)
        loop = asyncio.get_running_loop()
        timeout_ms = self.config.connect_timeout_millis
        if self._ssl_context is None:
            opening = loop.create_connection(self._new_connection, host, port)
        else:
            opening = loop.create_connection(
                self._new_connection, host, port,
                ssl=self._ssl_context, ssl_handshake_timeout=self._handshake_timeout_s,
            )
        try:
            _, connection = await asyncio.wait_for(opening, timeout_ms / 1000.0)
        except asyncio.TimeoutError:
            raise RemotingConnectError(addr, f"timed out after {timeout_ms} ms") from None
        except OSError as error:
            if self._ssl_context is not None and isinstance(error, _HANDSHAKE_ERRORS):
                raise TlsHandshakeError(addr, error) from error
            raise RemotingConnectError(addr, error) from error
        if self._closed:
            connection.close()
            raise RemotingConnectError(addr, "the client was shut down while connecting")
        self._table.by_address[addr] = connection
        _log.info("connected to %s (%s)%s", addr, connection.remote_address, " with TLS" if connection.tls else "")
        return connection

    def _connect_done(self, addr: str, attempt: asyncio.Task[RemotingConnection]) -> None:
        if self._connecting.get(addr) is attempt:
            del self._connecting[addr]
        if not attempt.cancelled():
            attempt.exception()  # seen here, whether or not a caller still waits for it

    def _new_connection(self) -> RemotingConnection:
        config = self.config
        return RemotingConnection(
            self.dispatcher.serve, self._events,
            idle_timeout_s=config.client_channel_max_idle_time_seconds,
            max_frame_length=config.max_frame_length,
            write_buffer_limits=(config.write_buffer_high_water_mark, config.write_buffer_low_water_mark),
        )

    def close_connection(self, addr: str) -> None:
        """Close the connection to ``addr``; the next call to it connects again."""
        connection = self._table.by_address.pop(addr, None)
        if connection is not None:
            connection.close()

    def add_listener(self, listener: ConnectionListener) -> None:
        self._events.add(listener)

    def remove_listener(self, listener: ConnectionListener) -> None:
        self._events.remove(listener)

    # --- lifecycle -------------------------------------------------------------------

    @property
    def is_closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Close every connection; waiting requests fail with ``RemotingSendRequestError``."""
        self._closed = True
        for attempt in tuple(self._connecting.values()):
            attempt.cancel()
        self.dispatcher.close()
        for connection in tuple(self._table.by_address.values()):
            connection.close()
        self._invoker.cancel_callbacks()

    async def shutdown(self) -> None:
        """:meth:`close`, then wait until the connections are gone."""
        connections = tuple(self._table.by_address.values())
        self.close()
        closed = await asyncio.gather(*(c.wait_closed(_CLOSE_GRACE_S) for c in connections))
        for connection, was_closed in zip(connections, closed):
            if not was_closed:
                connection.abort()

    async def __aenter__(self) -> RemotingClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.shutdown()
