"""The listening side (Java's ``NettyRemotingServer``): a thin protocol, a processor table, a connection registry.

Every accepted connection is a :class:`RemotingConnection` whose requests the
server's :class:`~rocketmq_py.remoting.dispatcher.RequestDispatcher` serves
through the processor table. The registry keeps the live
connections so the broker can send requests back to a client (transaction
checks, consumer-ids-changed notices) and learn, through listeners, when a
client connects, idles or goes away.

TLS follows ``config.tls.server_mode`` (Java's ``tls.server.mode``):
``disabled`` serves plain connections only; ``permissive`` and ``enforcing``
accept on their own sockets and look at the first byte of each connection
before handing it to asyncio: a TLS handshake (``0x16``) gets TLS, anything
else is served plain (permissive) or closed (enforcing). A connection that
fails there, or in its handshake, is closed alone; the server goes on.
"""
from __future__ import annotations

import asyncio
import errno
import logging
import socket
import ssl
from concurrent.futures import Executor
from typing import Callable, Iterable

from rocketmq_py.errors import RemotingConnectError
from rocketmq_py.remoting.command import RemotingCommand
from rocketmq_py.remoting.config import RemotingServerConfig
from rocketmq_py.remoting.dispatcher import RequestDispatcher
from rocketmq_py.remoting.front_pool import FrontPool, FrontService
from rocketmq_py.remoting.invoker import InvokeCallback, Invoker
from rocketmq_py.remoting.processor import ProcessorTable
from rocketmq_py.remoting.protocol import ConnectionListener, ListenerGroup, RemotingConnection
from rocketmq_py.remoting.tls import TLS_HANDSHAKE_MAGIC, TlsConfig, TlsMode

__all__ = ["RemotingServer"]

_log = logging.getLogger(__name__)

#: How long closing connections may take to flush before they are aborted.
_CLOSE_GRACE_S = 1.0
#: How long accepting pauses when the process is out of file descriptors (asyncio's own delay).
_ACCEPT_RETRY_DELAY_S = 1.0
_OUT_OF_RESOURCES = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


def _peer_of(sock: socket.socket) -> str:
    try:
        address = sock.getpeername()
    except OSError:
        return "?"
    return f"{address[0]}:{address[1]}" if isinstance(address, tuple) else str(address)


def _port_of(sockets: Iterable[socket.socket], requested: int) -> int:
    for sock in sockets:
        return int(sock.getsockname()[1])
    return requested


def probe_bind(host: str, port: int) -> None:
    """Bind ``port`` on every address of ``host`` as a server would, then let go; the bind's OSError if it fails.

    For a refusal before start-up work: the server's own bind comes later and still reports a port taken since.
    """
    for family, kind, proto, _, address in socket.getaddrinfo(host or None, port, family=socket.AF_UNSPEC,
                                                              type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE):
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)


