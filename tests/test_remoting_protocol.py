"""RemotingConnection driven by hand through a fake transport: no sockets, every step explicit."""
from __future__ import annotations

import asyncio
import logging
import struct
from typing import Any

import pytest

from rocketmq_py import codec
from rocketmq_py.errors import RemotingSendRequestError, RemotingTimeoutError
from rocketmq_py.remoting import (
    ConnectionListener,
    ProcessorTable,
    RemotingCommand,
    RemotingConnection,
    RequestContext,
    RequestDispatcher,
    create_request,
    create_response,
)
from rocketmq_py.remoting.writes import WRITELINES_KEEPS_FLOW_CONTROL


class FakeTransport(asyncio.Transport):
    def __init__(self, protocol: RemotingConnection) -> None:
        super().__init__()
        self.protocol = protocol
        self.written = bytearray()
        self.closing = False
        self.reading = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("10.0.0.7", 40001), "sockname": ("10.0.0.1", 10911)}.get(name, default)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += data

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        if not self.closing:
            self.closing = True
            asyncio.get_running_loop().call_soon(self.protocol.connection_lost, None)

    def abort(self) -> None:
        self.close()

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def commands(self) -> list[RemotingCommand]:
        return codec.FrameDecoder().feed(bytes(self.written))


class Events(ConnectionListener):
    def __init__(self) -> None:
        self.seen: list[str] = []

    def on_connect(self, connection: RemotingConnection) -> None:
        self.seen.append("connect")

    def on_close(self, connection: RemotingConnection) -> None:
        self.seen.append("close")

    def on_exception(self, connection: RemotingConnection, error: BaseException) -> None:
        self.seen.append(f"exception {type(error).__name__}")


def connect(
    dispatcher: RequestDispatcher | None = None, events: Events | None = None, **options: Any,
) -> tuple[RemotingConnection, FakeTransport, Events]:
    events = events or Events()
    dispatcher = dispatcher or RequestDispatcher(ProcessorTable())
    connection = RemotingConnection(dispatcher.serve, events, **options)
    transport = FakeTransport(connection)
    connection.connection_made(transport)
    return connection, transport, events


async def test_addresses_and_connect_event() -> None:
    connection, _, events = connect()
    assert (connection.remote_address, connection.local_address) == ("10.0.0.7:40001", "10.0.0.1:10911")
    assert connection.is_open and events.seen == ["connect"]


