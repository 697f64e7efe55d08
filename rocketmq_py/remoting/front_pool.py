"""The server's side of its front processes (``RemotingServerConfig.worker_processes``; see :mod:`.relay`).

:class:`FrontPool` starts the front processes, each with a channel of its
own, and gives each client connection they relay a :class:`FrontTransport`:
the server's :class:`RemotingConnection` for that client writes to it as it
would to a socket's transport, so processors, lanes, the fast path and the
connection registry see no difference. An answer with a file region (a
pull's records) goes to the front as the region's ranges, with a descriptor of
each file the front does not have yet passed on the files socket; the front's
descriptor keeps a file's bytes after the server deletes it, until the server
tells it to close it. A front that dies takes its clients' connections with it
(they reconnect, as after any broken connection) and is started again; nothing
the server stored is lost, since a send is answered only after it is stored,
and a pull only reads.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

import rocketmq_py
from rocketmq_py.remoting.config import RemotingServerConfig
from rocketmq_py.remoting.file_region import FileRegion, SharedFile
from rocketmq_py.remoting.protocol import RemotingConnection
from rocketmq_py.remoting.relay import FILE_NUMBER, RECORDS_HEAD, Relay, RelayChannel, control, read_control
from rocketmq_py.remoting.tls import TlsConfig

__all__ = ["FrontPool", "FrontService", "FrontTransport"]

_log = logging.getLogger(__name__)

#: How long a front process may take to start listening.
_READY_TIMEOUT_S = 30.0
#: How long after a front process died it is started again.
_RESTART_DELAY_S = 1.0
#: How long stopping fronts may take to exit before they are killed.
_EXIT_TIMEOUT_S = 5.0
#: How often the fronts' serving settings are checked for a change (a placement checks them too), and the files
#: shared with them for one that was closed.
_CHECK_S = 0.1


class FrontService(Protocol):
    """The server's side of requests its fronts serve themselves (a broker's: ``rocketmq_py.broker.front_sends``)."""

    #: The settings as :meth:`settings` or :meth:`place` last made them.
    current_settings: bytes

    def settings(self) -> bytes:
        """The fronts' :attr:`Relay.SERVE_SETTINGS` payload now: the same object while nothing changed."""

    def place(self, payload: memoryview) -> bytes:
        """Serve a front's :attr:`Relay.PLACE` message (with the settings made anew when they changed); the
        payload of the :attr:`Relay.PLACED` answer. ``payload`` is valid only during the call."""


class RelayedTls:
    """``get_extra_info("ssl_object")`` of a connection whose TLS session lives in its front process."""

    def __repr__(self) -> str:
        return "RelayedTls()"


