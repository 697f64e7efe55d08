"""One RocketMQ connection as an asyncio protocol, the same for client and server sides.

It plays the parts of Java's ``NettyDecoder``/``NettyEncoder`` pipeline and of
its ``ChannelEventListener``: bytes go through ``codec.FrameDecoder``; a
response completes the pending request of its opaque; a request goes to the
connection's request handler (the server's or client's
:class:`~rocketmq_py.remoting.dispatcher.RequestDispatcher`), which serves it
and writes its answer back here. A frame that cannot be decoded closes this
connection (Java closes the channel), and a lost connection fails its pending
requests at once rather than at their timeouts.

Frames written during one pass of the event loop go to the transport in
one write at the end of the pass (``call_soon``), or at once when they
pass :data:`_FLUSH_AT_BYTES`: under load that is one system call for many
answers instead of one each.

Flow control follows aiohttp's ``base_protocol``: the transport's write
buffer watermarks pause and resume writers, who wait on ``_writable`` after
each frame. On the server side the connection also stops reading while its
writes are blocked, so a peer that sends requests without reading the
answers cannot make the server buffer without bound. The client side keeps
reading, which is what lets a blocked server drain.
"""
from __future__ import annotations

import asyncio
import logging
import socket
from collections import deque
from dataclasses import dataclass
from typing import Callable, Iterable, cast

from rocketmq_py import codec
from rocketmq_py.errors import CodecError, RemotingSendRequestError
from rocketmq_py.remoting import command as commands
from rocketmq_py.remoting.command import RemotingCommand, RemotingSysResponseCode, create_response
from rocketmq_py.remoting.file_region import FileRegion, FileRegionResponse, region_head
from rocketmq_py.remoting.future import Outcome, ResponseFuture
from rocketmq_py.remoting.writes import write_buffers

__all__ = ["RemotingConnection", "RequestContext", "RequestHandler", "ConnectionListener", "ListenerGroup"]

_log = logging.getLogger(__name__)

#: Opaques of the last requests whose callers gave up (a cancelled pull): their late responses are expected.
_ABANDONED_REMEMBERED = 1024
#: Buffered frames of more bytes than this are written at once rather than at the end of the loop pass,
#: so the transport's watermarks see them and pause the writers.
_FLUSH_AT_BYTES = 256 * 1024
#: An answer's body of this many bytes or more is written apart from its frame's head instead of copied into it.
_BODY_APART_AT = 4096


def _address_text(address: object) -> str:
    if isinstance(address, tuple) and len(address) >= 2:
        return f"{address[0]}:{address[1]}"
    return "" if address is None else str(address)


@dataclass(frozen=True)
class RequestContext:
    """Where a request came from, as its processor sees it (Java's ``ChannelHandlerContext``): the connection,
    which can also carry requests back to the peer."""

    connection: RemotingConnection

    @property
    def remote_address(self) -> str:
        return self.connection.remote_address


class ConnectionListener:
    """Receives the events of connections (Java's ``ChannelEventListener``); every method does nothing by default.

    The broker uses them to drop the producers and consumers of a closed connection; a listener overrides only
    the events it cares about.
    """

    def on_connect(self, connection: RemotingConnection) -> None:
        """The connection was established."""

    def on_close(self, connection: RemotingConnection) -> None:
        """The connection is gone; its pending requests have been failed."""

    def on_idle(self, connection: RemotingConnection) -> None:
        """Nothing was read or written for the idle time; the connection is being closed."""

    def on_exception(self, connection: RemotingConnection, error: BaseException) -> None:
        """The connection hit an error (a malformed frame, for one) and is being closed."""


class ListenerGroup(ConnectionListener):
    """Passes each event to every member; a member that raises is logged and skipped."""

    def __init__(self, listeners: Iterable[ConnectionListener] = ()) -> None:
        self._listeners: list[ConnectionListener] = list(listeners)

    def add(self, listener: ConnectionListener) -> None:
        self._listeners.append(listener)

    def remove(self, listener: ConnectionListener) -> None:
        self._listeners.remove(listener)

    def on_connect(self, connection: RemotingConnection) -> None:
        for listener in tuple(self._listeners):
            try:
                listener.on_connect(connection)
            except Exception:
                _log.exception("connection listener %r failed on connect of %s", listener, connection.remote_address)

    def on_close(self, connection: RemotingConnection) -> None:
        for listener in tuple(self._listeners):
            try:
                listener.on_close(connection)
            except Exception:
                _log.exception("connection listener %r failed on close of %s", listener, connection.remote_address)

    def on_idle(self, connection: RemotingConnection) -> None:
        for listener in tuple(self._listeners):
            try:
                listener.on_idle(connection)
            except Exception:
                _log.exception("connection listener %r failed on idle of %s", listener, connection.remote_address)

    def on_exception(self, connection: RemotingConnection, error: BaseException) -> None:
        for listener in tuple(self._listeners):
            try:
                listener.on_exception(connection, error)
            except Exception:
                _log.exception("connection listener %r failed on exception of %s", listener, connection.remote_address)


