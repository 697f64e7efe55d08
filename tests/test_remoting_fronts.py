"""A server with front processes (``worker_processes``): the clients see one server, the server sees its
connections as if it owned the sockets, and a front that dies is replaced while the server goes on."""
from __future__ import annotations

import asyncio
import os
import signal
import socket
import struct
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support.cluster import wait_until
from support.remoting import CALL_BACK, CLIENT_CHECK, ECHO, ServerState, build_processors, feed
from support.tls import KeyPair, make_key_pair

from rocketmq_py import codec
from rocketmq_py.errors import RemotingError
from rocketmq_py.remoting import (
    ConnectionListener,
    ProcessorTable,
    RemotingClient,
    RemotingClientConfig,
    RemotingCommand,
    RemotingConnection,
    RemotingServer,
    RemotingServerConfig,
    RequestContext,
    create_request,
    create_response,
)
from rocketmq_py.remoting.front import _ClientRelay, _FrontChannel, _whole_frames_end
from rocketmq_py.remoting.front_pool import FrontTransport, _ServerChannel
from rocketmq_py.remoting.relay import Relay, RelayChannel
from rocketmq_py.remoting.tls import TlsConfig, TlsMode

FRONTS = 2


@pytest.fixture(name="state")
def state_fixture() -> ServerState:
    return ServerState()


@pytest.fixture(name="server")
async def server_fixture(state: ServerState) -> AsyncIterator[RemotingServer]:
    server = RemotingServer(processors=build_processors(state),
                            config=RemotingServerConfig(worker_processes=FRONTS, shutdown_timeout_seconds=2.0))
    state.server = server
    await server.start()
    yield server
    state.gate.set()
    await server.shutdown()


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


async def read_command(reader: asyncio.StreamReader) -> RemotingCommand:
    (length,) = struct.unpack(">i", await reader.readexactly(4))
    return codec.decode_frame(await reader.readexactly(length))


async def test_clients_are_served_through_the_fronts_and_registered_with_their_own_address(
        server: RemotingServer) -> None:
    pids = server.front_pids
    assert len(pids) == FRONTS and os.getpid() not in pids and all(alive(pid) for pid in pids)
    clients = [RemotingClient() for _ in range(8)]
    try:
        for client in clients:
            body = os.urandom(70_000)  # more than one socket read, relayed in pieces
            response = await client.invoke(server.address, create_request(ECHO, {"k": "v"}, body), 5000)
            assert (response.code, response.ext_fields, response.body) == (0, {"k": "v"}, body)
        locals_ = sorted(c.local_address for client in clients if (c := client.connection(server.address)))
        assert sorted(c.remote_address for c in server.connections) == locals_
        found = server.find_connection(locals_[0])
        assert found is not None and found.local_address == server.address and not found.tls
        # Many requests in flight on every connection, answered out of order by opaque.
        requests = [clients[i % 8].invoke(server.address, create_request(ECHO, {"i": str(i)}), 10_000)
                    for i in range(4000)]
        answers = await asyncio.gather(*requests)
        assert [a.ext_fields for a in answers] == [{"i": str(i)} for i in range(4000)]
    finally:
        for client in clients:
            await client.shutdown()
    await wait_until(lambda: not server.connections, timeout=10)


