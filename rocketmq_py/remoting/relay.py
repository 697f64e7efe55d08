"""The channel between a server and its front processes (``RemotingServerConfig.worker_processes``).

A front process owns the client sockets: it accepts them (``SO_REUSEPORT``),
reads and writes their bytes and does their TLS. The server process keeps
everything else: it decodes the frames, runs the processors and the store,
and answers. Between the two runs one Unix stream socket (a socketpair made
before the front process starts), carrying messages of this layout::

    kind    u8     what happens (see :class:`Relay`)
    conn    u32    which client connection, numbered by the front process; 0 for the front itself
    length  u32    bytes of payload that follow
    payload        the client's bytes, or a small JSON object for the control messages

A client's frames are relayed whole, a run of them in one message (the front
cuts them, to serve some itself): the server side feeds them to the
connection's frame decoder, as it would the socket's bytes. An answer whose
body lies in files (a pull's records in the CommitLog) comes to the front as
the frame's head and the files' ranges (:attr:`Relay.RECORDS`): the front reads
the bytes from the files, whose descriptors the server passes on a second
socket (the files socket, ``SCM_RIGHTS``), and writes them to the client.
Messages written during one pass of the event loop go out in one write, so the
relay costs a system call per pass and not per connection.
"""
from __future__ import annotations

import asyncio
import json
import logging
import struct
from enum import IntEnum
from typing import Any, Sequence, cast

from rocketmq_py.remoting.writes import write_buffers

__all__ = ["Relay", "RelayChannel"]

_log = logging.getLogger(__name__)

_HEAD = struct.Struct(">BII")
_HEAD_SIZE = _HEAD.size
#: Past this many buffered bytes a channel writes at once rather than at the end of the loop pass.
_FLUSH_AT_BYTES = 256 * 1024
#: The largest payload one message may carry; a longer length means the channel is broken.
MAX_PAYLOAD = 64 * 1024 * 1024
#: The channel's read buffer: its first size, and the room made behind what it holds when less than
#: _MIN_READ is left.
_READ_ROOM = 256 * 1024
_MIN_READ = 64 * 1024


class Relay(IntEnum):
    """The kinds of channel messages."""

    # front -> server
    #: The front listens; payload ``{"port": ...}``. Or it failed: ``{"error": ...}``.
    READY = 1
    #: A client connected; payload ``{"peer": [host, port], "local": [host, port], "tls": bool}``.
    OPENED = 2
    #: The client's connection is gone; payload ``{"error": text}`` or ``{}`` for a clean close.
    LOST = 3
    #: The client's socket buffer passed its high watermark (the client does not read): stop writing.
    WRITE_PAUSED = 4
    WRITE_RESUMED = 5
    # both ways
    #: Bytes read from (front -> server) or to be written to (server -> front) the client.
    DATA = 6
    # server -> front
    #: The front's settings; payload: host, port, backlog, idle time, watermarks and the TLS settings.
    SETUP = 7
    #: Write what is buffered, then close the client's connection.
    CLOSE = 8
    #: Close the client's connection at once.
    ABORT = 9
    PAUSE_READING = 10
    RESUME_READING = 11
    #: Stop accepting connections (the server is shutting down).
    STOP_ACCEPTING = 12
    #: What the front needs to serve requests itself (JSON, pushed at start and on every change); its
    #: ``module`` names the code that serves them (for a broker, ``rocketmq_py.broker.front_sends``).
    SERVE_SETTINGS = 13
    # front -> server
    #: Records the front built, for the server to place (the payload's layout is the serving module's).
    PLACE = 14
    # server -> front
    #: Where a PLACE message's records were placed, or that they were not.
    PLACED = 15
    # front -> server
    #: The front served requests of this client itself: the client is not idle (at most one a second).
    ACTIVE = 16
    # server -> front
    #: An answer whose body the front reads from files (a :class:`~rocketmq_py.remoting.file_region.FileRegion`):
    #: the frame's head, then the ranges' bytes, to be written to the client. The payload (:data:`RECORDS_HEAD`):
    #: the head's length and the count of files, each file's number (u32; its descriptor came on the files
    #: socket, see :mod:`.front_pool`), the head, and the region's ranges (their file index is into these numbers).
    RECORDS = 17
    #: A file the server shared is closed (deleted): the front closes its copy. Payload ``{"file": number}``.
    RELEASE = 18


_DATA = int(Relay.DATA)
_PLACE = int(Relay.PLACE)
_PLACED = int(Relay.PLACED)
_RECORDS = int(Relay.RECORDS)
#: The start of a RECORDS payload: the head's length (u32) and the count of files (u16).
RECORDS_HEAD = struct.Struct(">IH")
#: A file's number in a RECORDS payload, and the payload of a file's descriptor on the files socket.
FILE_NUMBER = struct.Struct(">I")


def control(payload: dict[str, Any]) -> bytes:
    """The payload of a control message."""
    return json.dumps(payload, separators=(",", ":")).encode()


def read_control(payload: bytes) -> dict[str, Any]:
    return cast(dict[str, Any], json.loads(payload)) if payload else {}


