"""Client and server over loopback: round trips, errors, timeouts, server-to-client requests."""
from __future__ import annotations

import asyncio
import logging

import pytest
from support.ports import free_port
from support.remoting import (  # noqa: F401  (the fixtures are found by pytest)
    CALL_BACK,
    CLIENT_CHECK,
    DROP,
    ECHO,
    FAIL,
    GATED,
    RECORD,
    SHUFFLE,
    UNKNOWN,
    ServerState,
    build_processors,
    remoting_client_fixture,
    remoting_server_fixture,
    remoting_state_fixture,
)

from rocketmq_py import codec
from rocketmq_py.errors import (
    RemotingConnectError,
    RemotingError,
    RemotingSendRequestError,
    RemotingTimeoutError,
)
from rocketmq_py.remoting import (
    ProcessorTable,
    RemotingClient,
    RemotingCommand,
    RemotingServer,
    RequestContext,
    create_request,
    create_response,
)

SERIALIZATIONS = pytest.mark.parametrize(
    "serialize_type", [codec.SERIALIZE_JSON, codec.SERIALIZE_ROCKETMQ], ids=["JSON", "ROCKETMQ"],
)

EXT_FIELDS = {"topic": "TopicTest", "queueId": "3", "properties": "KEYS\x01k1\x02TAGS\x01tagA\x02", "ünï": "cödé"}
BODY = bytes(range(256)) * 4
REMARK = "a remark with ünïcode and \"quotes\""


def assert_echoed(response: RemotingCommand, request: RemotingCommand) -> None:
    assert response.is_response
    assert response.code == 0
    assert response.opaque == request.opaque
    assert response.remark == request.remark
    assert response.ext_fields == request.ext_fields
    assert response.body == request.body
    assert response.serialize_type == request.serialize_type


@SERIALIZATIONS
async def test_invoke_round_trip(
    remoting_server: RemotingServer, remoting_client: RemotingClient, serialize_type: int,
) -> None:
    request = create_request(ECHO, dict(EXT_FIELDS), BODY, remark=REMARK, serialize_type=serialize_type)
    response = await remoting_client.invoke(remoting_server.address, request, 3000)
    assert_echoed(response, request)


@SERIALIZATIONS
async def test_invoke_callback_round_trip(
    remoting_server: RemotingServer, remoting_client: RemotingClient, serialize_type: int,
) -> None:
    outcome: asyncio.Future[object] = asyncio.get_running_loop().create_future()
    request = create_request(ECHO, dict(EXT_FIELDS), BODY, remark=REMARK, serialize_type=serialize_type)
    await remoting_client.invoke_callback(remoting_server.address, request, 3000, outcome.set_result)
    response = await asyncio.wait_for(outcome, 5)
    assert isinstance(response, RemotingCommand)
    assert_echoed(response, request)


async def test_coroutine_callback_is_awaited(remoting_server: RemotingServer, remoting_client: RemotingClient) -> None:
    received: asyncio.Queue[object] = asyncio.Queue()

    async def on_outcome(outcome: object) -> None:
        await received.put(outcome)

    request = create_request(ECHO, {"k": "v"})
    await remoting_client.invoke_callback(remoting_server.address, request, 3000, on_outcome)
    response = await asyncio.wait_for(received.get(), 5)
    assert isinstance(response, RemotingCommand) and response.ext_fields == {"k": "v"}


@SERIALIZATIONS
async def test_oneway_reaches_the_processor(
    remoting_server: RemotingServer, remoting_state: ServerState, remoting_client: RemotingClient, serialize_type: int,
) -> None:
    request = create_request(RECORD, dict(EXT_FIELDS), BODY, remark=REMARK, serialize_type=serialize_type)
    await remoting_client.invoke_oneway(remoting_server.address, request, 3000)
    await asyncio.wait_for(remoting_state.recorded_event.wait(), 5)
    (received,) = remoting_state.recorded
    assert received.is_oneway
    assert (received.remark, received.ext_fields, received.body) == (REMARK, EXT_FIELDS, BODY)
    assert received.serialize_type == serialize_type


async def test_empty_command_round_trip(remoting_server: RemotingServer, remoting_client: RemotingClient) -> None:
    request = create_request(ECHO)
    response = await remoting_client.invoke(remoting_server.address, request, 3000)
    assert (response.remark, response.ext_fields, response.body) == (None, None, None)


async def test_200_concurrent_invokes_match_by_opaque(
    remoting_server: RemotingServer, remoting_client: RemotingClient,
) -> None:
    requests = [
        create_request(SHUFFLE, {"i": str(i), "delay_ms": str((i * 7) % 11)}, str(i).encode()) for i in range(200)
    ]
    responses = await asyncio.gather(*(remoting_client.invoke(remoting_server.address, r, 10000) for r in requests))
    for request, response in zip(requests, responses):
        assert response.opaque == request.opaque
        assert response.ext_fields == request.ext_fields
        assert response.body == request.body
    assert len(remoting_server.connections) == 1