async def test_request_split_into_single_bytes_is_served() -> None:
    table = ProcessorTable()

    async def echo(ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        assert ctx.remote_address == "10.0.0.7:40001"
        return create_response(request, 0, "pong", request.ext_fields)

    table.register(7, echo)
    dispatcher = RequestDispatcher(table)
    connection, transport, _ = connect(dispatcher)
    request = create_request(7, {"x": "y"}, serialize_type=codec.SERIALIZE_ROCKETMQ)
    for byte in codec.encode_command(request):
        connection.data_received(bytes([byte]))
    while dispatcher.running_requests:
        await asyncio.sleep(0)
    (response,) = transport.commands()
    assert (response.opaque, response.remark, response.ext_fields) == (request.opaque, "pong", {"x": "y"})
    assert response.serialize_type == codec.SERIALIZE_ROCKETMQ


@pytest.mark.parametrize(("length", "accepted"), [(16_777_212, True), (16_777_213, False)])
async def test_frame_length_limit_is_javas(length: int, accepted: bool) -> None:
    connection, transport, events = connect()
    connection.data_received(struct.pack(">i", length))
    assert transport.closing is not accepted
    if not accepted:
        assert events.seen[-1] == "exception FrameTooLargeError"


async def test_malformed_frame_closes_and_later_bytes_are_ignored() -> None:
    dispatcher = RequestDispatcher(ProcessorTable())
    connection, transport, events = connect(dispatcher)
    connection.data_received(struct.pack(">ii", 4, (9 << 24)))
    assert transport.closing
    assert events.seen == ["connect", "exception CodecError"]
    connection.data_received(codec.encode_command(create_request(1)))
    await asyncio.sleep(0)
    assert dispatcher.running_requests == 0 and events.seen[-1] == "close"


async def test_response_completes_the_matching_request_only() -> None:
    connection, _, _ = connect()
    request = create_request(11)
    waiting = connection.expect_response(request.opaque, 5000)
    other = create_request(11)
    connection.data_received(codec.encode_command(create_response(other, 0)))  # unknown opaque: logged, dropped
    assert not waiting.done
    connection.data_received(codec.encode_command(create_response(request, 0, "yes")))
    assert (await waiting.wait()).remark == "yes"
    assert connection.pending_requests == 0


async def test_duplicate_opaque_is_refused() -> None:
    connection, _, _ = connect()
    waiting = connection.expect_response(42, 5000)
    with pytest.raises(ValueError):
        connection.expect_response(42, 5000)
    waiting.discard()
    assert connection.pending_requests == 0


async def test_timeout_removes_the_pending_entry() -> None:
    connection, _, _ = connect()
    waiting = connection.expect_response(5, 10)
    with pytest.raises(RemotingTimeoutError):
        await waiting.wait()
    assert connection.pending_requests == 0


async def test_connection_lost_fails_every_pending_request_at_once() -> None:
    connection, _, events = connect()
    awaited = connection.expect_response(1, 60000)
    outcomes: list[object] = []
    connection.expect_response(2, 60000, outcomes.append)
    connection.connection_lost(ConnectionResetError("reset by peer"))
    with pytest.raises(RemotingSendRequestError):
        await awaited.wait()
    assert len(outcomes) == 1 and isinstance(outcomes[0], RemotingSendRequestError)
    assert connection.pending_requests == 0 and not connection.is_open
    assert events.seen[-1] == "close"
    with pytest.raises(RemotingSendRequestError):
        await connection.send(create_request(1))


async def test_server_side_stops_reading_while_writes_are_blocked() -> None:
    connection, transport, _ = connect(pause_reading_when_write_blocked=True)
    connection.pause_writing()
    assert not transport.reading and connection.writing_paused
    sending = asyncio.ensure_future(connection.send(create_request(3)))
    await asyncio.sleep(0)
    assert not sending.done() and len(transport.written) > 0  # written once, then waiting to drain
    connection.resume_writing()
    await sending
    assert transport.reading


async def test_client_side_keeps_reading_while_writes_are_blocked() -> None:
    connection, transport, _ = connect()
    connection.pause_writing()
    assert transport.reading
    connection.resume_writing()


async def test_stop_reading_survives_resume_writing() -> None:
    connection, transport, _ = connect(pause_reading_when_write_blocked=True)
    connection.stop_reading()
    connection.pause_writing()
    connection.resume_writing()
    assert not transport.reading


async def test_send_waiting_to_drain_fails_when_the_connection_is_lost() -> None:
    connection, _, _ = connect()
    connection.pause_writing()
    sending = asyncio.ensure_future(connection.send(create_request(3)))
    await asyncio.sleep(0)
    connection.connection_lost(None)
    with pytest.raises(RemotingSendRequestError):
        await sending


async def test_frames_of_one_loop_pass_go_out_in_one_write() -> None:
    connection, transport, _ = connect()
    writes: list[bytes] = []
    transport.write = writes.append  # type: ignore[method-assign,assignment]
    first = create_request(1, {"a": "b"}, b"body")
    second = create_request(2, None, b"more")
    await connection.send(first)
    await connection.send(second)
    assert writes == []  # held until the end of this pass of the loop
    await asyncio.sleep(0)
    assert writes == [codec.encode_command(first) + codec.encode_command(second)]
    third = create_request(3)
    await connection.send(third)
    await asyncio.sleep(0)
    assert writes[1:] == [codec.encode_command(third)]


@pytest.mark.parametrize("body_size", [0, 4095, 4096, 70_000, 300 * 1024])
async def test_an_answer_is_the_same_bytes_whether_its_body_is_copied_into_the_frame_or_written_apart(
        body_size: int) -> None:
    table = ProcessorTable()
    body = bytes(range(256)) * (body_size // 256) + b"x" * (body_size % 256)

    async def records(ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        return create_response(request, 0, "FOUND", {"nextBeginOffset": "32"}, body or None)

    table.register(11, records)
    dispatcher = RequestDispatcher(table)
    connection, transport, _ = connect(dispatcher)
    handed: list[bytes] = []  # every buffer given to the transport, by writelines or write
    write = transport.write
    transport.write = lambda data: (handed.append(data), write(data))  # type: ignore[method-assign]
    transport.writelines = lambda buffers: [transport.write(data) for data in buffers]  # type: ignore[method-assign]
    request = create_request(11, {"a": "b"})
    connection.data_received(codec.encode_command(request))
    while dispatcher.running_requests:
        await asyncio.sleep(0)
    await asyncio.sleep(0)
    expected = create_response(request, 0, "FOUND", {"nextBeginOffset": "32"}, body or None)
    expected.opaque = request.opaque
    expected.flag |= codec.FLAG_RESPONSE
    assert bytes(transport.written) == codec.encode_command(expected)
    # A body of 4 KiB or more goes to the transport as its own buffer (not copied), after the frame's head,
    # where the transport's writelines keeps its flow control.
    apart = body_size >= 4096 and WRITELINES_KEEPS_FLOW_CONTROL
    assert len(handed) == (2 if apart else 1)
    if apart:
        assert handed[1] is body


async def test_close_writes_the_frames_still_buffered() -> None:
    connection, transport, _ = connect()
    request = create_request(1, {"a": "b"}, b"body")
    await connection.send(request)
    connection.close()
    assert transport.closing and [c.opaque for c in transport.commands()] == [request.opaque]


async def test_a_large_buffer_is_written_without_waiting_for_the_end_of_the_pass() -> None:
    connection, transport, _ = connect()
    request = create_request(1, None, b"x" * (300 * 1024))
    await connection.send(request)
    assert bytes(transport.written) == codec.encode_command(request)


async def test_idle_connection_closes_itself() -> None:
    idle: list[RemotingConnection] = []

    class IdleEvents(Events):
        def on_idle(self, conn: RemotingConnection) -> None:
            idle.append(conn)

    connection, transport, _ = connect(events=IdleEvents(), idle_timeout_s=0.05)
    assert await connection.wait_closed(5)
    assert transport.closing and idle == [connection]


async def test_answers_to_a_peer_that_left_are_dropped_with_one_line(caplog: pytest.LogCaptureFixture) -> None:
    # A producer that stops with requests in flight: each is still served, and each answer finds the connection
    # closed. One INFO line tells the operator; the others are only counted.
    caplog.set_level(logging.DEBUG, logger="rocketmq_py.remoting.protocol")
    release = asyncio.Event()

    async def slow(ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        await release.wait()
        return create_response(request)

    table = ProcessorTable()
    table.register(7, slow)
    dispatcher = RequestDispatcher(table)
    connection, transport, _ = connect(dispatcher)
    requests = [create_request(7) for _ in range(40)]
    connection.data_received(b"".join(codec.encode_command(request) for request in requests))
    assert dispatcher.running_requests == 40
    connection.connection_lost(ConnectionResetError("reset by peer"))
    release.set()
    assert await dispatcher.drain(5)
    # The lane's way of answering: write_answer on a connection already closed.
    connection.write_answer(requests[0], create_response(requests[0]))

    assert connection.unsent_answers == 41 and not transport.written
    unsent = [record for record in caplog.records if "could not be sent" in record.getMessage()]
    assert [record.levelno for record in unsent] == [logging.INFO] + [logging.DEBUG] * 40