#: Takes each request a connection reads (a :class:`~rocketmq_py.remoting.dispatcher.RequestDispatcher`'s
#: ``serve``); it returns at once, and the answer comes later through ``write_answer`` or ``send_answer``.
RequestHandler = Callable[["RemotingConnection", RemotingCommand], None]


class RemotingConnection(asyncio.Protocol):
    """A connection to one peer: decodes and writes frames, matches responses, hands requests to ``on_request``."""

    def __init__(
        self,
        on_request: RequestHandler,
        listener: ConnectionListener | None = None,
        *,
        idle_timeout_s: float | None = None,
        pause_reading_when_write_blocked: bool = False,
        max_frame_length: int = codec.MAX_FRAME_LENGTH,
        write_buffer_limits: tuple[int, int] = (0, 0),
    ) -> None:
        self._on_request = on_request
        self.remote_address = ""
        self.local_address = ""
        #: True when the connection runs over TLS (known once it is established).
        self.tls = False
        self._listener = listener or ConnectionListener()
        self._loop = asyncio.get_running_loop()
        self._decoder = codec.FrameDecoder(max_frame_length)
        self._transport: asyncio.Transport | None = None
        self._pending: dict[int, ResponseFuture] = {}
        self._abandoned: deque[int] = deque(maxlen=_ABANDONED_REMEMBERED)
        self._note_abandoned = self._abandoned.append
        self._writable = asyncio.Event()
        self._writable.set()
        self._lost: asyncio.Future[None] = self._loop.create_future()
        self._decode_failed = False
        self._reading_stopped = False
        self._pause_reading_when_write_blocked = pause_reading_when_write_blocked
        self._write_buffer_limits = write_buffer_limits
        self._idle_timeout_s = idle_timeout_s if idle_timeout_s and idle_timeout_s > 0 else None
        self._idle_timer: asyncio.TimerHandle | None = None
        self._last_activity = self._loop.time()
        #: What the processors of this connection's requests see of it.
        self.context = RequestContext(self)
        self._out: list[bytes] = []
        self._out_bytes = 0
        self._flush_pending = False
        #: The transport's ``write_region`` (a front process's client: it reads a region's files itself), or None.
        self._write_region: Callable[[bytes, FileRegion], None] | None = None
        #: Answers dropped because the connection had closed before they were ready (see ``_note_unsent``).
        self.unsent_answers = 0

    # --- state ------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        """True while frames can be written."""
        return self._transport is not None and not self._lost.done() and not self._transport.is_closing()

    @property
    def pending_requests(self) -> int:
        """Requests sent on this connection that still wait for their response."""
        return len(self._pending)

    @property
    def shares_files(self) -> bool:
        """True when an answer's :class:`~rocketmq_py.remoting.file_region.FileRegion` goes to the peer without
        this process copying it (a front process reads the files): worth answering with one."""
        return self._write_region is not None

    @property
    def writing_paused(self) -> bool:
        return not self._writable.is_set()

    def close(self) -> None:
        """Close after the frames already written are flushed."""
        if self._transport is not None:
            self._flush()
            self._transport.close()

    def abort(self) -> None:
        """Close now, dropping unsent frames."""
        self._out.clear()
        self._out_bytes = 0
        if self._transport is not None:
            self._transport.abort()

    async def wait_closed(self, timeout_s: float | None = None) -> bool:
        """Wait until the connection is gone; False when ``timeout_s`` ran out first."""
        if timeout_s is None:
            await asyncio.shield(self._lost)
            return True
        done, _ = await asyncio.wait({self._lost}, timeout=timeout_s)
        return bool(done)

    def stop_reading(self) -> None:
        """Read no more frames (for a graceful shutdown); responses to requests already read still go out."""
        self._reading_stopped = True
        if self._transport is not None and not self._transport.is_closing():
            self._transport.pause_reading()

    # --- sending ----------------------------------------------------------------

    def _write(self, frame: bytes) -> None:
        """Buffer ``frame`` for the write at the end of this loop pass."""
        self._out.append(frame)
        self._out_bytes += len(frame)
        if self._out_bytes >= _FLUSH_AT_BYTES:
            self._flush()
        elif not self._flush_pending:
            self._flush_pending = True
            self._loop.call_soon(self._flush)

    def _write_command(self, command: RemotingCommand) -> None:
        """Buffer ``command``'s frame; a large body (a pull's records) is buffered as it is, after the frame's
        head, instead of being copied into the frame."""
        if type(command) is FileRegionResponse:
            self._write_file_region(command)
            return
        body = command.body
        if body is None or len(body) < _BODY_APART_AT:
            self._write(codec.encode_command(command))
            return
        head, body = codec.encode_command_apart(command)
        self._write(head)
        if body is not None:
            self._write(body)

    def _write_file_region(self, response: FileRegionResponse) -> None:
        """Hand the transport the frame's head and the region, after what is buffered; or, when the transport
        cannot take a region, buffer the head and a copy of the region's bytes."""
        head = region_head(response)
        if self._write_region is None:
            self._write(head)
            self._write(response.region.copy())
            return
        self._flush()
        self._write_region(head, response.region)

    def _flush(self) -> None:
        self._flush_pending = False
        out = self._out
        if not out:
            return
        self._out = []
        self._out_bytes = 0
        transport = self._transport
        if transport is None or transport.is_closing():
            _log.debug("%d frames to %s dropped: the connection is closed", len(out), self.remote_address)
            return
        # uvloop and asyncio from 3.12 on hand the buffers to the kernel as they are (asyncio before 3.12 joins
        # them itself), where their flow control allows (see rocketmq_py/remoting/writes.py).
        write_buffers(transport, out)

    async def send(self, command: RemotingCommand) -> None:
        """Write one frame, then wait while the write buffer is above its high watermark."""
        transport = self._transport
        if transport is None or self._lost.done() or transport.is_closing():
            raise RemotingSendRequestError(self.remote_address, "the connection is closed")
        self._write_command(command)
        self._last_activity = self._loop.time()
        if not self._writable.is_set():
            self._flush()  # the frame waits in the transport's buffer, not in ours
            await self._writable.wait()
            if self._lost.done():
                raise RemotingSendRequestError(self.remote_address, "the connection closed while the frame was written")

    def expect_response(
        self,
        opaque: int,
        timeout_ms: float,
        callback: Callable[[Outcome], None] | None = None,
        on_done: Callable[[], None] | None = None,
    ) -> ResponseFuture:
        """Register a wait for the response with ``opaque``; do it before sending the request."""
        if not self.is_open:
            raise RemotingSendRequestError(self.remote_address, "the connection is closed")
        if opaque in self._pending:
            raise ValueError(
                f"a request with opaque {opaque} already waits for its response on {self.remote_address}; "
                "create a new request (create_request) for every call"
            )
        return ResponseFuture(self._loop, self._pending, opaque, self.remote_address, timeout_ms, callback, on_done,
                              self._note_abandoned)

    # --- asyncio.Protocol ----------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports do not subclass asyncio.Transport, so this is a cast, not a check.
        transport = cast(asyncio.Transport, transport)
        self._transport = transport
        self.remote_address = _address_text(transport.get_extra_info("peername"))
        self.local_address = _address_text(transport.get_extra_info("sockname"))
        self.tls = transport.get_extra_info("ssl_object") is not None
        self._write_region = getattr(transport, "write_region", None)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except (OSError, AttributeError):
                _log.debug("TCP_NODELAY could not be set on %s", self.remote_address)
        high, low = self._write_buffer_limits
        if high > 0:
            transport.set_write_buffer_limits(high=high, low=low if low > 0 else None)
        self._last_activity = self._loop.time()
        if self._idle_timeout_s is not None:
            self._idle_timer = self._loop.call_later(self._idle_timeout_s, self._check_idle)
        _log.debug("connection %s -> %s established", self.local_address, self.remote_address)
        self._listener.on_connect(self)

    def data_received(self, data: bytes) -> None:
        self._last_activity = self._loop.time()
        if self._decode_failed:
            return
        try:
            commands = self._decoder.feed(data)
        except Exception as error:
            self._decode_failed = True
            if isinstance(error, CodecError):
                hint = ""
                if data[:1] == b"\x16" and not self.tls:
                    hint = " (a TLS handshake? TLS is off on this side: see tls.server.mode)"
                _log.warning("closing connection from %s: malformed frame: %s%s", self.remote_address, error, hint)
            else:
                _log.exception("closing connection from %s: the frame decoder failed", self.remote_address)
            self._listener.on_exception(self, error)
            self.close()
            return
        for command in commands:
            if command.is_response:
                self._on_response(command)
            else:
                self._on_request(self, command)

    def pause_writing(self) -> None:
        self._writable.clear()
        if self._pause_reading_when_write_blocked and self._transport is not None:
            self._transport.pause_reading()

    def resume_writing(self) -> None:
        self._writable.set()
        if (
            self._pause_reading_when_write_blocked
            and not self._reading_stopped
            and self._transport is not None
            and not self._transport.is_closing()
        ):
            self._transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._idle_timer is not None:
            self._idle_timer.cancel()
        self._out.clear()
        self._out_bytes = 0
        self._writable.set()
        for waiting in tuple(self._pending.values()):
            waiting.fail(RemotingSendRequestError(
                self.remote_address, "the connection closed before the response arrived"
            ))
        if not self._lost.done():
            self._lost.set_result(None)
        if exc is not None:
            _log.info("connection to %s lost: %s", self.remote_address, exc)
        else:
            _log.debug("connection to %s closed", self.remote_address)
        self._listener.on_close(self)

    # --- receiving ----------------------------------------------------------------

    def _on_response(self, response: RemotingCommand) -> None:
        waiting = self._pending.get(response.opaque)
        if waiting is None:
            if response.opaque in self._abandoned:
                _log.debug("response from %s to a request whose caller gave up: %r", self.remote_address, response)
            else:
                _log.warning("response from %s matches no waiting request (late or unknown): %r",
                             self.remote_address, response)
            return
        waiting.set_response(response)

    # --- answering ------------------------------------------------------------------

    def write_answer(self, request: RemotingCommand, response: RemotingCommand) -> None:
        """Write ``response`` as the answer to ``request``, unless the connection is gone; never waits."""
        if not self.is_open:
            self._note_unsent(request)
            return
        response.opaque = request.opaque
        commands.mark_response(response)
        try:
            self._write_command(response)
        except CodecError as error:
            _log.error("the response to %r cannot be encoded: %s", request, error)
            self._write(codec.encode_command(create_response(
                request, RemotingSysResponseCode.SYSTEM_ERROR, f"the response could not be encoded: {error}",
            )))
        self._last_activity = self._loop.time()

    async def send_answer(self, request: RemotingCommand, response: RemotingCommand) -> None:
        """:meth:`write_answer`, then wait while the write buffer is above its high watermark."""
        self.write_answer(request, response)
        if not self._writable.is_set():
            self._flush()  # the frame waits in the transport's buffer, not in ours
            await self._writable.wait()
            if self._lost.done():
                self._note_unsent(request)

    def _note_unsent(self, request: RemotingCommand) -> None:
        """An answer to ``request`` found the connection closed: the first is logged, the others only counted.

        A producer that stops with thousands of async sends in flight leaves them to be served all the same (see
        :mod:`~rocketmq_py.remoting.lanes`), and a line for each answer would flood the log.
        """
        self.unsent_answers += 1
        if self.unsent_answers == 1:
            _log.info("the response to %r could not be sent: the connection to %s is closed (the answers to its "
                      "other requests still in flight are dropped without a line each)", request, self.remote_address)
        else:
            _log.debug("the response to %r could not be sent either", request)

    def note_activity(self) -> None:
        """The client was active where this process cannot see it (a front served its requests itself)."""
        self._last_activity = self._loop.time()

    def _check_idle(self) -> None:
        assert self._idle_timeout_s is not None
        idle_for = self._loop.time() - self._last_activity
        if idle_for < self._idle_timeout_s:
            self._idle_timer = self._loop.call_later(self._idle_timeout_s - idle_for, self._check_idle)
            return
        self._idle_timer = None
        if self._lost.done():
            return
        _log.info("closing connection to %s: idle for %.0f s", self.remote_address, idle_for)
        self._listener.on_idle(self)
        self.close()

    def __repr__(self) -> str:
        state = "open" if self.is_open else "closed"
        if self.tls:
            state += ", TLS"
        return f"RemotingConnection({self.local_address} -> {self.remote_address}, {state})"
