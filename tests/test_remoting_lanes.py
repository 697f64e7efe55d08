"""Request lanes on a real server over loopback: what waits in a lane never holds up what does not, and a
request that cannot be served in time gets Java's SYSTEM_BUSY answers. No test here depends on speed: the
lane is blocked on purpose with a gate, and waits are made long by the test, never measured."""
from __future__ import annotations

import asyncio
import re

import pytest

from rocketmq_py.errors import RemotingSendRequestError
from rocketmq_py.remoting import Lane, RemotingClient, RemotingServer, RequestContext, create_request
from rocketmq_py.remoting.command import RemotingCommand, RemotingSysResponseCode, create_response
from rocketmq_py.remoting.lanes import OVERLOAD_REMARK

from support.cluster import wait_until
from support.remoting import ECHO, ServerState, build_processors

LANED = 300  # waits at the gate like GATED, but in the lane
LANED_RECORDED = 301  # recorded in state.recorded, in the same lane


async def serve(state: ServerState, lane: Lane):
    table = build_processors(state)

    async def on_laned_recorded(ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        state.recorded.append(request)
        state.recorded_event.set()
        return create_response(request, 0, request.remark)

    async def on_laned(ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        state.gated_running += 1
        state.gated_started.set()
        try:
            await state.gate.wait()
        finally:
            state.gated_running -= 1
        return create_response(request, 0, request.remark)

    table.register(LANED, on_laned, lane=lane)
    table.register(LANED_RECORDED, on_laned_recorded, lane=lane)
    server = RemotingServer(processors=table)
    await server.start()
    return server


@pytest.fixture
async def client():
    remoting = RemotingClient()
    yield remoting
    await remoting.shutdown()


async def test_requests_outside_the_lane_are_answered_while_it_is_blocked(client):
    state = ServerState()
    lane = Lane("bulk", capacity=10_000, workers=4)
    server = await serve(state, lane)
    try:
        queued = [asyncio.ensure_future(client.invoke(server.address, create_request(LANED, remark=str(i)), 60_000))
                  for i in range(200)]
        await wait_until(lambda: state.gated_running == 4 and lane.size == 196, timeout=30.0)
        answer = await client.invoke(server.address, create_request(ECHO, remark="admin"), 60_000)
        assert answer.remark == "admin"
        assert not any(future.done() for future in queued)
        state.gate.set()
        answers = await asyncio.gather(*queued)
        assert [a.remark for a in answers] == [str(i) for i in range(200)]
        assert lane.refused == {"overload": 0, "timeout": 0, "pcbusy": 0}
    finally:
        state.gate.set()
        await server.shutdown()


async def test_a_request_that_waited_too_long_gets_system_busy(client):
    state = ServerState()
    lane = Lane("bulk", capacity=100, workers=1, max_wait_ms=50)
    server = await serve(state, lane)
    try:
        first = asyncio.ensure_future(client.invoke(server.address, create_request(LANED, remark="first"), 60_000))
        await wait_until(lambda: state.gated_running == 1, timeout=30.0)
        late = [asyncio.ensure_future(client.invoke(server.address, create_request(LANED), 60_000))
                for _ in range(3)]
        # The sweep answers them in the queue, as Java's BrokerFastFailure does: the worker is still held.
        answers = await asyncio.gather(*late)
        assert state.gated_running == 1 and not first.done()
        for answer in answers:
            assert answer.code == RemotingSysResponseCode.SYSTEM_BUSY
            assert re.fullmatch(r"\[TIMEOUT_CLEAN_QUEUE\]broker busy, start flow control for a while, "
                                r"period in queue: \d+ms, size of queue: [0-2]", answer.remark)
            assert int(re.search(r"queue: (\d+)ms", answer.remark).group(1)) >= 50
        assert lane.refused["timeout"] == 3
        state.gate.set()
        assert (await first).code == 0
    finally:
        state.gate.set()
        await server.shutdown()


async def test_a_full_lane_answers_overload_at_once(client):
    state = ServerState()
    lane = Lane("bulk", capacity=2, workers=1)
    server = await serve(state, lane)
    try:
        held = [asyncio.ensure_future(client.invoke(server.address, create_request(LANED), 60_000))]
        await wait_until(lambda: state.gated_running == 1, timeout=30.0)
        held += [asyncio.ensure_future(client.invoke(server.address, create_request(LANED), 60_000))
                 for _ in range(2)]
        await wait_until(lambda: lane.size == 2, timeout=30.0)
        refused = await client.invoke(server.address, create_request(LANED), 60_000)
        assert (refused.code, refused.remark) == (RemotingSysResponseCode.SYSTEM_BUSY, OVERLOAD_REMARK)
        state.gate.set()
        assert [a.code for a in await asyncio.gather(*held)] == [0, 0, 0]
    finally:
        state.gate.set()
        await server.shutdown()


async def test_queued_requests_get_pcbusy_while_the_lane_is_busy(client):
    state = ServerState()
    busy = False
    lane = Lane("bulk", capacity=100, workers=1, busy=lambda: busy)
    server = await serve(state, lane)
    try:
        first = asyncio.ensure_future(client.invoke(server.address, create_request(LANED, remark="first"), 60_000))
        await wait_until(lambda: state.gated_running == 1, timeout=30.0)
        queued = [asyncio.ensure_future(client.invoke(server.address, create_request(LANED), 60_000))
                  for _ in range(3)]
        await wait_until(lambda: lane.size == 3, timeout=30.0)
        busy = True
        answers = await asyncio.gather(*queued)  # answered by the sweep: the worker is still held
        assert not first.done()
        sizes = []
        for answer in answers:
            assert answer.code == RemotingSysResponseCode.SYSTEM_BUSY
            found = re.fullmatch(r"\[PCBUSY_CLEAN_QUEUE\]broker busy, start flow control for a while, "
                                 r"period in queue: \d+ms, size of queue: (\d)", answer.remark)
            sizes.append(int(found.group(1)))
        assert sorted(sizes) == [0, 1, 2] and lane.refused["pcbusy"] == 3
        busy = False
        state.gate.set()
        assert (await first).code == 0
        assert (await client.invoke(server.address, create_request(LANED), 60_000)).code == 0
    finally:
        state.gate.set()
        await server.shutdown()


async def test_a_lane_serves_in_arrival_order_and_shutdown_drains_it(client):
    state = ServerState()
    lane = Lane("bulk", capacity=10_000, workers=1, burst=3)
    server = await serve(state, lane)
    state.gate.set()
    try:
        answers = await asyncio.gather(*(client.invoke(server.address, create_request(LANED, remark=str(i)), 60_000)
                                         for i in range(50)))
        assert [a.remark for a in answers] == [str(i) for i in range(50)]
    finally:
        await server.shutdown()
    assert lane.size == 0


async def test_requests_queued_before_their_connection_closed_are_still_served():
    """Java's broker runs every request it has read, connected sender or not: a oneway send that a producer
    writes just before it closes its connection (the Go client does, at shutdown) is a message to store."""
    state = ServerState()
    lane = Lane("bulk", capacity=100, workers=1)
    server = await serve(state, lane)
    sender = RemotingClient()
    try:
        blocked = asyncio.ensure_future(sender.invoke(server.address, create_request(LANED), 60_000))
        await wait_until(lambda: state.gated_running == 1, timeout=30.0)
        for i in range(5):
            await sender.invoke_oneway(server.address, create_request(LANED_RECORDED, remark=str(i)), 60_000)
        await wait_until(lambda: lane.size == 5, timeout=30.0)
        await sender.shutdown()
        with pytest.raises(RemotingSendRequestError):
            await blocked  # its answer has nowhere to go
        await wait_until(lambda: not server.connections, timeout=30.0)
        state.gate.set()
        await wait_until(lambda: len(state.recorded) == 5, timeout=30.0)
        assert [r.remark for r in state.recorded] == [str(i) for i in range(5)]
    finally:
        state.gate.set()
        await sender.shutdown()
        await server.shutdown()


async def test_requests_that_suspend_do_not_hold_up_the_next_ones():
    """Every send of a DLedger leader suspends (it waits for a majority): the lane starts the next request at
    once, ``burst`` in a pass of the loop, as Java's send thread takes its next task once a put returned its
    future. A lane that took one such request every two passes kept sends queued past
    waitTimeMillsInSendQueue on a busy leader, with its workers idle. Counted in passes of the loop, not time."""
    lane = Lane("bulk", capacity=100, workers=64, burst=16)
    gate = asyncio.Event()
    started: list[RemotingCommand] = []

    def serve(connection, request):
        async def wait_for_majority() -> None:
            started.append(request)
            await gate.wait()
        return wait_for_majority()

    requests = [create_request(LANED, remark=str(i)) for i in range(40)]
    for request in requests:
        lane.submit(serve, None, request)  # type: ignore[arg-type]
    passes = 0
    while len(started) < len(requests):
        await asyncio.sleep(0)
        passes += 1
        assert passes <= 8, f"{len(started)} of {len(requests)} requests started in {passes} passes"
    assert started == requests
    gate.set()
    assert await lane.drain(timeout_s=None)
    lane.close()


async def test_a_request_whose_serving_raises_does_not_stop_the_lane():
    lane = Lane("bulk", capacity=100, workers=4)
    served: list[RemotingCommand] = []
    taken = asyncio.Event()

    def serve(connection, request):
        if request.remark == "bad":
            raise RuntimeError("a bug in a fast path")
        served.append(request)
        taken.set()
        return None

    lane.submit(serve, None, create_request(LANED, remark="bad"))  # type: ignore[arg-type]
    lane.submit(serve, None, create_request(LANED, remark="good"))  # type: ignore[arg-type]
    await asyncio.wait_for(taken.wait(), 30.0)
    assert [r.remark for r in served] == ["good"]
    lane.close()


async def test_lane_settings_are_checked():
    with pytest.raises(ValueError):
        Lane("bad", capacity=0)