@SERIALIZATIONS
async def test_unknown_request_code(
    remoting_server: RemotingServer, remoting_client: RemotingClient, serialize_type: int,
) -> None:
    request = create_request(UNKNOWN, serialize_type=serialize_type)
    response = await remoting_client.invoke(remoting_server.address, request, 3000)
    assert response.code == 3
    assert response.remark == f" request type {UNKNOWN} not supported"


@SERIALIZATIONS
async def test_processor_exception_answers_system_error(
    remoting_server: RemotingServer, remoting_client: RemotingClient, serialize_type: int,
) -> None:
    request = create_request(FAIL, remark="the detail", serialize_type=serialize_type)
    response = await remoting_client.invoke(remoting_server.address, request, 3000)
    assert response.code == 1
    assert response.remark == "ValueError: boom: the detail"


async def test_timeout_then_the_connection_still_works(
    remoting_server: RemotingServer, remoting_state: ServerState, remoting_client: RemotingClient,
) -> None:
    slow = create_request(GATED)
    with pytest.raises(RemotingTimeoutError) as raised:
        await remoting_client.invoke(remoting_server.address, slow, 100)
    assert raised.value.opaque == slow.opaque
    connection = remoting_client.connection(remoting_server.address)
    assert connection is not None and connection.pending_requests == 0
    remoting_state.gate.set()  # the late response arrives and is dropped
    response = await remoting_client.invoke(remoting_server.address, create_request(ECHO, {"after": "timeout"}), 3000)
    assert response.ext_fields == {"after": "timeout"}
    assert remoting_client.connection(remoting_server.address) is connection


async def test_callback_gets_the_timeout(remoting_server: RemotingServer, remoting_client: RemotingClient) -> None:
    outcome: asyncio.Future[object] = asyncio.get_running_loop().create_future()
    await remoting_client.invoke_callback(remoting_server.address, create_request(GATED), 100, outcome.set_result)
    error = await asyncio.wait_for(outcome, 5)
    assert isinstance(error, RemotingTimeoutError)


async def test_connection_lost_fails_pending_invokes_promptly(
    remoting_server: RemotingServer, remoting_state: ServerState, remoting_client: RemotingClient,
) -> None:
    waiting = asyncio.ensure_future(remoting_client.invoke(remoting_server.address, create_request(GATED), 60000))
    outcome: asyncio.Future[object] = asyncio.get_running_loop().create_future()
    await asyncio.wait_for(remoting_state.gated_started.wait(), 5)
    await remoting_client.invoke_callback(remoting_server.address, create_request(GATED), 60000, outcome.set_result)
    with pytest.raises(RemotingSendRequestError):
        await asyncio.wait_for(remoting_client.invoke(remoting_server.address, create_request(DROP), 60000), 5)
    with pytest.raises(RemotingSendRequestError):
        await asyncio.wait_for(waiting, 5)
    assert isinstance(await asyncio.wait_for(outcome, 5), RemotingSendRequestError)
    response = await remoting_client.invoke(remoting_server.address, create_request(ECHO), 3000)
    assert response.code == 0


