"""The blocking facade: a background event loop thread, called from plain threads."""
from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Iterator

import pytest
from support.remoting import ECHO, GATED, ServerState, build_processors

from rocketmq_py.errors import RemotingTimeoutError
from rocketmq_py.remoting import (
    BackgroundLoop,
    BlockingRemotingClient,
    RemotingCommand,
    RemotingServer,
    create_request,
    new_event_loop,
    uvloop_enabled,
)


class CustomError(Exception):
    pass


@pytest.fixture
def background() -> Iterator[BackgroundLoop]:
    loop = BackgroundLoop()
    yield loop
    loop.close()


@pytest.fixture
def server_on_background(background: BackgroundLoop) -> Iterator[tuple[RemotingServer, ServerState]]:
    async def start() -> tuple[RemotingServer, ServerState]:
        state = ServerState()
        srv = RemotingServer(processors=build_processors(state))
        state.server = srv
        await srv.start()
        return srv, state

    srv, state = background.run(start())
    yield srv, state
    background.loop.call_soon_threadsafe(state.gate.set)
    background.run(srv.shutdown())


def test_run_returns_the_result(background: BackgroundLoop) -> None:
    async def add(a: int, b: int) -> int:
        await asyncio.sleep(0)
        return a + b

    assert background.run(add(2, 3)) == 5
    assert background.submit(add(1, 1)).result(5) == 2


def test_run_raises_the_original_exception(background: BackgroundLoop) -> None:
    async def fail() -> None:
        raise CustomError("from the loop")

    with pytest.raises(CustomError, match="from the loop"):
        background.run(fail())
    with pytest.raises(CustomError):
        background.submit(fail()).result(5)


def test_run_timeout_cancels_the_coroutine(background: BackgroundLoop) -> None:
    cancelled = threading.Event()

    async def forever() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with pytest.raises(TimeoutError):
        background.run(forever(), timeout=0.05)
    assert cancelled.wait(5)


def test_timeout_error_from_the_coroutine_is_not_mistaken_for_the_wait(background: BackgroundLoop) -> None:
    async def own_timeout() -> None:
        raise TimeoutError("mine")

    with pytest.raises(TimeoutError, match="mine"):
        background.run(own_timeout(), timeout=5)


def test_blocking_call_from_the_loop_thread_is_refused(background: BackgroundLoop) -> None:
    async def nested() -> int:
        return 1

    async def calls_blocking() -> str:
        with pytest.raises(RuntimeError, match="deadlock"):
            background.run(nested())
        with pytest.raises(RuntimeError):
            background.close()
        return "refused"

    assert background.run(calls_blocking(), timeout=5) == "refused"


def test_close_cancels_pending_work_and_refuses_more() -> None:
    loop = BackgroundLoop()
    pending = loop.submit(asyncio.sleep(3600))
    loop.close()
    assert pending.cancelled()
    with pytest.raises(RuntimeError):
        loop.submit(asyncio.sleep(0))
    loop.close()


def test_uvloop_is_used_when_present(monkeypatch: pytest.MonkeyPatch) -> None:
    uvloop = pytest.importorskip("uvloop")
    monkeypatch.delenv("ROCKETMQ_PY_NO_UVLOOP", raising=False)
    assert uvloop_enabled()
    with BackgroundLoop() as loop:
        assert isinstance(loop.loop, uvloop.Loop)
    monkeypatch.setenv("ROCKETMQ_PY_NO_UVLOOP", "1")
    assert not uvloop_enabled()
    plain = new_event_loop()
    try:
        assert not isinstance(plain, uvloop.Loop)
    finally:
        plain.close()


def test_blocking_client_from_plain_threads(server_on_background: tuple[RemotingServer, ServerState]) -> None:
    srv, _ = server_on_background
    with BlockingRemotingClient() as remoting_client:
        def call(i: int) -> RemotingCommand:
            return remoting_client.invoke(srv.address, create_request(ECHO, {"i": str(i)}), 5000)

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            responses = list(pool.map(call, range(50)))
        assert [r.ext_fields for r in responses] == [{"i": str(i)} for i in range(50)]

        remoting_client.invoke_oneway(srv.address, create_request(ECHO), 5000)

        outcome: concurrent.futures.Future[tuple[object, RemotingCommand, str]] = concurrent.futures.Future()

        def on_outcome(result: object) -> None:
            # Callbacks run on the callback pool, so they may block and even call the client.
            again = remoting_client.invoke(srv.address, create_request(ECHO, {"from": "callback"}), 5000)
            outcome.set_result((result, again, threading.current_thread().name))

        remoting_client.invoke_callback(srv.address, create_request(ECHO, {"k": "v"}), 5000, on_outcome)
        first, again, thread_name = outcome.result(5)
        assert isinstance(first, RemotingCommand) and first.ext_fields == {"k": "v"}
        assert again.ext_fields == {"from": "callback"}
        assert thread_name.startswith("rocketmq-py-callback")


def test_blocking_client_raises_typed_errors(server_on_background: tuple[RemotingServer, ServerState]) -> None:
    srv, _ = server_on_background
    with BlockingRemotingClient() as remoting_client, pytest.raises(RemotingTimeoutError):
        remoting_client.invoke(srv.address, create_request(GATED), 100)


def test_blocking_client_refuses_the_loop_thread(server_on_background: tuple[RemotingServer, ServerState]) -> None:
    srv, _ = server_on_background
    with BlockingRemotingClient() as remoting_client:
        async def inside_the_loop() -> None:
            remoting_client.invoke(srv.address, create_request(ECHO), 1000)

        with pytest.raises(RuntimeError, match="deadlock"):
            remoting_client.background_loop.run(inside_the_loop())


def test_blocking_client_on_a_shared_loop(
    background: BackgroundLoop, server_on_background: tuple[RemotingServer, ServerState],
) -> None:
    srv, _ = server_on_background
    remoting_client = BlockingRemotingClient(loop=background)
    assert remoting_client.invoke(srv.address, create_request(ECHO), 5000).code == 0
    remoting_client.close()
    assert not background.is_closed
