"""Blocking request/response over a socket owned by the calling thread, with no event loop in between.

The blocking clients run their asyncio core on a background loop, and every
call hops there and back: two thread switches and GIL hand-offs, which cost
more CPU than the RPC itself. For the hottest blocking call (a producer's sync
send) a :class:`DirectChannel` lets the caller write the request and read the
response itself. Java's sync invoke also waits in the calling thread; it only
shares the socket with the event loop, which a Python thread cannot do cheaply.

Each thread gets its own connection per address (:class:`DirectChannels`), so
a channel never has two requests in flight and needs no lock. A response whose
request already timed out is read and dropped when it arrives. A channel that
broke or that the server closed is replaced by a new connection on the next
call, and so is one idle for half of ``client_channel_max_idle_time_seconds``,
before the server's own idle limit can close it under a request.
"""
from __future__ import annotations

import logging
import select
import socket
import ssl
import threading
import time
import weakref

from rocketmq_py import codec
from rocketmq_py.errors import (
    CodecError,
    RemotingConnectError,
    RemotingSendRequestError,
    RemotingTimeoutError,
    TlsHandshakeError,
)
from rocketmq_py.remoting.client import parse_address
from rocketmq_py.remoting.command import RemotingCommand
from rocketmq_py.remoting.config import RemotingClientConfig

__all__ = ["DirectChannel", "DirectChannels"]

_log = logging.getLogger(__name__)

_READ_CHUNK = 65536


