"""A front process: owns client sockets for a server that runs with worker processes (see :mod:`.relay`).

    python -m rocketmq_py.remoting.front --channel-fd FD [--files-fd FD] [--log-level LEVEL]

The server starts it with its end of the channel (``--channel-fd``) and of
the files socket (``--files-fd``), and sends its settings (:attr:`Relay.SETUP`).
The front then listens on the server's port with ``SO_REUSEPORT``, beside its
siblings, so the kernel spreads the clients over them. It owns each client's
TLS and cuts what the client sends into frames. It relays the frames to the
server, unless the server gave it a module that serves some itself
(:attr:`Relay.SERVE_SETTINGS`; a broker's plain sends,
``rocketmq_py.broker.front_sends``), and writes the server's bytes to the
client. An answer whose body lies in files (:attr:`Relay.RECORDS`: a pull's
records in the CommitLog) it reads from its own read-only mappings of those
files, whose descriptors the server passed on the files socket, and writes
head and body to the client in one write. When the channel closes (the server
stopped or died), the front closes its clients and exits: a front never
outlives its server.
"""
from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import mmap
import os
import socket
import sys
from typing import Any, Callable, Protocol, cast

from rocketmq_py import codec
from rocketmq_py.remoting.allocator import keep_freed_blocks
from rocketmq_py.remoting.loop import run_on_new_loop
from rocketmq_py.remoting.protocol import _address_text
from rocketmq_py.remoting.file_region import RANGE
from rocketmq_py.remoting.relay import FILE_NUMBER, RECORDS_HEAD, Relay, RelayChannel, control, read_control
from rocketmq_py.remoting.server import SniffingListener
from rocketmq_py.remoting.tls import TlsConfig, TlsMode

__all__ = ["main"]

_log = logging.getLogger(__name__)

#: How often at most a front tells the server that a client it serves itself is active (for idle closing).
_ACTIVE_EVERY_S = 1.0
#: The lengths a frame's prefix may hold (the frame's header length field and what follows it).
_MIN_FRAME = 4
_MAX_FRAME = codec.MAX_FRAME_LENGTH


class FrameServer(Protocol):
    """What a module named in :attr:`Relay.SERVE_SETTINGS` gives the front: it serves some frames itself."""

    def update(self, settings: dict[str, Any]) -> None:
        """New settings from the server."""

    def take_frames(self, client: _ClientRelay, data: bytes, position: int) -> int:
        """Serve the frames of ``data[position:]`` it serves, relay the others (``client.relay``); return where
        the whole frames end (the start of an incomplete frame or of a length no frame has, or ``len(data)``)."""

    def placed(self, payload: memoryview) -> None:
        """The server's :attr:`Relay.PLACED` message (``payload`` is valid only during the call)."""


