"""Shared pieces of the remoting tests: a server with test processors on loopback, and a client.

A test module imports the ``*_fixture`` functions it needs; pytest then
finds them under their ``remoting_*`` names, which cannot collide with the
fixtures of other test packages.
"""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from rocketmq_py.remoting import (
    ProcessorTable,
    RemotingClient,
    RemotingCommand,
    RemotingServer,
    RemotingServerConfig,
    RequestContext,
    create_request,
    create_response,
)

ECHO = 100          # answers with the request's remark, ext_fields and body
GATED = 101         # waits until the test opens the gate, then echoes
FAIL = 102          # raises ValueError("boom: <remark>")
RECORD = 103        # records the request (for oneway tests) and echoes
DROP = 104          # closes the connection it came on without answering
SHUFFLE = 105       # sleeps ext_fields["delay_ms"] before echoing, to reorder responses
CALL_BACK = 106     # asks the client, over the same connection, for code CLIENT_CHECK
CLIENT_CHECK = 200  # served by the client's processor table

UNKNOWN = 9999


class ServerState:
    """What the test processors saw, and the gate that holds GATED requests."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.gated_started = asyncio.Event()
        self.gated_running = 0
        self.recorded: list[RemotingCommand] = []
        self.recorded_event = asyncio.Event()
        self.server: RemotingServer | None = None


def echo(request: RemotingCommand) -> RemotingCommand:
    return create_response(request, 0, request.remark, request.ext_fields, request.body)


def build_processors(state: ServerState) -> ProcessorTable:
    table = ProcessorTable()

    async def on_echo(ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        return echo(request)

    async def on_gated(ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        state.gated_running += 1
        state.gated_started.set()
        try:
            await state.gate.wait()
        finally:
            state.gated_running -= 1
        return echo(request)

    async def on_fail(ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        raise ValueError(f"boom: {request.remark}")

    async def on_record(ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        state.recorded.append(request)
        state.recorded_event.set()
        return echo(request)

    async def on_drop(ctx: RequestContext, request: RemotingCommand) -> None:
        ctx.connection.abort()
        return None

    async def on_shuffle(ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        await asyncio.sleep(int((request.ext_fields or {}).get("delay_ms", "0")) / 1000.0)
        return echo(request)

    async def on_call_back(ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        assert state.server is not None
        answer = await state.server.invoke(ctx.connection, create_request(CLIENT_CHECK, {"q": "state?"}), 2000)
        return create_response(request, 0, f"client said {answer.remark}")

    table.register(ECHO, on_echo)
    table.register(GATED, on_gated)
    table.register(FAIL, on_fail)
    table.register(RECORD, on_record)
    table.register(DROP, on_drop)
    table.register(SHUFFLE, on_shuffle)
    table.register(CALL_BACK, on_call_back)
    return table


@pytest.fixture(name="remoting_state")
def remoting_state_fixture() -> ServerState:
    return ServerState()


@pytest.fixture(name="remoting_server")
async def remoting_server_fixture(remoting_state: ServerState) -> AsyncIterator[RemotingServer]:
    server = RemotingServer(
        processors=build_processors(remoting_state),
        config=RemotingServerConfig(shutdown_timeout_seconds=2.0),
    )
    remoting_state.server = server
    await server.start()
    yield server
    remoting_state.gate.set()
    await server.shutdown()


@pytest.fixture(name="remoting_client")
async def remoting_client_fixture() -> AsyncIterator[RemotingClient]:
    client = RemotingClient()
    yield client
    await client.shutdown()


def feed(protocol: asyncio.BufferedProtocol, data: bytes, read_size: int | None = None) -> None:
    """Give a buffered protocol ``data`` as its transport would: into the room it offers, ``read_size`` bytes
    a read at most (all the room by default)."""
    view = memoryview(data)
    while view:
        room = memoryview(protocol.get_buffer(-1))
        assert len(room) > 0, "get_buffer offered no room"
        taken = min(len(room), len(view), read_size or len(view))
        room[:taken] = view[:taken]
        view = view[taken:]
        protocol.buffer_updated(taken)