class DirectChannel:
    """One blocking connection to ``addr``; :meth:`call` sends a request and returns its response.

    Not thread-safe: one thread uses a channel (see :class:`DirectChannels`).
    """

    def __init__(self, addr: str, config: RemotingClientConfig, ssl_context: ssl.SSLContext | None = None) -> None:
        self.addr = addr
        self._config = config
        self._ssl_context = ssl_context
        self._sock: socket.socket | None = None
        self._decoder = codec.FrameDecoder(config.max_frame_length)
        self._poller = select.poll()
        self._last_used = 0.0
        self._owner = threading.get_ident()

    @property
    def is_connected(self) -> bool:
        return self._sock is not None

    def call(self, request: RemotingCommand, timeout_ms: float) -> RemotingCommand:
        """Send ``request`` and wait up to ``timeout_ms`` (connecting included) for its response."""
        deadline = time.monotonic() + timeout_ms / 1000.0
        sock = self._usable_socket(timeout_ms)
        frame = codec.encode_command(request)
        try:
            sock.settimeout(max(deadline - time.monotonic(), 0.0))
            sock.sendall(frame)
        except OSError as error:
            # A partial write leaves the stream unusable, and a timed-out write may be partial.
            self.close()
            raise RemotingSendRequestError(self.addr, error) from error
        response = self._read_response(sock, request.opaque, deadline, timeout_ms)
        self._last_used = time.monotonic()
        return response

    def close(self) -> None:
        """Close the connection; the next call connects again. From another thread, see :meth:`abort`."""
        sock, self._sock = self._sock, None
        if sock is not None:
            self._poller.unregister(sock)
            self._decoder = codec.FrameDecoder(self._config.max_frame_length)
            sock.close()

    def abort(self) -> None:
        """End the connection from any thread: a call waiting in the owner thread fails at once.

        Only the owner thread closes the socket itself (in its next call, or when it ends): closing a
        descriptor that another thread may be reading could hand that read a reused descriptor.
        """
        if threading.get_ident() == self._owner:
            self.close()
            return
        sock = self._sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    # --- connection ----------------------------------------------------------------

    def _usable_socket(self, timeout_ms: float) -> socket.socket:
        sock = self._sock
        if sock is not None and not self._still_open(sock):
            _log.debug("the direct channel to %s was closed by the server; connecting again", self.addr)
            self.close()
            sock = None
        if sock is None:
            sock = self._connect(min(float(self._config.connect_timeout_millis), timeout_ms))
        return sock

    def _still_open(self, sock: socket.socket) -> bool:
        """False when the server closed the connection (brokers close idle ones); reads what waits meanwhile."""
        if time.monotonic() - self._last_used >= self._config.client_channel_max_idle_time_seconds / 2:
            # No heartbeat keeps this connection busy, and servers close idle ones (after 120 s by default, the
            # same limit as ours): half of it is a margin against writing while the server is closing it.
            return False
        if not self._poller.poll(0):
            return True
        # Readable while nothing is asked: late responses to timed-out requests, or the end of the stream.
        try:
            sock.setblocking(False)
            data = sock.recv(_READ_CHUNK)
        except (BlockingIOError, ssl.SSLWantReadError):
            return True
        except OSError:
            return False
        if not data:
            return False
        try:
            for late in self._decoder.feed(data):
                _log.debug("dropped a late frame (opaque %d) on the direct channel to %s", late.opaque, self.addr)
        except CodecError:
            return False
        return True

    def _connect(self, timeout_ms: float) -> socket.socket:
        host, port = parse_address(self.addr)
        timeout_s = max(timeout_ms, 0.0) / 1000.0
        try:
            raw = socket.create_connection((host, port), timeout=timeout_s)
        except OSError as error:
            raise RemotingConnectError(self.addr, error) from error
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock = raw
        if self._ssl_context is not None:
            try:
                sock = self._ssl_context.wrap_socket(raw, server_hostname=host)
            except (OSError, ssl.SSLError) as error:
                raw.close()
                raise TlsHandshakeError(self.addr, error) from error
        self._sock = sock
        self._poller.register(sock, select.POLLIN)
        self._last_used = time.monotonic()
        _log.debug("direct channel connected to %s%s", self.addr, " with TLS" if self._ssl_context else "")
        return sock

    # --- reading ----------------------------------------------------------------------

    def _read_response(self, sock: socket.socket, opaque: int, deadline: float, timeout_ms: float) -> RemotingCommand:
        first = True  # the first read keeps the timeout the write set (each settimeout is a system call)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RemotingTimeoutError(self.addr, timeout_ms, opaque)
            try:
                if not first:
                    sock.settimeout(remaining)
                first = False
                data = sock.recv(_READ_CHUNK)
            except (socket.timeout, ssl.SSLWantReadError):
                raise RemotingTimeoutError(self.addr, timeout_ms, opaque) from None
            except OSError as error:
                self.close()
                raise RemotingSendRequestError(self.addr, f"the connection broke while waiting: {error}") from error
            if not data:
                self.close()
                raise RemotingSendRequestError(self.addr, "the connection closed while waiting for the response")
            try:
                frames = self._decoder.feed(data)
            except CodecError as error:
                self.close()
                raise RemotingSendRequestError(self.addr, f"the server sent a malformed frame: {error}") from error
            found = None
            for frame in frames:
                if frame.is_response and frame.opaque == opaque:
                    found = frame
                else:
                    # Only responses are asked for here: servers send their requests (transaction checks and
                    # the like) to the connection the client registered with its heartbeat, never to this one.
                    _log.debug("dropped a frame (code %d, opaque %d) nobody waits for on the direct channel to %s",
                               frame.code, frame.opaque, self.addr)
            if found is not None:
                return found


class DirectChannels:
    """The calling thread's :class:`DirectChannel` for each address; :meth:`close` closes every thread's."""

    def __init__(self, config: RemotingClientConfig, ssl_context: ssl.SSLContext | None = None) -> None:
        self._config = config
        self._ssl_context = ssl_context
        self._local = threading.local()
        self._lock = threading.Lock()
        # weak: a thread's channels go away with the thread (and its socket is closed then)
        self._all: weakref.WeakSet[DirectChannel] = weakref.WeakSet()
        self._closed = False

    def get(self, addr: str) -> DirectChannel:
        """This thread's channel to ``addr`` (made, not yet connected, on the first call)."""
        if self._closed:
            raise RemotingConnectError(addr, "the client is shut down")
        mine: dict[str, DirectChannel] | None = getattr(self._local, "channels", None)
        if mine is None:
            mine = self._local.channels = {}
        channel = mine.get(addr)
        if channel is None:
            with self._lock:
                if self._closed:
                    raise RemotingConnectError(addr, "the client is shut down")
                channel = mine[addr] = DirectChannel(addr, self._config, self._ssl_context)
                self._all.add(channel)
        return channel

    def close(self) -> None:
        """End every thread's channels; a later :meth:`get` raises ``RemotingConnectError``."""
        with self._lock:
            self._closed = True
            channels = list(self._all)
        for channel in channels:
            channel.abort()