class _ClientRelay(asyncio.Protocol):
    """One client's socket, relayed to the server as connection ``conn``."""

    def __init__(self, front: _FrontChannel, conn: int) -> None:
        self.front = front
        self.conn = conn
        self.transport: asyncio.Transport | None = None
        self.remote_address = ""
        #: The server asked to stop reading this client (its answers are not read).
        self.paused_by_server = False
        #: The start of a frame not yet complete.
        self._partial = bytearray()
        #: The client sent a length no frame has: its bytes go to the server as they come (which closes it).
        self._unframed = False
        #: When the server was last told that this client is active (it sees no frame the front serves).
        self._active_told_at = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.remote_address = _address_text(transport.get_extra_info("peername"))
        high, low = self.front.write_buffer_limits
        if high > 0:
            self.transport.set_write_buffer_limits(high=high, low=low if low > 0 else None)
        self.front.opened(self, {
            "peer": _address_pair(transport.get_extra_info("peername")),
            "local": _address_pair(transport.get_extra_info("sockname")),
            "tls": transport.get_extra_info("ssl_object") is not None,
        })

    def data_received(self, data: bytes) -> None:
        """Relay whole frames, but those the front's frame server serves; keep the start of an incomplete one."""
        if self._unframed:
            self.front.send(Relay.DATA, self.conn, data)
            return
        # Until the first frame is whole, the reads are gathered, each copied once (joining each read to all
        # before it, and handing them on each time, copied a large frame once per read: quadratic in its size).
        # The read that completes it gives it only its end: that frame is handed on alone, and the rest of the
        # read from where it lies (joining the whole read to the frame's start copied every byte once more).
        position = 0
        partial = self._partial
        if partial:
            size = _frame_size(partial if len(partial) >= 4 else partial + data[:4 - len(partial)], 0)
            if size is None or (size and len(partial) + len(data) < size):
                partial += data
                return
            if size:
                position = size - len(partial)
                partial += memoryview(data)[:position]
                self._partial = bytearray()
                self._take(bytes(partial), 0)
            else:
                data = b"".join((partial, data))  # a length no frame has: the server's decoder closes it
        whole = _frame_size(data, position)
        if whole is not None and (whole == 0 or position + whole <= len(data)):
            self._take(data, position)
        elif position < len(data):
            self._partial = bytearray(memoryview(data)[position:])

    def _take(self, data: bytes, position: int) -> None:
        """Hand on the whole frames of ``data[position:]`` (at least one, or a length no frame has) and keep what
        follows them."""
        server = self.front.frame_server
        if server is None:
            end = position + _whole_frames_end(data, position)
            if end > position:
                self.front.send(Relay.DATA, self.conn, data if position == 0 and end == len(data)
                                else memoryview(data)[position:end])
        else:
            end = server.take_frames(self, data, position)
            if end > position:
                # Whether the server saw these frames or not: a client that sent any is active (and the notice
                # goes at most once a second).
                self._tell_active()
        if _frame_size(data, end) == 0:
            self._unframed = True  # the server's decoder refuses the length and closes the connection
            self.front.send(Relay.DATA, self.conn, memoryview(data)[end:])
            end = len(data)
        self._partial = bytearray(memoryview(data)[end:]) if end < len(data) else bytearray()

    def _tell_active(self) -> None:
        """The server closes a client it hears nothing from (serverChannelMaxIdleTimeSeconds): a client whose
        requests this front serves itself is not idle."""
        now = self.front.loop_time()
        if now - self._active_told_at >= _ACTIVE_EVERY_S:
            self._active_told_at = now
            self.front.send(Relay.ACTIVE, self.conn)

    def write(self, data: bytes) -> None:
        """Write the front's own answer to the client."""
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def relay(self, frames: bytes) -> None:
        """Relay whole frames the frame server does not serve (or gave back: the server serves them after all)."""
        if self.conn in self.front.clients:
            self.front.send(Relay.DATA, self.conn, frames)

    def pause_writing(self) -> None:
        self.front.send(Relay.WRITE_PAUSED, self.conn)

    def resume_writing(self) -> None:
        self.front.send(Relay.WRITE_RESUMED, self.conn)

    def connection_lost(self, exc: Exception | None) -> None:
        self.front.lost(self, exc)


def _frame_size(data: bytes | bytearray, position: int) -> int | None:
    """The size, length prefix included, of the frame at ``position`` in ``data``: None while its prefix is not
    all there, 0 for a length no frame has (the server's decoder refuses it and closes the connection)."""
    if len(data) - position < 4:
        return None
    length = int.from_bytes(data[position:position + 4], "big")
    return 4 + length if _MIN_FRAME <= length <= _MAX_FRAME else 0


def _whole_frames_end(data: bytes, position: int = 0) -> int:
    """How many bytes the whole frames from ``position`` in ``data`` take (up to the start of an incomplete frame,
    or of a length no frame has)."""
    start = position
    while (size := _frame_size(data, position)) and position + size <= len(data):
        position += size
    return position - start


def _address_pair(address: object) -> list[object] | None:
    if isinstance(address, tuple) and len(address) >= 2:
        return [address[0], address[1]]
    return None


class _SharedFiles:
    """The files the server shared with this front (:attr:`Relay.RECORDS` names them by number), mapped
    read-only from the descriptors that come on the files socket. A mapping keeps its file's bytes after the
    server deletes the file, until the server's :attr:`Relay.RELEASE`."""

    def __init__(self, files_socket: socket.socket) -> None:
        self._socket = files_socket
        self._maps: dict[int, mmap.mmap] = {}
        self._views: dict[int, memoryview] = {}

    def view(self, number: int) -> memoryview | None:
        """The bytes of file ``number``; None when the server never passed it (a bug, logged)."""
        view = self._views.get(number)
        if view is None:
            self._receive(number)
            view = self._views.get(number)
        return view

    def _receive(self, number: int) -> None:
        """Take the descriptors the files socket holds, up to that of file ``number`` (the server passes each
        before the first message that names it)."""
        while number not in self._views:
            try:
                data, descriptors, _, _ = socket.recv_fds(self._socket, FILE_NUMBER.size, 1)
            except BlockingIOError:
                _log.error("the server named file %d, whose descriptor it did not pass", number)
                return
            if not descriptors:
                _log.error("the files socket closed before the server passed file %d", number)
                return
            try:
                mapped = mmap.mmap(descriptors[0], 0, prot=mmap.PROT_READ)
            except (OSError, ValueError) as error:
                _log.error("the file the server passed as %d cannot be mapped: %s", FILE_NUMBER.unpack(data)[0],
                           error)
                continue
            finally:
                for descriptor in descriptors:
                    os.close(descriptor)
            (passed,) = FILE_NUMBER.unpack(data)
            self._maps[passed] = mapped
            self._views[passed] = memoryview(mapped)

    def release(self, number: int) -> None:
        view = self._views.pop(number, None)
        if view is not None:
            view.release()
            self._maps.pop(number).close()

    def close(self) -> None:
        for number in tuple(self._views):
            self.release(number)
        self._socket.close()


