"""Limits on async and oneway calls in flight (Java's semaphores) and the permits behind them."""
from __future__ import annotations

import asyncio

import pytest
from support.remoting import (  # noqa: F401  (the fixtures are found by pytest)
    ECHO,
    GATED,
    ServerState,
    remoting_server_fixture,
    remoting_state_fixture,
)

from rocketmq_py.errors import RemotingTooMuchRequestError
from rocketmq_py.remoting import RemotingClient, RemotingClientConfig, RemotingCommand, RemotingServer, create_request
from rocketmq_py.remoting.invoker import Invoker, Permits


async def test_async_limit_raises_too_much_request(
    remoting_server: RemotingServer, remoting_state: ServerState,
) -> None:
    outcomes: list[object] = []
    config = RemotingClientConfig(client_async_semaphore_value=2)
    async with RemotingClient(config=config) as remoting_client:
        addr = remoting_server.address
        for _ in range(2):
            await remoting_client.invoke_callback(addr, create_request(GATED), 10000, outcomes.append)
        with pytest.raises(RemotingTooMuchRequestError):
            await remoting_client.invoke_callback(remoting_server.address, create_request(ECHO), 50, outcomes.append)

        remoting_state.gate.set()
        while len(outcomes) < 2:
            await asyncio.sleep(0.01)
        assert all(isinstance(o, RemotingCommand) and o.code == 0 for o in outcomes)

        done: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        await remoting_client.invoke_callback(remoting_server.address, create_request(ECHO), 3000, done.set_result)
        assert isinstance(await asyncio.wait_for(done, 5), RemotingCommand)


async def test_waiting_caller_gets_the_permit_a_response_frees(
    remoting_server: RemotingServer, remoting_state: ServerState,
) -> None:
    outcomes: list[object] = []
    config = RemotingClientConfig(client_async_semaphore_value=1)
    async with RemotingClient(config=config) as remoting_client:
        await remoting_client.invoke_callback(remoting_server.address, create_request(GATED), 10000, outcomes.append)
        waiting = asyncio.ensure_future(
            remoting_client.invoke_callback(remoting_server.address, create_request(ECHO), 10000, outcomes.append)
        )
        await asyncio.sleep(0.05)
        assert not waiting.done()
        remoting_state.gate.set()
        await asyncio.wait_for(waiting, 5)
        while len(outcomes) < 2:
            await asyncio.sleep(0.01)


class _BlockedConnection:
    """Stands in for a connection whose writes do not complete until released."""

    remote_address = "10.0.0.1:10911"

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.sent: list[RemotingCommand] = []

    async def send(self, command: RemotingCommand) -> None:
        self.sent.append(command)
        await self.release.wait()


async def test_oneway_limit_counts_unfinished_writes() -> None:
    invoker = Invoker(async_permits=10, oneway_permits=1)
    connection = _BlockedConnection()
    first = asyncio.ensure_future(
        invoker.invoke_oneway(connection, create_request(ECHO), 1000)  # type: ignore[arg-type]
    )
    await asyncio.sleep(0)
    with pytest.raises(RemotingTooMuchRequestError):
        await invoker.invoke_oneway(connection, create_request(ECHO), 50)  # type: ignore[arg-type]
    connection.release.set()
    await first
    await invoker.invoke_oneway(connection, create_request(ECHO), 50)  # type: ignore[arg-type]
    assert [c.is_oneway for c in connection.sent] == [True, True]
    assert invoker.oneway_permits.available == 1


async def test_permits_time_out_without_losing_one() -> None:
    permits = Permits(1)
    assert await permits.acquire(0)
    assert not await permits.acquire(0)
    assert not await permits.acquire(0.02)
    permits.release()
    assert permits.available == 1
    assert await permits.acquire(0)


async def test_permits_are_handed_over_in_order() -> None:
    permits = Permits(1)
    assert await permits.acquire(0)
    order: list[int] = []

    async def take(n: int) -> None:
        assert await permits.acquire(5)
        order.append(n)

    tasks = [asyncio.ensure_future(take(n)) for n in range(3)]
    await asyncio.sleep(0)
    for _ in range(3):
        permits.release()
        await asyncio.sleep(0)
    await asyncio.gather(*tasks)
    assert order == [0, 1, 2]
    assert permits.available == 0


async def test_cancelled_waiter_gives_back_a_granted_permit() -> None:
    permits = Permits(1)
    assert await permits.acquire(0)
    waiter = asyncio.ensure_future(permits.acquire(5))
    await asyncio.sleep(0)
    permits.release()  # granted to the waiter, which is cancelled before it resumes
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert permits.available == 1


def test_permit_limit_must_be_positive() -> None:
    with pytest.raises(ValueError):
        Permits(0)