async def test_server_sends_requests_to_the_client(remoting_server: RemotingServer) -> None:
    seen: list[str] = []

    async def check(ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        seen.append(ctx.remote_address)
        return create_response(request, 0, f"fine ({(request.ext_fields or {})['q']})")

    client_processors = ProcessorTable()
    client_processors.register(CLIENT_CHECK, check)
    async with RemotingClient(client_processors) as remoting_client:
        response = await remoting_client.invoke(remoting_server.address, create_request(CALL_BACK), 3000)
        assert response.remark == "client said fine (state?)"
        assert seen == [remoting_server.address]

        (connection,) = remoting_server.connections
        direct = await remoting_server.invoke(connection, create_request(CLIENT_CHECK, {"q": "direct"}), 3000)
        assert direct.remark == "fine (direct)"
        by_address = await remoting_server.invoke(connection.remote_address, create_request(UNKNOWN), 3000)
        assert by_address.code == 3


async def test_reconnect_after_the_server_restarts_on_the_same_port(remoting_state: ServerState) -> None:
    first = RemotingServer(processors=build_processors(remoting_state))
    await first.start()
    port = first.port
    async with RemotingClient() as remoting_client:
        addr = f"127.0.0.1:{port}"
        assert (await remoting_client.invoke(addr, create_request(ECHO), 3000)).code == 0
        old = remoting_client.connection(addr)
        assert old is not None
        await first.shutdown()
        assert await old.wait_closed(5)
        with pytest.raises(RemotingConnectError):
            await remoting_client.invoke(addr, create_request(ECHO), 3000)

        second = RemotingServer(port=port, processors=build_processors(remoting_state))
        await second.start()
        try:
            assert (await remoting_client.invoke(addr, create_request(ECHO), 3000)).code == 0
            assert remoting_client.connection(addr) is not old
        finally:
            await second.shutdown()


async def test_concurrent_callers_share_one_connect(
    remoting_server: RemotingServer, remoting_client: RemotingClient,
) -> None:
    connections = await asyncio.gather(*(remoting_client.get_connection(remoting_server.address) for _ in range(20)))
    assert len({id(c) for c in connections}) == 1
    await asyncio.wait_for(_until(lambda: len(remoting_server.connections) == 1), 5)


async def test_a_caller_cancelled_as_its_connect_ends_stays_cancelled(remoting_server: RemotingServer) -> None:
    """The cancellation of a caller waiting for a connect is not lost when the connect ends in the same loop
    pass (asyncio.wait_for before Python 3.12 returned the connection instead)."""
    async with RemotingClient() as remoting_client:
        caller = asyncio.ensure_future(remoting_client.get_connection(remoting_server.address))
        await asyncio.sleep(0)
        attempt = remoting_client._connecting[remoting_server.address]
        attempt.add_done_callback(lambda _: caller.cancel())
        with pytest.raises(asyncio.CancelledError):
            await caller
        assert not attempt.cancelled(), "the attempt itself went on"
        assert remoting_client.connection(remoting_server.address) is not None


async def test_a_client_shut_down_while_connecting_raises_connect_error(remoting_server: RemotingServer) -> None:
    remoting_client = RemotingClient()
    caller = asyncio.ensure_future(remoting_client.get_connection(remoting_server.address))
    await asyncio.sleep(0)
    await remoting_client.shutdown()
    with pytest.raises(RemotingConnectError, match="shut down while connecting"):
        await caller


async def test_a_late_response_is_a_warning_unless_its_caller_gave_up(
    remoting_server: RemotingServer, remoting_client: RemotingClient, remoting_state: ServerState, caplog,
) -> None:
    caplog.set_level(logging.DEBUG, logger="rocketmq_py.remoting.protocol")
    given_up = create_request(GATED)
    waiting = asyncio.ensure_future(remoting_client.invoke(remoting_server.address, given_up, 60000))
    await asyncio.wait_for(remoting_state.gated_started.wait(), 5)
    waiting.cancel()  # as a pull is at shutdown or after a seek
    with pytest.raises(asyncio.CancelledError):
        await waiting
    remoting_state.gate.set()

    def logged(opaque: int) -> list:
        return [r for r in caplog.records if f"opaque={opaque} " in r.getMessage()]

    await asyncio.wait_for(_until(lambda: logged(given_up.opaque)), 5)
    [record] = logged(given_up.opaque)
    assert record.levelno == logging.DEBUG and "gave up" in record.getMessage()

    connection = remoting_client.connection(remoting_server.address)
    unknown = create_response(create_request(ECHO), 0)
    connection.data_received(codec.encode_command(unknown))
    [record] = logged(unknown.opaque)
    assert record.levelno == logging.WARNING and "matches no waiting request" in record.getMessage()


async def test_connect_error_is_typed(unused_port: int) -> None:
    async with RemotingClient() as remoting_client:
        with pytest.raises(RemotingConnectError) as raised:
            await remoting_client.invoke(f"127.0.0.1:{unused_port}", create_request(ECHO), 3000)
        assert raised.value.addr == f"127.0.0.1:{unused_port}"
        with pytest.raises(RemotingConnectError):
            await remoting_client.invoke("no-port-here", create_request(ECHO), 3000)


async def test_client_shutdown_fails_waiting_requests(
    remoting_server: RemotingServer, remoting_state: ServerState,
) -> None:
    remoting_client = RemotingClient()
    waiting = asyncio.ensure_future(remoting_client.invoke(remoting_server.address, create_request(GATED), 60000))
    await asyncio.wait_for(remoting_state.gated_started.wait(), 5)
    await remoting_client.shutdown()
    with pytest.raises(RemotingSendRequestError):
        await asyncio.wait_for(waiting, 5)
    with pytest.raises(RemotingError):
        await remoting_client.invoke(remoting_server.address, create_request(ECHO), 3000)


async def _until(condition: object) -> None:
    assert callable(condition)
    while not condition():
        await asyncio.sleep(0.01)


@pytest.fixture
def unused_port() -> int:
    return free_port()