class FrontTransport(asyncio.Transport):
    """A client's socket as the server process sees it: its bytes travel through a front's channel."""

    def __init__(self, channel: _ServerChannel, conn: int, info: dict[str, Any]) -> None:
        super().__init__()
        self._channel = channel
        self._conn = conn
        self._info = info
        self._closing = False
        self._reading = True
        self._client_blocked = False
        self._channel_blocked = False
        self._held: list[bytes] = []
        self.protocol: RemotingConnection | None = None

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        if name in ("peername", "sockname"):
            pair = self._info.get("peer" if name == "peername" else "local")
            return tuple(pair) if pair else default
        if name == "ssl_object":
            return RelayedTls() if self._info.get("tls") else default
        return default

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self._closing:
            self._channel.send(Relay.DATA, self._conn, data)

    def writelines(self, list_of_data: Any) -> None:
        if not self._closing:
            parts = list_of_data if type(list_of_data) is list else list(list_of_data)
            self._channel.send_parts(Relay.DATA, self._conn, parts)

    def write_region(self, head: bytes, region: FileRegion) -> None:
        """Write ``head`` and then the bytes of ``region``: the front reads them from the files itself, unless a
        file could not be shared with it (closed meanwhile): then they go as a copy."""
        if self._closing:
            return
        numbers = self._channel.share(region.files)
        if numbers is None:
            self._channel.send_parts(Relay.DATA, self._conn, [head, region.copy()])
            return
        self._channel.send_parts(Relay.RECORDS, self._conn, [
            RECORDS_HEAD.pack(len(head), len(numbers)), *map(FILE_NUMBER.pack, numbers), head, region.ranges])

    def close(self) -> None:
        if not self._closing:
            self._closing = True
            self._channel.send(Relay.CLOSE, self._conn)

    def abort(self) -> None:
        self._closing = True
        if self._conn in self._channel.connections:
            self._channel.send(Relay.ABORT, self._conn)

    def is_closing(self) -> bool:
        return self._closing

    def pause_reading(self) -> None:
        """Stop the front reading the client, and hold what the channel still brings until reading resumes:
        a socket's unread bytes wait in the kernel, and these must not be served meanwhile either."""
        if self._reading and not self._closing:
            self._reading = False
            self._channel.route(self._conn, self._held.append)
            self._channel.send(Relay.PAUSE_READING, self._conn)

    def resume_reading(self) -> None:
        if not self._reading and not self._closing:
            self._reading = True
            self._channel.send(Relay.RESUME_READING, self._conn)
            # What was held goes first (in the next loop pass, not inside the caller's callback), and bytes
            # that come meanwhile are held behind it, so the stream stays in order.
            asyncio.get_running_loop().call_soon(self._deliver_held)

    def _deliver_held(self) -> None:
        held = self._held
        while held and self._reading and not self._closing and self.protocol is not None:
            self.protocol.data_received(held.pop(0))
        if not held and self._reading and not self._closing and self.protocol is not None:
            self._channel.route(self._conn, self.protocol.data_received)

    def is_reading(self) -> bool:
        return self._reading

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        """Does nothing here: the front applies the server's watermarks to the client's socket itself."""

    def get_write_buffer_size(self) -> int:
        return 0

    def can_write_eof(self) -> bool:
        return False

    @property
    def client_blocked(self) -> bool:
        """True while the front says the client's socket buffer is above its high watermark."""
        return self._client_blocked

    def block_writes(self, *, client: bool | None = None, channel: bool | None = None) -> None:
        """Tell the connection to pause or resume writing: the client's socket or the channel is full."""
        was_blocked = self._client_blocked or self._channel_blocked
        if client is not None:
            self._client_blocked = client
        if channel is not None:
            self._channel_blocked = channel
        blocked = self._client_blocked or self._channel_blocked
        if self.protocol is not None and blocked != was_blocked:
            self.protocol.pause_writing() if blocked else self.protocol.resume_writing()

    def lost(self, exc: Exception | None) -> None:
        self._closing = True
        if self.protocol is not None:
            self.protocol.connection_lost(exc)


