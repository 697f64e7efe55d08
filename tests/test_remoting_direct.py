"""DirectChannel, the blocking connection of one thread (remoting/direct.py), against small scripted servers
on the test's loop: stray and late frames, malformed frames, idle and closed connections, shutdown."""
from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Awaitable, Callable

import pytest

from rocketmq_py import codec
from rocketmq_py.errors import RemotingConnectError, RemotingSendRequestError, RemotingTimeoutError
from rocketmq_py.remoting import RemotingClientConfig, create_request, create_response
from rocketmq_py.remoting.direct import DirectChannel, DirectChannels

_CALLER = ThreadPoolExecutor(1, thread_name_prefix="direct-caller")

Script = Callable[[codec.RemotingCommand, asyncio.StreamWriter], Awaitable[None]]


class ScriptedServer:
    """Answers each request frame with what ``script`` writes; counts connections."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.connections = 0
        self.server: asyncio.AbstractServer | None = None

    async def __aenter__(self) -> "ScriptedServer":
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()

    @property
    def addr(self) -> str:
        assert self.server is not None
        return "127.0.0.1:%d" % self.server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        decoder = codec.FrameDecoder()
        try:
            while data := await reader.read(65536):
                for request in decoder.feed(data):
                    await self.script(request, writer)
                    await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()


async def _blocking(function: Callable[..., Any], *args: Any) -> Any:
    return await asyncio.get_running_loop().run_in_executor(_CALLER, function, *args)


def _frame(command: codec.RemotingCommand) -> bytes:
    return codec.encode_command(command)


async def _echo(request: codec.RemotingCommand, writer: asyncio.StreamWriter) -> None:
    writer.write(_frame(create_response(request, 0, remark=f"echo {request.code}")))


async def test_stray_frames_are_dropped_and_the_right_response_returned() -> None:
    async def script(request: codec.RemotingCommand, writer: asyncio.StreamWriter) -> None:
        writer.write(_frame(create_request(40, {"a": "server request"})))  # a request of the server's
        writer.write(_frame(create_response(create_request(1), 0, remark="someone else's")))
        writer.write(_frame(create_response(request, 0, remark="mine")))

    async with ScriptedServer(script) as server:
        channel = DirectChannel(server.addr, RemotingClientConfig())
        try:
            for _ in range(3):
                request = create_request(310, {"x": "1"}, b"body")
                response = await _blocking(channel.call, request, 3000)
                assert response.is_response and response.opaque == request.opaque and response.remark == "mine"
        finally:
            channel.close()
    assert server.connections == 1


async def test_a_malformed_frame_fails_the_call_and_the_next_call_connects_again() -> None:
    calls = 0

    async def script(request: codec.RemotingCommand, writer: asyncio.StreamWriter) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            writer.write(b"\x00\x00\x00\x08\x01\x00\x00\x00garbage!")  # a header length beyond the frame
        else:
            await _echo(request, writer)

    async with ScriptedServer(script) as server:
        channel = DirectChannel(server.addr, RemotingClientConfig())
        try:
            with pytest.raises(RemotingSendRequestError, match="malformed"):
                await _blocking(channel.call, create_request(310), 3000)
            assert not channel.is_connected
            response = await _blocking(channel.call, create_request(310), 3000)
            assert response.remark == "echo 310"
        finally:
            channel.close()
    assert server.connections == 2


async def test_a_timeout_keeps_the_connection_and_the_late_answer_is_skipped() -> None:
    delays = [0.3, 0.0]

    async def script(request: codec.RemotingCommand, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(delays.pop(0))
        writer.write(_frame(create_response(request, 0, remark=str(request.opaque))))

    async with ScriptedServer(script) as server:
        channel = DirectChannel(server.addr, RemotingClientConfig())
        try:
            late = create_request(310)
            with pytest.raises(RemotingTimeoutError) as timeout:
                await _blocking(channel.call, late, 50)
            assert timeout.value.opaque == late.opaque
            on_time = create_request(310)
            response = await _blocking(channel.call, on_time, 3000)
            assert response.remark == str(on_time.opaque)
        finally:
            channel.close()
    assert server.connections == 1


async def test_an_idle_or_closed_connection_is_replaced_before_writing() -> None:
    async with ScriptedServer(_echo) as server:
        channel = DirectChannel(server.addr, RemotingClientConfig(client_channel_max_idle_time_seconds=0.2))
        try:
            await _blocking(channel.call, create_request(1), 3000)
            await _blocking(channel.call, create_request(2), 3000)
            assert server.connections == 1
            await asyncio.sleep(0.3)  # idle past the limit: the server may be closing it, so it is not used
            await _blocking(channel.call, create_request(3), 3000)
            assert server.connections == 2
        finally:
            channel.close()


async def test_connect_failures_and_a_shut_down_pool_raise_connect_errors() -> None:
    async with ScriptedServer(_echo) as server:
        addr = server.addr
    channel = DirectChannel(addr, RemotingClientConfig())  # nothing listens there any more
    with pytest.raises(RemotingConnectError):
        await _blocking(channel.call, create_request(1), 1000)
    channels = DirectChannels(RemotingClientConfig())
    channels.close()
    with pytest.raises(RemotingConnectError, match="shut down"):
        channels.get(addr)


async def test_closing_the_pool_from_another_thread_ends_a_waiting_call_at_once() -> None:
    async def never(request: codec.RemotingCommand, writer: asyncio.StreamWriter) -> None:
        pass

    async with ScriptedServer(never) as server:
        channels = DirectChannels(RemotingClientConfig())

        def call() -> None:
            with pytest.raises(RemotingSendRequestError):
                channels.get(server.addr).call(create_request(1), 60_000)

        waiting = asyncio.get_running_loop().run_in_executor(_CALLER, call)
        while server.connections == 0:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        channels.close()
        await asyncio.wait_for(waiting, 30)  # long before the call's own 60 s timeout
