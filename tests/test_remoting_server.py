"""The server side: malformed frames, oneway silence, connection events, idle close, graceful shutdown."""
from __future__ import annotations

import asyncio
import struct

import pytest
from support.remoting import (  # noqa: F401  (the fixtures are found by pytest)
    ECHO,
    GATED,
    RECORD,
    UNKNOWN,
    ServerState,
    build_processors,
    remoting_client_fixture,
    remoting_server_fixture,
    remoting_state_fixture,
)

from rocketmq_py import codec
from rocketmq_py.errors import CodecError, RemotingSendRequestError
from rocketmq_py.remoting import (
    ConnectionListener,
    RemotingClient,
    RemotingCommand,
    RemotingConnection,
    RemotingServer,
    RemotingServerConfig,
    create_request,
    mark_oneway,
)
from rocketmq_py.remoting.command import DEFAULT_SERIALIZE_TYPE


async def read_command(reader: asyncio.StreamReader) -> RemotingCommand:
    (length,) = struct.unpack(">i", await reader.readexactly(4))
    return codec.decode_frame(await reader.readexactly(length))


def frame_with_length(length: int) -> bytes:
    return struct.pack(">i", length)


MALFORMED = {
    "garbage": b"GET / HTTP/1.1\r\nHost: broker\r\n\r\n",
    "bad header": frame_with_length(12) + struct.pack(">I", 8) + b"not json",
    "header longer than frame": frame_with_length(8) + struct.pack(">I", 0x00FFFFFF) + b"{}{}",
    "unknown serialize type": frame_with_length(6) + struct.pack(">I", (7 << 24) | 2) + b"{}",
    "negative length": frame_with_length(-1),
    "above 16 MiB": frame_with_length(16 * 1024 * 1024 - 3),
}


@pytest.mark.parametrize("data", MALFORMED.values(), ids=MALFORMED.keys())
async def test_malformed_frame_closes_only_that_connection(
    remoting_server: RemotingServer, remoting_client: RemotingClient, data: bytes,
) -> None:
    assert (await remoting_client.invoke(remoting_server.address, create_request(ECHO), 3000)).code == 0
    errors: list[BaseException] = []

    class Recorder(ConnectionListener):
        def on_exception(self, connection: RemotingConnection, error: BaseException) -> None:
            errors.append(error)

    remoting_server.add_listener(Recorder())
    reader, writer = await asyncio.open_connection("127.0.0.1", remoting_server.port)
    try:
        writer.write(data)
        await writer.drain()
        assert await asyncio.wait_for(reader.read(), 5) == b""  # the server closed it, without an answer
    finally:
        writer.close()
    assert len(errors) == 1 and isinstance(errors[0], CodecError)
    response = await remoting_client.invoke(remoting_server.address, create_request(ECHO, {"still": "works"}), 3000)
    assert response.ext_fields == {"still": "works"}
    assert remoting_server.is_serving