class _ServerChannel(RelayChannel):
    """The server's end of one front's channel, and of its files socket (see :meth:`share`)."""

    def __init__(self, pool: FrontPool, index: int, files_socket: socket.socket) -> None:
        super().__init__()
        self.pool = pool
        self.index = index
        self._files_socket = files_socket
        #: The files shared with the front, by their number, and the numbers by the files' identity.
        self._shared: dict[int, SharedFile] = {}
        self._numbers: dict[int, int] = {}
        self._next_number = 0
        self.connections: dict[int, FrontTransport] = {}
        self.ready: asyncio.Future[dict[str, Any]] = self._loop.create_future()
        self._writes_blocked = False
        #: Each connection's data_received, looked up once per DATA message.
        self._receivers: dict[int, Callable[[bytes], None]] = {}

    def share(self, files: Sequence[SharedFile]) -> list[int] | None:
        """The numbers the front knows ``files`` by, passing it a descriptor of each file it does not have yet
        (before the message that names it, so the front finds it there); None when one could not be passed (it
        was closed, or the files socket is full).

        The front's descriptor keeps the file's bytes for it after the file is deleted, until
        :meth:`release_closed` tells it to close it: what a message names is always there to read."""
        numbers = []
        for file in files:
            number = self._numbers.get(id(file))
            if number is None:
                number = self._pass(file)
                if number is None:
                    return None
            numbers.append(number)
        return numbers

    def _pass(self, file: SharedFile) -> int | None:
        descriptor = file.open_for_reading()
        if descriptor is None:
            return None
        number = self._next_number = self._next_number % 0xFFFFFFFF + 1
        try:
            socket.send_fds(self._files_socket, [FILE_NUMBER.pack(number)], [descriptor])
        except OSError as error:  # full (the front does not read it) or gone: the bytes go as a copy
            _log.warning("a file could not be passed to front %d: %s", self.index, error)
            return None
        finally:
            os.close(descriptor)
        self._shared[number] = file
        self._numbers[id(file)] = number
        return number

    def release_closed(self) -> None:
        """Tell the front to close its descriptors of the files closed since (the clean service deleted them), so
        that their disk space is freed: no message names them any more."""
        for number, file in tuple(self._shared.items()):
            if not file.available:
                del self._shared[number]
                del self._numbers[id(file)]
                self.send(Relay.RELEASE, 0, control({"file": number}))

    def route(self, conn: int, receiver: Callable[[bytes], None]) -> None:
        """Send connection ``conn``'s bytes to ``receiver`` from now on."""
        if conn in self._receivers:
            self._receivers[conn] = receiver

    def on_data(self, conn: int, payload: bytearray) -> None:
        receive = self._receivers.get(conn)
        if receive is not None:
            receive(payload)  # type: ignore[arg-type]  # the frame decoder takes any bytes-like object

    def on_control(self, kind: Relay, conn: int, payload: bytes) -> None:
        if kind is Relay.OPENED:
            self._opened(conn, read_control(payload))
        elif kind is Relay.LOST:
            transport = self.connections.pop(conn, None)
            self._receivers.pop(conn, None)
            if transport is not None:
                error = read_control(payload).get("error")
                transport.lost(ConnectionResetError(error) if error else None)
        elif kind is Relay.WRITE_PAUSED or kind is Relay.WRITE_RESUMED:
            transport = self.connections.get(conn)
            if transport is not None:
                transport.block_writes(client=kind is Relay.WRITE_PAUSED)
        elif kind is Relay.ACTIVE:
            transport = self.connections.get(conn)
            if transport is not None and transport.protocol is not None:
                transport.protocol.note_activity()
        elif kind is Relay.READY:
            if not self.ready.done():
                self.ready.set_result(read_control(payload))
        else:
            _log.warning("front %d sent a %s message, which the server does not take", self.index, kind.name)

    def on_records(self, conn: int, payload: memoryview) -> None:
        _log.warning("front %d sent a RECORDS message, which the server does not take", self.index)

    def on_placement(self, kind: Relay, payload: memoryview) -> None:
        if kind is Relay.PLACE and self.pool.service is not None:
            self.pool.place(self, payload)
        else:
            _log.warning("front %d sent a %s message, which the server does not take", self.index, kind.name)

    def _opened(self, conn: int, info: dict[str, Any]) -> None:
        transport = FrontTransport(self, conn, info)
        protocol = self.pool.protocol_factory()
        transport.protocol = protocol
        self.connections[conn] = transport
        self._receivers[conn] = protocol.data_received
        protocol.connection_made(transport)
        if self._writes_blocked:
            transport.block_writes(channel=True)

    def pause_writing(self) -> None:
        # The front reads the channel slower than we answer: its connections wait, as a socket's would.
        self._writes_blocked = True
        for transport in tuple(self.connections.values()):
            transport.block_writes(channel=True)

    def resume_writing(self) -> None:
        self._writes_blocked = False
        for transport in tuple(self.connections.values()):
            transport.block_writes(channel=False)

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self._files_socket.close()
        self._shared.clear()
        self._numbers.clear()
        if not self.ready.done():
            self.ready.set_exception(ConnectionError(f"front {self.index} closed its channel before listening"))
        connections, self.connections = self.connections, {}
        self._receivers.clear()
        for transport in connections.values():
            transport.lost(ConnectionResetError(f"front process {self.index} is gone"))


