"""The core scenarios again on uvloop, whose transports differ from asyncio's (no shared base class)."""
from __future__ import annotations

import asyncio
import struct

import pytest
from support.remoting import CALL_BACK, CLIENT_CHECK, DROP, ECHO, GATED, UNKNOWN, ServerState, build_processors

from rocketmq_py import codec
from rocketmq_py.errors import RemotingSendRequestError, RemotingTimeoutError
from rocketmq_py.remoting import (
    ProcessorTable,
    RemotingClient,
    RemotingCommand,
    RemotingServer,
    RequestContext,
    create_request,
    create_response,
)

uvloop = pytest.importorskip("uvloop")


async def scenarios() -> None:
    state = ServerState()
    server = RemotingServer(processors=build_processors(state))
    state.server = server
    await server.start()

    async def check(ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        return create_response(request, 0, "ok")

    client_processors = ProcessorTable()
    client_processors.register(CLIENT_CHECK, check)
    client = RemotingClient(client_processors)
    try:
        for serialize_type in (codec.SERIALIZE_JSON, codec.SERIALIZE_ROCKETMQ):
            request = create_request(ECHO, {"k": "v"}, b"\x00body", remark="r", serialize_type=serialize_type)
            response = await client.invoke(server.address, request, 3000)
            assert (response.ext_fields, response.body, response.remark) == ({"k": "v"}, b"\x00body", "r")
            assert response.serialize_type == serialize_type

        requests = [create_request(ECHO, {"i": str(i)}) for i in range(200)]
        responses = await asyncio.gather(*(client.invoke(server.address, r, 5000) for r in requests))
        assert all(a.opaque == b.opaque and a.ext_fields == b.ext_fields for a, b in zip(requests, responses))

        assert (await client.invoke(server.address, create_request(UNKNOWN), 3000)).code == 3
        assert (await client.invoke(server.address, create_request(CALL_BACK), 3000)).remark == "client said ok"

        try:
            await client.invoke(server.address, create_request(GATED), 50)
            raise AssertionError("expected a timeout")
        except RemotingTimeoutError:
            pass
        state.gate.set()

        outcome: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        await client.invoke_callback(server.address, create_request(ECHO), 3000, outcome.set_result)
        assert isinstance(await asyncio.wait_for(outcome, 5), RemotingCommand)
        await client.invoke_oneway(server.address, create_request(ECHO), 3000)

        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(struct.pack(">i", -5))
        assert await asyncio.wait_for(reader.read(), 5) == b""
        writer.close()

        try:
            await asyncio.wait_for(client.invoke(server.address, create_request(DROP), 60000), 5)
            raise AssertionError("expected the dropped connection to fail the request")
        except RemotingSendRequestError:
            pass
        assert (await client.invoke(server.address, create_request(ECHO), 3000)).code == 0

        big = create_request(ECHO, body=b"x" * (8 * 1024 * 1024))
        assert (await client.invoke(server.address, big, 10000)).body == big.body
    finally:
        await client.shutdown()
        await server.shutdown()


def test_core_scenarios_on_uvloop() -> None:
    loop = uvloop.new_event_loop()
    try:
        loop.run_until_complete(asyncio.wait_for(scenarios(), 30))
    finally:
        loop.close()