async def test_oneway_requests_never_get_a_response(
    remoting_server: RemotingServer, remoting_state: ServerState,
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", remoting_server.port)
    try:
        for code in (RECORD, UNKNOWN):
            writer.write(codec.encode_command(mark_oneway(create_request(code))))
        await writer.drain()
        await asyncio.wait_for(remoting_state.recorded_event.wait(), 5)
        request = create_request(ECHO)
        writer.write(codec.encode_command(request))
        await writer.drain()
        response = await asyncio.wait_for(read_command(reader), 5)
        assert response.opaque == request.opaque
    finally:
        writer.close()


async def test_response_serialization_follows_the_request_and_errors_use_the_default(
    remoting_server: RemotingServer,
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", remoting_server.port)
    try:
        writer.write(codec.encode_command(create_request(ECHO, serialize_type=codec.SERIALIZE_ROCKETMQ)))
        assert (await asyncio.wait_for(read_command(reader), 5)).serialize_type == codec.SERIALIZE_ROCKETMQ
        writer.write(codec.encode_command(create_request(UNKNOWN, serialize_type=codec.SERIALIZE_ROCKETMQ)))
        not_supported = await asyncio.wait_for(read_command(reader), 5)
        assert not_supported.code == 3 and not_supported.serialize_type == DEFAULT_SERIALIZE_TYPE
    finally:
        writer.close()


async def test_connection_events_and_registry(remoting_server: RemotingServer) -> None:
    events: list[tuple[str, str]] = []

    class Recorder(ConnectionListener):
        def on_connect(self, connection: RemotingConnection) -> None:
            events.append(("connect", connection.remote_address))

        def on_close(self, connection: RemotingConnection) -> None:
            events.append(("close", connection.remote_address))

    remoting_server.add_listener(Recorder())
    remoting_client = RemotingClient()
    await remoting_client.invoke(remoting_server.address, create_request(ECHO), 3000)
    local = remoting_client.connection(remoting_server.address)
    assert local is not None
    assert events == [("connect", local.local_address)]
    found = remoting_server.find_connection(local.local_address)
    assert found is not None and found.remote_address == local.local_address
    await remoting_client.shutdown()
    await asyncio.wait_for(found.wait_closed(), 5)
    assert events[-1] == ("close", local.local_address)
    assert remoting_server.connections == []
    assert remoting_server.find_connection(local.local_address) is None


async def test_idle_connection_is_closed(remoting_state: ServerState) -> None:
    idled: list[str] = []

    class Recorder(ConnectionListener):
        def on_idle(self, connection: RemotingConnection) -> None:
            idled.append(connection.remote_address)

    config = RemotingServerConfig(server_channel_max_idle_time_seconds=0.2)
    srv = RemotingServer(processors=build_processors(remoting_state), config=config, listeners=[Recorder()])
    async with srv, RemotingClient() as remoting_client:
        await remoting_client.invoke(srv.address, create_request(ECHO), 3000)
        connection = remoting_client.connection(srv.address)
        assert connection is not None
        assert await connection.wait_closed(5)
        assert idled == [connection.local_address]
        assert (await remoting_client.invoke(srv.address, create_request(ECHO), 3000)).code == 0


async def test_graceful_shutdown_lets_running_requests_finish(remoting_state: ServerState) -> None:
    srv = RemotingServer(processors=build_processors(remoting_state))
    await srv.start()
    async with RemotingClient() as remoting_client:
        running = asyncio.ensure_future(
            remoting_client.invoke(srv.address, create_request(GATED, {"n": "1"}), 10000)
        )
        await asyncio.wait_for(remoting_state.gated_started.wait(), 5)
        stopping = asyncio.ensure_future(srv.shutdown(timeout_s=10))
        await asyncio.sleep(0.05)
        assert not stopping.done() and not running.done()
        remoting_state.gate.set()
        response = await asyncio.wait_for(running, 5)
        assert response.code == 0 and response.ext_fields == {"n": "1"}
        await asyncio.wait_for(stopping, 5)
        assert srv.connections == []
        assert not srv.is_serving


async def test_shutdown_timeout_cancels_stuck_requests(remoting_state: ServerState) -> None:
    srv = RemotingServer(processors=build_processors(remoting_state))
    await srv.start()
    async with RemotingClient() as remoting_client:
        running = asyncio.ensure_future(remoting_client.invoke(srv.address, create_request(GATED), 60000))
        await asyncio.wait_for(remoting_state.gated_started.wait(), 5)
        await asyncio.wait_for(srv.shutdown(timeout_s=0.1), 5)
        assert remoting_state.gated_running == 0
        with pytest.raises(RemotingSendRequestError):
            await asyncio.wait_for(running, 5)


async def test_stopped_server_refuses_new_connections(remoting_state: ServerState) -> None:
    srv = RemotingServer(processors=build_processors(remoting_state))
    await srv.start()
    port = srv.port
    await srv.shutdown()
    with pytest.raises(OSError):
        await asyncio.open_connection("127.0.0.1", port)


async def test_port_before_start_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="start"):
        _ = RemotingServer().port


async def test_peer_that_does_not_read_is_throttled_then_served(remoting_server: RemotingServer) -> None:
    megabyte = 1024 * 1024
    reader, writer = await asyncio.open_connection("127.0.0.1", remoting_server.port)
    try:
        for i in range(24):
            writer.write(codec.encode_command(create_request(ECHO, {"i": str(i)}, bytes([i]) * megabyte)))

        async def server_writes_blocked() -> None:
            while not remoting_server.connections or not remoting_server.connections[0].writing_paused:
                await asyncio.sleep(0.01)

        await asyncio.wait_for(server_writes_blocked(), 10)
        responses = [await asyncio.wait_for(read_command(reader), 10) for _ in range(24)]
        numbers = [int((r.ext_fields or {})["i"]) for r in responses]
        assert sorted(numbers) == list(range(24))
        assert all(r.body == bytes([n]) * megabyte for r, n in zip(responses, numbers))
    finally:
        writer.close()