class FrontPool:
    """The front processes of one server: starts them, starts again one that dies, stops them."""

    def __init__(self, count: int, protocol_factory: Callable[[], RemotingConnection],
                 config: RemotingServerConfig, tls: TlsConfig, service: FrontService | None = None) -> None:
        if count < 1:
            raise ValueError(f"a front pool needs at least one process, not {count}")
        self.count = count
        self.protocol_factory = protocol_factory
        self._config = config
        self._tls = tls
        self._host = ""
        self.port = 0
        self._reserved: socket.socket | None = None
        self._processes: dict[int, asyncio.subprocess.Process] = {}
        self._channels: dict[int, _ServerChannel] = {}
        self._watchers: set[asyncio.Task[None]] = set()
        self._stopping = False
        #: Serves some requests in the fronts; None: they relay every frame.
        self.service = service
        self._settings = b""
        self._housekeeping: asyncio.Task[None] | None = None

    @property
    def pids(self) -> list[int]:
        """The process ids of the running fronts."""
        return [process.pid for process in self._processes.values() if process.returncode is None]

    async def start(self, host: str, port: int) -> int:
        """Reserve ``host:port`` (port 0 picks one), start the fronts on it; returns the port."""
        self._host = host
        self._reserved = self._reserve(host, port)
        self.port = self._reserved.getsockname()[1]
        try:
            await asyncio.gather(*(self._start_front(index) for index in range(self.count)))
        except BaseException:
            self.close()
            await self.wait_closed()
            raise
        self._housekeeping = asyncio.get_running_loop().create_task(self._keep_house())
        _log.info("%d front processes (%s) accept the clients on %s:%d", self.count,
                  ", ".join(str(pid) for pid in self.pids), host, self.port)
        return self.port

    @staticmethod
    def _reserve(host: str, port: int) -> socket.socket:
        """A socket bound to the port with ``SO_REUSEPORT``, never listening: it holds the port for the fronts
        (and picks it when ``port`` is 0) and fails at once when another program has it."""
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, kind, proto, _, address = infos[0]
        sock = socket.socket(family, kind, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.bind(address)
        except OSError as error:
            sock.close()
            raise OSError(error.errno, f"cannot bind {host}:{port}: {error.strerror}") from None
        return sock

    async def _start_front(self, index: int) -> None:
        loop = asyncio.get_running_loop()
        ours, theirs = socket.socketpair()
        files_ours, files_theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        files_ours.setblocking(False)
        env = dict(os.environ)
        # The front imports the same rocketmq_py as this process, installed or not.
        package_root = str(Path(rocketmq_py.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (package_root, env.get("PYTHONPATH"))))
        level = logging.getLevelName(logging.getLogger("rocketmq_py").getEffectiveLevel())
        try:
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "rocketmq_py.remoting.front", "--channel-fd", str(theirs.fileno()),
                "--files-fd", str(files_theirs.fileno()), "--log-level", str(level),
                pass_fds=(theirs.fileno(), files_theirs.fileno()), env=env, stdin=asyncio.subprocess.DEVNULL)
        except BaseException:
            files_ours.close()
            raise
        finally:
            theirs.close()
            files_theirs.close()
        _, channel = await loop.connect_accepted_socket(lambda: _ServerChannel(self, index, files_ours), ours)
        config = self._config
        if self.service is not None:
            self._settings = self.service.settings()
            channel.send(Relay.SERVE_SETTINGS, 0, self._settings)
        channel.send(Relay.SETUP, 0, control({
            "host": self._host, "port": self.port, "backlog": config.server_socket_backlog,
            "idle": config.server_channel_max_idle_time_seconds,
            "high": config.write_buffer_high_water_mark, "low": config.write_buffer_low_water_mark,
            "tls": asdict(self._tls),
        }))
        try:
            try:
                ready = await asyncio.wait_for(asyncio.shield(channel.ready), _READY_TIMEOUT_S)
            except (ConnectionError, asyncio.TimeoutError) as error:
                raise OSError(f"front process {index} (pid {process.pid}) did not start listening: "
                              f"{str(error) or 'timed out'}") from None
            if "error" in ready:
                raise OSError(f"front process {index} cannot listen on {self._host}:{self.port}: {ready['error']}")
        except BaseException:
            channel.close()
            # A front that failed has often exited already, before its exit was reaped (returncode still None):
            # killing it then raises ProcessLookupError, which would hide the error being raised.
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
            raise
        self._processes[index] = process
        self._channels[index] = channel
        watcher = loop.create_task(self._watch(index, process, channel))
        self._watchers.add(watcher)
        watcher.add_done_callback(self._watchers.discard)

    async def _watch(self, index: int, process: asyncio.subprocess.Process, channel: _ServerChannel) -> None:
        code = await process.wait()
        channel.close()
        await channel.closed
        if self._stopping:
            return
        _log.error("front process %d (pid %d) exited with %s; its clients' connections are gone; "
                   "starting it again in %.0f s", index, process.pid, code, _RESTART_DELAY_S)
        while not self._stopping:
            await asyncio.sleep(_RESTART_DELAY_S)
            if self._stopping:
                return
            try:
                await self._start_front(index)
                _log.info("front process %d started again (pid %d)", index, self._processes[index].pid)
                return
            except OSError as error:
                _log.error("%s; trying again in %.0f s", error, _RESTART_DELAY_S)

    def place(self, channel: _ServerChannel, payload: memoryview) -> None:
        """Place a front's records and answer it; new settings reach every front before the answer."""
        assert self.service is not None
        placed = self.service.place(payload)
        self._push_settings(self.service.current_settings)
        channel.send(Relay.PLACED, 0, placed)

    def push_settings(self) -> None:
        """Push the service's settings to every front now, when they changed."""
        if self.service is not None:
            self._push_settings(self.service.settings())

    def _push_settings(self, settings: bytes) -> None:
        if settings is not self._settings:
            self._settings = settings
            for channel in self._channels.values():
                channel.send(Relay.SERVE_SETTINGS, 0, settings)

    async def _keep_house(self) -> None:
        """Have the fronts close the files closed here, and push changed settings to them."""
        while not self._stopping:
            await asyncio.sleep(_CHECK_S)
            for channel in self._channels.values():
                channel.release_closed()
            try:
                self.push_settings()
            except Exception:
                _log.exception("the fronts' settings could not be made")

    def close(self) -> None:
        """Stop accepting connections; the connections already accepted stay."""
        self._stopping = True
        for channel in self._channels.values():
            channel.send(Relay.STOP_ACCEPTING, 0)
            channel.flush()

    async def wait_closed(self) -> None:
        """Close the channels (the fronts exit) and wait for the processes."""
        self._stopping = True
        for channel in self._channels.values():
            channel.close()
        for process in self._processes.values():
            try:
                await asyncio.wait_for(process.wait(), _EXIT_TIMEOUT_S)
            except asyncio.TimeoutError:
                _log.warning("front process pid %d did not exit within %.0f s; killing it",
                             process.pid, _EXIT_TIMEOUT_S)
                with contextlib.suppress(ProcessLookupError):  # it exited after all
                    process.kill()
                await process.wait()
        for watcher in tuple(self._watchers):
            watcher.cancel()
        if self._housekeeping is not None:
            self._housekeeping.cancel()
        if self._reserved is not None:
            self._reserved.close()
            self._reserved = None