class _FrontChannel(RelayChannel):
    """The front's end of the channel: relays its clients and obeys the server."""

    def __init__(self, files_socket: socket.socket | None = None) -> None:
        super().__init__()
        #: The files that answers' bodies are read from (:meth:`on_records`); None: the server shares none.
        self.files = _SharedFiles(files_socket) if files_socket is not None else None
        self.clients: dict[int, _ClientRelay] = {}
        self._next_conn = 0
        self.write_buffer_limits = (0, 0)
        self._listener: asyncio.AbstractServer | SniffingListener | None = None
        self._reading_paused = False
        #: Serves some frames in the front (the server's SERVE_SETTINGS); None: every frame is relayed.
        self.frame_server: FrameServer | None = None

    # --- clients ------------------------------------------------------------------

    def loop_time(self) -> float:
        return self._loop.time()

    def new_client(self) -> _ClientRelay:
        self._next_conn = self._next_conn % 0xFFFFFFFF + 1
        return _ClientRelay(self, self._next_conn)

    def opened(self, client: _ClientRelay, info: dict[str, Any]) -> None:
        self.clients[client.conn] = client
        self.send(Relay.OPENED, client.conn, control(info))
        self._read_or_not(client)

    def _read_or_not(self, client: _ClientRelay) -> None:
        """Read a client unless the server paused it or the channel to the server is full."""
        transport = client.transport
        reading = not (self._reading_paused or client.paused_by_server)
        if transport is None or transport.is_closing() or reading == transport.is_reading():
            return
        if reading:
            transport.resume_reading()
        else:
            transport.pause_reading()

    def lost(self, client: _ClientRelay, exc: Exception | None) -> None:
        if self.clients.pop(client.conn, None) is not None:
            self.send(Relay.LOST, client.conn, control({"error": str(exc)} if exc is not None else {}))

    # --- the server's messages ------------------------------------------------------

    def on_data(self, conn: int, payload: bytearray) -> None:
        client = self.clients.get(conn)
        transport = client.transport if client is not None else None
        if transport is not None and not transport.is_closing():
            transport.write(payload)

    def on_records(self, conn: int, payload: memoryview) -> None:
        """Write the answer's head and the bytes of its ranges, read from the shared files, in one write."""
        client = self.clients.get(conn)
        transport = client.transport if client is not None else None
        if transport is None or transport.is_closing():
            return
        head_length, count = RECORDS_HEAD.unpack_from(payload, 0)
        position = RECORDS_HEAD.size
        views = []
        for _ in range(count):
            (number,) = FILE_NUMBER.unpack_from(payload, position)
            position += FILE_NUMBER.size
            view = self.files.view(number) if self.files is not None else None
            if view is None:
                self._unreadable(transport, f"file {number} is not known")
                return
            views.append(view)
        head_end = position + head_length
        parts = [payload[position:head_end]]
        parts.extend([views[index][start:start + size]
                      for index, start, size in RANGE.iter_unpack(payload[head_end:])])
        data = b"".join(parts)
        # A range past the end of its file would come short: the frame's length says what it must be.
        frame_size = 4 + int.from_bytes(data[:4], "big")
        if len(data) != frame_size:
            self._unreadable(transport, f"its ranges give {len(data)} bytes of a frame of {frame_size}")
            return
        transport.write(data)

    @staticmethod
    def _unreadable(transport: asyncio.Transport, why: str) -> None:
        """An answer whose bytes cannot be read (a bug): the client's connection is closed, as when a front dies;
        the client asks again (a pull only reads)."""
        _log.error("an answer the server sent cannot be read (%s): closing the client's connection", why)
        transport.abort()

    def on_control(self, kind: Relay, conn: int, payload: bytes) -> None:
        if kind is Relay.RELEASE:
            if self.files is not None:
                self.files.release(read_control(payload)["file"])
            return
        if kind is Relay.SETUP:
            self._loop.create_task(self._listen(read_control(payload)))
            return
        if kind is Relay.STOP_ACCEPTING:
            self._stop_accepting()
            return
        if kind is Relay.SERVE_SETTINGS:
            self._serve(read_control(payload))
            return
        client = self.clients.get(conn)
        transport = client.transport if client is not None else None
        if transport is None:
            return  # the client is gone; the server learns it from LOST
        if kind is Relay.ABORT:
            transport.abort()
        elif transport.is_closing():
            return
        elif kind is Relay.CLOSE:
            transport.close()
        elif kind is Relay.PAUSE_READING or kind is Relay.RESUME_READING:
            assert client is not None
            client.paused_by_server = kind is Relay.PAUSE_READING
            self._read_or_not(client)
        else:
            _log.warning("the server sent a %s message, which a front does not take", kind.name)

    def on_placement(self, kind: Relay, payload: memoryview) -> None:
        if kind is not Relay.PLACED:
            _log.warning("the server sent a %s message, which a front does not take", kind.name)
        elif self.frame_server is not None:
            self.frame_server.placed(payload)

    def _serve(self, settings: dict[str, Any]) -> None:
        if self.frame_server is not None:
            self.frame_server.update(settings)
            return
        module = importlib.import_module(settings["module"])
        place: Callable[[list[bytes | bytearray]], None] = lambda parts: self.send_parts(Relay.PLACE, 0, parts)
        self.frame_server = cast(FrameServer, module.FrontSends(place, settings))
        _log.info("this front serves requests with %s", settings["module"])

    async def _listen(self, setup: dict[str, Any]) -> None:
        self.write_buffer_limits = (setup["high"], setup["low"])
        tls = TlsConfig(**setup["tls"])
        host, port, backlog = setup["host"], setup["port"], setup["backlog"]
        try:
            if tls.server_mode is TlsMode.DISABLED:
                self._listener = await self._loop.create_server(
                    self.new_client, host, port, backlog=backlog, reuse_address=True, reuse_port=True)
            else:
                idle_s = setup["idle"]
                listener = SniffingListener(self.new_client, tls.server_mode, tls.server_context(),
                                            tls.handshake_timeout_seconds, idle_s if idle_s > 0 else None)
                await listener.start(host, port, backlog, reuse_port=True)
                self._listener = listener
        except Exception as error:  # the server reports it and stops this front
            self.send(Relay.READY, 0, control({"error": f"{type(error).__name__}: {error}"}))
            self.close()  # the server starts another front, or fails to start
            return
        self.send(Relay.READY, 0, control({"port": port}))

    def _stop_accepting(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None

    # --- back pressure --------------------------------------------------------------

    def pause_writing(self) -> None:
        # The server reads slower than the clients write: stop reading them until it catches up.
        self._reading_paused = True
        for client in self.clients.values():
            self._read_or_not(client)

    def resume_writing(self) -> None:
        self._reading_paused = False
        for client in self.clients.values():
            self._read_or_not(client)

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self._stop_accepting()
        for client in tuple(self.clients.values()):
            if client.transport is not None:
                client.transport.abort()
        if self.files is not None:
            self.files.close()


async def _serve(channel_fd: int, files_fd: int | None) -> None:
    loop = asyncio.get_running_loop()
    sock = socket.socket(fileno=channel_fd)
    files_socket = None
    if files_fd is not None:
        files_socket = socket.socket(fileno=files_fd)
        files_socket.setblocking(False)
    _, channel = await loop.connect_accepted_socket(lambda: _FrontChannel(files_socket), sock)
    await channel.closed
    # Let the aborted clients' transports finish before the loop closes.
    await asyncio.sleep(0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rocketmq_py.remoting.front", description=__doc__.splitlines()[0])
    parser.add_argument("--channel-fd", type=int, required=True, help="this front's end of the server's channel")
    parser.add_argument("--files-fd", type=int, help="this front's end of the socket that passes it files to read")
    parser.add_argument("--log-level", default="WARNING")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s [front %(process)d] %(name)s: %(message)s")
    keep_freed_blocks()
    run_on_new_loop(_serve(args.channel_fd, args.files_fd))
    return 0


if __name__ == "__main__":
    sys.exit(main())