def _set_once(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class SniffingListener:
    """Accepts connections itself and decides TLS or plain from each one's first byte (Java's HandshakeHandler).

    The byte is only peeked (``MSG_PEEK``): it stays in the socket, so the TLS
    handshake or the frame decoder then reads the connection from its start.
    """

    def __init__(
        self,
        protocol_factory: Callable[[], asyncio.Protocol],
        mode: TlsMode,
        context: ssl.SSLContext,
        handshake_timeout_s: float,
        first_byte_timeout_s: float | None,
    ) -> None:
        self._protocol_factory = protocol_factory
        self._mode = mode
        self._context = context
        self._handshake_timeout_s = handshake_timeout_s
        self._first_byte_timeout_s = first_byte_timeout_s
        self.sockets: list[socket.socket] = []
        self._accepting: list[asyncio.Task[None]] = []
        self._admitting: set[asyncio.Task[None]] = set()

    async def start(self, host: str, port: int, backlog: int, *, reuse_port: bool = False) -> None:
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(
            host or None, port, family=socket.AF_UNSPEC, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE,
        )
        seen: set[object] = set()
        try:
            for family, kind, proto, _, address in infos:
                if address in seen:
                    continue
                seen.add(address)
                sock = socket.socket(family, kind, proto)
                self.sockets.append(sock)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if reuse_port:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
                if family == socket.AF_INET6 and hasattr(socket, "IPPROTO_IPV6"):
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                try:
                    sock.bind(address)
                except OSError as error:
                    raise OSError(error.errno, f"cannot bind {address}: {error.strerror}") from None
                sock.listen(backlog)
                sock.setblocking(False)
        except BaseException:
            self._close_sockets()
            raise
        self._accepting = [loop.create_task(self._accept(sock)) for sock in self.sockets]

    async def _accept(self, listening: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                sock, _ = await loop.sock_accept(listening)
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                continue
            except OSError as error:
                if listening.fileno() == -1:
                    return
                if error.errno in _OUT_OF_RESOURCES:
                    _log.error("cannot accept connections: %s; trying again in %.0f s", error, _ACCEPT_RETRY_DELAY_S)
                else:
                    _log.exception("accepting a connection failed; trying again in %.0f s", _ACCEPT_RETRY_DELAY_S)
                await asyncio.sleep(_ACCEPT_RETRY_DELAY_S)
                continue
            sock.setblocking(False)
            task = loop.create_task(self._admit(sock))
            self._admitting.add(task)
            task.add_done_callback(self._admitting.discard)

    async def _admit(self, sock: socket.socket) -> None:
        """Peek at the first byte, then hand the socket to asyncio with or without TLS."""
        loop = asyncio.get_running_loop()
        peer = _peer_of(sock)
        try:
            first = await asyncio.wait_for(self._peek(sock), self._first_byte_timeout_s)
        except asyncio.TimeoutError:
            _log.info("closing the connection from %s: nothing received within %g s", peer, self._first_byte_timeout_s)
            sock.close()
            return
        except OSError as error:
            _log.debug("the connection from %s failed before its first byte: %s", peer, error)
            sock.close()
            return
        except BaseException:
            sock.close()
            raise
        if not first:
            sock.close()
            return
        tls = first[0] == TLS_HANDSHAKE_MAGIC
        if not tls:
            if self._mode is TlsMode.ENFORCING:
                _log.warning("closing the plain (non-TLS) connection from %s: this server runs in TLS enforcing mode",
                             peer)
                sock.close()
                return
            opening = loop.connect_accepted_socket(self._protocol_factory, sock)
        else:
            opening = loop.connect_accepted_socket(
                self._protocol_factory, sock, ssl=self._context, ssl_handshake_timeout=self._handshake_timeout_s,
            )
        try:
            await opening
        except (OSError, asyncio.TimeoutError) as error:
            _log.info("closing the connection from %s: %s failed: %s", peer,
                      "the TLS handshake" if tls else "setting it up", str(error) or repr(error))
            sock.close()  # a no-op when the transport closed it already

    @staticmethod
    async def _peek(sock: socket.socket) -> bytes:
        loop = asyncio.get_running_loop()
        while True:
            try:
                return sock.recv(1, socket.MSG_PEEK)
            except (BlockingIOError, InterruptedError):
                pass
            readable: asyncio.Future[None] = loop.create_future()
            fd = sock.fileno()
            loop.add_reader(fd, _set_once, readable)
            try:
                await readable
            finally:
                loop.remove_reader(fd)

    def _close_sockets(self) -> None:
        for sock in self.sockets:
            sock.close()

    def close(self) -> None:
        """Stop accepting and drop the connections still being sniffed or shaking hands."""
        for task in (*self._accepting, *self._admitting):
            task.cancel()
        self._close_sockets()

    async def wait_closed(self) -> None:
        tasks = [*self._accepting, *self._admitting]
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)


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
        self.dispatcher = RequestDispatcher(self.processors)
        self._requested_port = port
        self._bound_port: int | None = None
        self._registry = _Registry()
        self._events = ListenerGroup([self._registry, *listeners])
        self._invoker = Invoker(
            self.config.server_async_semaphore_value, self.config.server_oneway_semaphore_value, callback_executor,
        )
        self._server: asyncio.AbstractServer | SniffingListener | FrontPool | None = None
        self._tls_mode = TlsMode.DISABLED
        #: Serves some requests in the front processes (``config.worker_processes``); set before :meth:`start`.
        self.front_service: FrontService | None = None

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

    @property
    def front_pids(self) -> list[int]:
        """The process ids of the front processes (``config.worker_processes``); empty without them."""
        return self._server.pids if isinstance(self._server, FrontPool) else []

    def push_front_settings(self) -> None:
        """Tell the front processes the :attr:`front_service`'s settings now, when they changed (they are
        checked every tenth of a second anyway)."""
        if isinstance(self._server, FrontPool):
            self._server.push_settings()

    @property
    def tls_mode(self) -> TlsMode:
        """The TLS mode the server runs in (known once :meth:`start` returned)."""
        return self._tls_mode

    async def start(self) -> None:
        """Bind and start accepting connections."""
        if self._server is not None:
            raise RuntimeError(f"the server is already listening on {self.address}")
        tls = self.config.tls if self.config.tls is not None else TlsConfig.from_env()
        mode = tls.server_mode
        loop = asyncio.get_running_loop()
        server: asyncio.AbstractServer | SniffingListener | FrontPool
        if self.config.worker_processes > 0:
            pool = FrontPool(self.config.worker_processes, self._new_connection, self.config, tls,
                             self.front_service)
            self._bound_port = await pool.start(self.host, self._requested_port)
            server = pool
        elif mode is TlsMode.DISABLED:
            plain = await loop.create_server(
                self._new_connection, self.host, self._requested_port,
                backlog=self.config.server_socket_backlog, reuse_address=True,
            )
            server = plain
            self._bound_port = _port_of(plain.sockets or (), self._requested_port)
        else:
            idle_s = self.config.server_channel_max_idle_time_seconds
            listener = SniffingListener(
                self._new_connection, mode, tls.server_context(), tls.handshake_timeout_seconds,
                idle_s if idle_s and idle_s > 0 else None,
            )
            await listener.start(self.host, self._requested_port, self.config.server_socket_backlog)
            server = listener
            self._bound_port = _port_of(listener.sockets, self._requested_port)
        self._server = server
        self._tls_mode = mode
        _log.info("remoting server listening on %s (TLS %s)", self.address, mode.value)

    def _new_connection(self) -> RemotingConnection:
        config = self.config
        return RemotingConnection(
            self.dispatcher.serve, self._events,
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
        if not await self.dispatcher.drain(timeout_s):
            _log.warning("shutting down with requests still being processed after %.1f s; cancelling them", timeout_s)
        self.dispatcher.close()
        for connection in connections:
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