class RelayChannel(asyncio.BufferedProtocol):
    """One end of the channel: buffers the messages of a loop pass into one write, and cuts what it reads
    into messages for :meth:`on_data`, :meth:`on_placement`, :meth:`on_records` and :meth:`on_control`.

    The socket is read straight into the channel's own buffer (a buffered protocol), which holds a whole
    message before it is cut: a PLACE message's records reach the store from there, with no copy between
    the socket and the CommitLog."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self._out: list[bytes | bytearray | memoryview] = []
        self._out_bytes = 0
        self._flush_pending = False
        # What was read and not yet cut into messages is _in[_in_start:_in_end]. The buffer is never resized
        # (views of it are out while a message is served): a message longer than the room gets a new one.
        self._in = bytearray(_READ_ROOM)
        self._in_view = memoryview(self._in)
        self._in_start = 0
        self._in_end = 0
        self._broken = False
        self.closed: asyncio.Future[None] = self._loop.create_future()

    # --- sending ----------------------------------------------------------------

    def send(self, kind: Relay, conn: int, payload: bytes | bytearray | memoryview = b"") -> None:
        self._out.append(_HEAD.pack(kind, conn, len(payload)))
        if payload:
            self._out.append(payload)
        self._buffered(len(payload))

    def send_parts(self, kind: Relay, conn: int, parts: Sequence[bytes | bytearray | memoryview]) -> None:
        """One message whose payload is ``parts`` joined, without joining them here."""
        size = sum(map(len, parts))
        self._out.append(_HEAD.pack(kind, conn, size))
        self._out.extend(parts)
        self._buffered(size)

    def _buffered(self, size: int) -> None:
        self._out_bytes += size + _HEAD_SIZE
        if self._out_bytes >= _FLUSH_AT_BYTES:
            self.flush()
        elif not self._flush_pending:
            self._flush_pending = True
            self._loop.call_soon(self.flush)

    def flush(self) -> None:
        self._flush_pending = False
        out = self._out
        if not out:
            return
        self._out = []
        self._out_bytes = 0
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        write_buffers(transport, out)

    def close(self) -> None:
        if self.transport is not None:
            self.flush()
            self.transport.close()

    # --- asyncio.Protocol ----------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def get_buffer(self, sizehint: int) -> memoryview:
        if len(self._in) - self._in_end < _MIN_READ:
            self._make_room(_READ_ROOM)
        return self._in_view[self._in_end:]

    def _make_room(self, room: int) -> None:
        """Move what is not yet cut to the start of the buffer, with ``room`` bytes free behind it (in a new,
        larger buffer when this one is too small: views of the old one may still be held by a caller)."""
        start, end = self._in_start, self._in_end
        pending = end - start
        if pending + room > len(self._in):
            grown = bytearray(max(2 * len(self._in), pending + room))
            grown[:pending] = self._in_view[start:end]
            self._in = grown
            self._in_view = memoryview(grown)
        elif start:
            self._in_view[:pending] = self._in_view[start:end]
        self._in_start, self._in_end = 0, pending

    def buffer_updated(self, nbytes: int) -> None:
        if self._broken:
            return
        self._in_end += nbytes
        buffer = self._in
        view = self._in_view
        unpack_from = _HEAD.unpack_from
        on_data = self.on_data
        position = self._in_start
        available = self._in_end
        while available - position >= _HEAD_SIZE:
            kind, conn, length = unpack_from(buffer, position)
            start = position + _HEAD_SIZE
            end = start + length
            if length > MAX_PAYLOAD:
                self._break(f"a message of {length} bytes (kind {kind})")
                return
            if end > available:
                if end > len(buffer):  # the rest of the message does not fit: room for it and a read after it
                    self._in_start = position
                    self._make_room(end - available + _READ_ROOM)
                    return
                break
            if kind == _DATA:
                on_data(conn, buffer[start:end])
            elif kind == _PLACE:
                self.on_placement(Relay.PLACE, view[start:end])
            elif kind == _PLACED:
                self.on_placement(Relay.PLACED, view[start:end])
            elif kind == _RECORDS:
                self.on_records(conn, view[start:end])
            else:
                try:
                    relay = Relay(kind)
                except ValueError:
                    self._break(f"a message of unknown kind {kind}")
                    return
                self.on_control(relay, conn, bytes(view[start:end]))
            position = end
        if position == available:
            self._in_start = self._in_end = 0
        else:
            self._in_start = position

    def _break(self, what: str) -> None:
        self._broken = True
        _log.error("closing the relay channel: it carried %s", what)
        if self.transport is not None:
            self.transport.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self._out.clear()
        if not self.closed.done():
            self.closed.set_result(None)

    def on_data(self, conn: int, payload: bytearray) -> None:
        """Bytes of client connection ``conn`` (:attr:`Relay.DATA`, the one message of the hot path)."""
        raise NotImplementedError

    def on_placement(self, kind: Relay, payload: memoryview) -> None:
        """A :attr:`Relay.PLACE` or :attr:`Relay.PLACED` message. ``payload`` is a view of the channel's read
        buffer, valid only during the call: read it there, copy what must outlive it."""
        raise NotImplementedError

    def on_records(self, conn: int, payload: memoryview) -> None:
        """A :attr:`Relay.RECORDS` message for client connection ``conn``; ``payload`` is valid only during the call."""
        raise NotImplementedError

    def on_control(self, kind: Relay, conn: int, payload: bytes) -> None:
        """Any other message."""
        raise NotImplementedError