async def test_the_server_calls_a_client_back_through_its_front(server: RemotingServer) -> None:
    table = ProcessorTable()

    async def on_check(ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        return create_response(request, 0, "fine")

    table.register(CLIENT_CHECK, on_check)
    async with RemotingClient(table) as client:
        response = await client.invoke(server.address, create_request(CALL_BACK), 5000)
        assert (response.code, response.remark) == (0, "client said fine")


async def test_a_malformed_frame_closes_only_its_connection(server: RemotingServer) -> None:
    events: list[str] = []

    class Recorder(ConnectionListener):
        def on_exception(self, connection: RemotingConnection, error: BaseException) -> None:
            events.append(connection.remote_address)

    server.add_listener(Recorder())
    async with RemotingClient() as good:
        assert (await good.invoke(server.address, create_request(ECHO), 5000)).code == 0
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        try:
            writer.write(b"GET / HTTP/1.1\r\nHost: broker\r\n\r\n")
            assert await asyncio.wait_for(reader.read(), 5) == b""
        finally:
            writer.close()
        assert events == [f"{writer.get_extra_info('sockname')[0]}:{writer.get_extra_info('sockname')[1]}"]
        assert (await good.invoke(server.address, create_request(ECHO), 5000)).code == 0


def receive_commands(sock: socket.socket, count: int) -> list[RemotingCommand]:
    stream = sock.makefile("rb")
    commands = []
    for _ in range(count):
        (length,) = struct.unpack(">i", stream.read(4))
        commands.append(codec.decode_frame(stream.read(length)))
    return commands


async def test_a_peer_that_does_not_read_is_throttled_then_served(state: ServerState) -> None:
    megabyte = 1024 * 1024
    config = RemotingServerConfig(worker_processes=1, write_buffer_high_water_mark=megabyte,
                                  write_buffer_low_water_mark=megabyte // 2)
    server = RemotingServer(processors=build_processors(state), config=config)
    await server.start()
    loop = asyncio.get_running_loop()
    # A plain blocking socket, read by nobody until the end (a StreamReader would read ahead into memory).
    sock = socket.create_connection(("127.0.0.1", server.port))
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        frames = b"".join(codec.encode_command(create_request(ECHO, {"i": str(i)}, bytes([i]) * megabyte))
                          for i in range(48))
        sending = loop.run_in_executor(None, sock.sendall, frames)
        await wait_until(lambda: bool(server.connections), timeout=10)
        transport = server.connections[0]._transport
        assert isinstance(transport, FrontTransport)
        # The front's buffer for this client passes its high watermark (set from the server's config), the
        # front says so, and the server's connection stops writing and reading.
        await wait_until(lambda: transport.client_blocked, timeout=10)
        assert server.connections[0].writing_paused and not transport.is_reading()
        responses = await loop.run_in_executor(None, receive_commands, sock, 48)
        await asyncio.wait_for(sending, 10)
        numbers = sorted(int((r.ext_fields or {})["i"]) for r in responses)
        assert numbers == list(range(48))
        assert all(r.body == bytes([int((r.ext_fields or {})["i"])]) * megabyte for r in responses)
        await wait_until(lambda: not server.connections[0].writing_paused and transport.is_reading(),
                         timeout=10)
    finally:
        sock.close()
        await server.shutdown()


async def test_a_killed_front_takes_only_its_clients_and_is_started_again(server: RemotingServer) -> None:
    clients = [RemotingClient() for _ in range(12)]
    try:
        for client in clients:
            assert (await client.invoke(server.address, create_request(ECHO), 5000)).code == 0
        victim = server.front_pids[0]
        os.kill(victim, signal.SIGKILL)
        await wait_until(lambda: len(server.front_pids) == FRONTS and victim not in server.front_pids,
                         timeout=10)
        new_front = [pid for pid in server.front_pids if pid != victim]
        assert all(alive(pid) for pid in new_front)
        # Every client is served again: those of the killed front on a new connection.
        for client in clients:
            assert (await client.invoke(server.address, create_request(ECHO), 5000)).code == 0
        assert len(server.connections) == 12
    finally:
        for client in clients:
            await client.shutdown()


async def test_shutdown_stops_the_fronts_and_frees_the_port(state: ServerState) -> None:
    server = RemotingServer(processors=build_processors(state), config=RemotingServerConfig(worker_processes=2))
    await server.start()
    pids, port = server.front_pids, server.port
    async with RemotingClient() as client:
        assert (await client.invoke(server.address, create_request(ECHO), 5000)).code == 0
        await server.shutdown()
        assert not any(alive(pid) for pid in pids)
        with pytest.raises(OSError):
            await asyncio.open_connection("127.0.0.1", port)
        with pytest.raises(RemotingError):
            await client.invoke(f"127.0.0.1:{port}", create_request(ECHO), 2000)


async def test_a_port_held_by_another_program_fails_the_start(state: ServerState) -> None:
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    try:
        server = RemotingServer(port=holder.getsockname()[1], processors=build_processors(state),
                                config=RemotingServerConfig(worker_processes=1))
        with pytest.raises(OSError, match="cannot bind"):
            await server.start()
    finally:
        holder.close()


async def test_tls_is_done_by_the_fronts(state: ServerState, tmp_path: Path) -> None:
    pair: KeyPair = make_key_pair(tmp_path, "server")
    tls = TlsConfig(server_mode=TlsMode.PERMISSIVE, server_cert_path=pair.cert, server_key_path=pair.key)
    server = RemotingServer(processors=build_processors(state),
                            config=RemotingServerConfig(worker_processes=1, tls=tls))
    await server.start()
    try:
        for use_tls in (True, False):
            config = RemotingClientConfig(use_tls=use_tls, tls=TlsConfig())
            async with RemotingClient(config=config) as client:
                response = await client.invoke(server.address, create_request(ECHO, {}, b"secret"), 5000)
                assert response.body == b"secret"
                connection = client.connection(server.address)
                assert connection is not None
                served = server.find_connection(connection.local_address)
                assert served is not None and served.tls is use_tls
    finally:
        await server.shutdown()


def test_fronts_exit_when_their_server_is_killed(tmp_path: Path) -> None:
    script = textwrap.dedent("""
        import asyncio, sys
        from rocketmq_py.remoting import ProcessorTable, RemotingServer, RemotingServerConfig

        async def main():
            server = RemotingServer(processors=ProcessorTable(), config=RemotingServerConfig(worker_processes=2))
            await server.start()
            print(" ".join(map(str, server.front_pids)), flush=True)
            await asyncio.sleep(60)

        asyncio.run(main())
    """)
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        pids = [int(pid) for pid in process.stdout.readline().split()]
        assert len(pids) == 2 and all(alive(pid) for pid in pids)
    finally:
        process.kill()
        process.wait()
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(pid) for pid in pids)


# --- the server's end of a channel, without processes ----------------------------------------------


class FakeTransport:
    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.aborted = False

    def writelines(self, parts: list[bytes]) -> None:
        self.written.append(b"".join(parts))

    def write(self, data: bytes) -> None:
        self.written.append(bytes(data))

    def is_closing(self) -> bool:
        return self.aborted

    def abort(self) -> None:
        self.aborted = True

    def close(self) -> None:
        self.aborted = True


class FakeConnection:
    def __init__(self) -> None:
        self.events: list[tuple[str, object]] = []

    def connection_made(self, transport: object) -> None:
        self.events.append(("made", transport))

    def data_received(self, data: bytes) -> None:
        self.events.append(("data", bytes(data)))

    def pause_writing(self) -> None:
        self.events.append(("pause_writing", None))

    def resume_writing(self) -> None:
        self.events.append(("resume_writing", None))

    def connection_lost(self, exc: object) -> None:
        self.events.append(("lost", exc))


def message(kind: Relay, conn: int, payload: bytes = b"") -> bytes:
    return struct.pack(">BII", kind, conn, len(payload)) + payload


async def test_the_server_end_holds_a_paused_connections_bytes_and_passes_on_the_rest() -> None:
    made: list[FakeConnection] = []

    class Pool:
        def protocol_factory(self) -> FakeConnection:
            made.append(FakeConnection())
            return made[-1]

    files_socket, files_peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    files_peer.close()
    channel = _ServerChannel(Pool(), 0, files_socket)  # type: ignore[arg-type]
    out = FakeTransport()
    channel.connection_made(out)  # type: ignore[arg-type]
    opened = message(Relay.OPENED, 7, b'{"peer":["10.0.0.1",4242],"local":["10.0.0.2",10911],"tls":false}')
    # Messages arrive cut anywhere: here one byte at a time, then several in one piece.
    for byte in opened + message(Relay.DATA, 7, b"abc"):
        feed(channel, bytes([byte]))
    (connection,) = made
    transport = connection.events[0][1]
    assert isinstance(transport, FrontTransport)
    assert transport.get_extra_info("peername") == ("10.0.0.1", 4242)
    assert transport.get_extra_info("sockname") == ("10.0.0.2", 10911)
    assert transport.get_extra_info("ssl_object") is None
    assert connection.events[1:] == [("data", b"abc")]
    transport.pause_reading()
    feed(channel, message(Relay.DATA, 7, b"held") + message(Relay.DATA, 7, b"too"))
    assert connection.events[1:] == [("data", b"abc")]
    transport.resume_reading()
    feed(channel, message(Relay.DATA, 7, b"after"))  # before the held bytes are delivered
    await asyncio.sleep(0.01)
    assert connection.events[1:] == [("data", b"abc"), ("data", b"held"), ("data", b"too"), ("data", b"after")]
    feed(channel, message(Relay.DATA, 7, b"direct"))
    assert connection.events[-1] == ("data", b"direct")
    # Writes are blocked while the client's socket or the channel is full, and told once each way.
    feed(channel, message(Relay.WRITE_PAUSED, 7))
    channel.pause_writing()
    feed(channel, message(Relay.WRITE_RESUMED, 7))
    channel.resume_writing()
    assert connection.events[6:] == [("pause_writing", None), ("resume_writing", None)]
    transport.write(b"answer")
    transport.close()
    transport.write(b"dropped: the connection is closing")
    channel.flush()
    assert b"".join(out.written) == (message(Relay.PAUSE_READING, 7) + message(Relay.RESUME_READING, 7)
                                     + message(Relay.DATA, 7, b"answer") + message(Relay.CLOSE, 7))
    feed(channel, message(Relay.LOST, 7, b'{"error":"reset"}'))
    assert connection.events[-1][0] == "lost" and str(connection.events[-1][1]) == "reset"
    feed(channel, message(Relay.DATA, 7, b"late"))  # for a connection that is gone: dropped
    assert len(connection.events) == 9
    # A message of an unknown kind breaks the channel: it is aborted, and nothing after it is read.
    feed(channel, bytes([99]) + struct.pack(">II", 0, 0) + opened)
    assert out.aborted and len(made) == 1


class RecordingChannel(RelayChannel):
    """A channel end that records the messages it cuts."""

    def __init__(self) -> None:
        super().__init__()
        self.got: list[tuple[str, int, bytes]] = []

    def on_data(self, conn: int, payload: bytearray) -> None:
        self.got.append(("DATA", conn, bytes(payload)))

    def on_placement(self, kind: Relay, payload: memoryview) -> None:
        self.got.append((kind.name, 0, payload.tobytes()))

    def on_control(self, kind: Relay, conn: int, payload: bytes) -> None:
        self.got.append((kind.name, conn, payload))


async def test_a_channel_cuts_messages_of_any_size_from_reads_that_end_anywhere() -> None:
    # The channel reads into a buffer of its own: messages longer than its first size make it grow, a read may
    # end inside a message head, and what follows a long message is moved to the buffer's start.
    long = bytes(range(256)) * 3000
    messages = [(Relay.DATA, 3, b"x" * 10), (Relay.PLACE, 0, long), (Relay.ACTIVE, 3, b""),
                (Relay.PLACED, 0, long[:70_000]), (Relay.DATA, 4, long[:300_000]), (Relay.PLACE, 0, b"p")]
    stream = b"".join(message(kind, conn, payload) for kind, conn, payload in messages)
    expected = [(kind.name, conn, payload) for kind, conn, payload in messages] * 3
    for read_size in (999, 65_543, None):
        channel = RecordingChannel()
        feed(channel, stream * 3, read_size)
        assert channel.got == expected, read_size


class FakeClientTransport(FakeTransport):
    def __init__(self) -> None:
        super().__init__()
        self.reading = True

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def is_reading(self) -> bool:
        return self.reading

    def write(self, data: bytes) -> None:
        self.written.append(bytes(data))


async def test_a_front_reads_a_client_only_while_neither_the_server_nor_the_channel_stops_it() -> None:
    front = _FrontChannel()
    front.connection_made(FakeTransport())  # type: ignore[arg-type]
    first, second = front.new_client(), front.new_client()
    for client in (first, second):
        client.transport = FakeClientTransport()  # type: ignore[assignment]
        front.opened(client, {})
    feed(front, message(Relay.PAUSE_READING, first.conn))
    assert (first.transport.reading, second.transport.reading) == (False, True)  # type: ignore[union-attr]
    # The channel to the server fills, then drains: the client the server paused stays paused.
    front.pause_writing()
    assert (first.transport.reading, second.transport.reading) == (False, False)  # type: ignore[union-attr]
    front.resume_writing()
    assert (first.transport.reading, second.transport.reading) == (False, True)  # type: ignore[union-attr]
    # The server resumes it while the channel is full: it waits for the channel.
    front.pause_writing()
    feed(front, message(Relay.RESUME_READING, first.conn))
    assert first.transport.reading is False  # type: ignore[union-attr]
    front.resume_writing()
    assert first.transport.reading is True  # type: ignore[union-attr]
    feed(front, message(Relay.DATA, second.conn, b"answer"))
    assert second.transport.written == [b"answer"]  # type: ignore[union-attr]


class _RecordingFrameServer:
    """A front's frame server that serves nothing: it records what it is handed and relays the whole frames."""

    def __init__(self) -> None:
        self.handed: list[bytes] = []

    def update(self, settings: dict[str, object]) -> None:
        pass

    def take_frames(self, client: object, data: bytes, position: int) -> int:
        self.handed.append(bytes(data[position:]))
        end = _whole_frames_end(data[position:]) + position
        if end > position:
            client.relay(data[position:end])  # type: ignore[attr-defined]
        return end

    def placed(self, payload: memoryview) -> None:
        pass


def _client_of_a_recording_front(server: _RecordingFrameServer | None) -> tuple[_ClientRelay, list[bytes]]:
    """A client of a front whose frame server is ``server`` (None: it relays every frame), and the list of what
    the front relays to the server process (its DATA messages' payloads)."""
    front = _FrontChannel()
    front.connection_made(FakeTransport())  # type: ignore[arg-type]
    client = front.new_client()
    client.transport = FakeClientTransport()  # type: ignore[assignment]
    front.opened(client, {})
    relayed: list[bytes] = []

    def send(kind: Relay, conn: int, payload: bytes | bytearray | memoryview = b"") -> None:
        if kind is Relay.DATA:
            relayed.append(bytes(payload))

    front.send = send  # type: ignore[method-assign]
    front.frame_server = server
    return client, relayed


@pytest.mark.parametrize("serving", [False, True], ids=["relay-only", "frame-server"])
async def test_a_large_frame_in_many_reads_is_gathered_then_handed_on_once(serving: bool) -> None:
    """A frame that comes in many reads is handed to the frame server (or relayed) once, when it is whole, with
    the start of the next frame kept: each read is copied once, not joined again to all the reads before it
    (which copied a large frame once per read, quadratic in its size)."""
    server = _RecordingFrameServer()
    client, relayed = _client_of_a_recording_front(server if serving else None)
    frame = codec.encode_command(create_request(ECHO, body=b"x" * 1_000_000))
    following = codec.encode_command(create_request(ECHO, body=b"next"))
    stream = frame + following[:10]
    for start in range(0, len(stream), 4096):
        client.data_received(stream[start:start + 4096])
    assert relayed == [frame]
    if serving:
        assert len(server.handed) == 1 and server.handed[0].startswith(frame)
    client.data_received(following[10:])
    assert relayed == [frame, following]


class _IdentityFrameServer(_RecordingFrameServer):
    """Records the objects and positions it is handed, not copies of them."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[bytes, int]] = []

    def take_frames(self, client: object, data: bytes, position: int) -> int:
        self.calls.append((data, position))
        return super().take_frames(client, data, position)


@pytest.mark.parametrize("serving", [False, True], ids=["relay-only", "frame-server"])
async def test_the_read_that_completes_a_frame_is_taken_where_it_lies(serving: bool) -> None:
    """A read that completes the frame the previous read began: that frame alone is joined and handed on, and
    the whole frames after it are handed on in the read itself (from where they start), with nothing joined to
    them; whatever the reads' cut, the frames go on whole and in order."""
    frames = [codec.encode_command(create_request(ECHO, body=bytes([n]) * size))
              for n, size in enumerate([5000, 10, 70000, 0, 3000, 20])]
    stream = b"".join(frames)
    for cut in (2, 7, 4000, 5050, 76000):
        server = _IdentityFrameServer()
        client, relayed = _client_of_a_recording_front(server if serving else None)
        first, second = stream[:cut], stream[cut:]
        client.data_received(first)
        client.data_received(second)
        assert b"".join(relayed) == stream, cut
        if serving:
            assert any(data is second and position > 0 for data, position in server.calls), cut
