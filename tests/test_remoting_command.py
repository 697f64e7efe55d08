"""Request/response factories, the opaque sequence and the processor table, without sockets."""
from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from rocketmq_py import codec
from rocketmq_py.errors import FrameTooLargeError
from rocketmq_py.remoting import (
    REJECT_REQUEST_REMARK,
    OpaqueCounter,
    ProcessorTable,
    RemotingCommand,
    RemotingSysResponseCode,
    RequestContext,
    RequestProcessor,
    SyncProcessor,
    create_request,
    create_response,
    mark_oneway,
)
from rocketmq_py.remoting import command as commands


def test_request_defaults() -> None:
    request = create_request(105, {"topic": "T"}, b"x")
    assert (request.code, request.ext_fields, request.body) == (105, {"topic": "T"}, b"x")
    assert request.language == codec.LANGUAGE_PYTHON and request.version == 409
    assert request.flag == 0 and not request.is_response and not request.is_oneway
    assert request.serialize_type == commands.DEFAULT_SERIALIZE_TYPE
    assert create_request(105).opaque != request.opaque


def test_response_copies_opaque_and_serialization() -> None:
    request = create_request(10, serialize_type=codec.SERIALIZE_ROCKETMQ)
    response = create_response(request, RemotingSysResponseCode.SYSTEM_BUSY, "busy")
    assert response.is_response and not response.is_oneway
    assert (response.code, response.remark, response.opaque) == (2, "busy", request.opaque)
    assert response.serialize_type == codec.SERIALIZE_ROCKETMQ
    assert create_response(request, serialize_type=codec.SERIALIZE_JSON).serialize_type == codec.SERIALIZE_JSON


def test_mark_oneway_keeps_other_flags() -> None:
    request = create_request(1)
    request.flag = 0x10
    assert mark_oneway(request) is request
    assert request.flag == 0x12 and request.is_oneway


def test_opaque_counter_wraps_like_a_java_int() -> None:
    counter = OpaqueCounter(start=2**31 - 1)
    assert [counter.next() for _ in range(3)] == [2**31 - 1, -(2**31), -(2**31) + 1]


def test_opaque_counter_without_a_gil_takes_its_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(commands, "_FREE_THREADED", True)
    counter = OpaqueCounter(start=2**31 - 1)
    assert counter._lock is not None
    assert [counter.next() for _ in range(2)] == [2**31 - 1, -(2**31)]


def test_opaque_counter_is_thread_safe() -> None:
    counter = OpaqueCounter()
    seen: list[list[int]] = [[] for _ in range(4)]

    def take(bucket: list[int]) -> None:
        for _ in range(5000):
            bucket.append(counter.next())

    threads = [threading.Thread(target=take, args=(bucket,)) for bucket in seen]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    values = [value for bucket in seen for value in bucket]
    assert sorted(values) == list(range(20000))


@pytest.mark.parametrize(("value", "expected"), [
    (None, codec.SERIALIZE_JSON), ("JSON", codec.SERIALIZE_JSON), ("ROCKETMQ", codec.SERIALIZE_ROCKETMQ),
    ("rocketmq", codec.SERIALIZE_ROCKETMQ),
])
def test_serialize_type_from_env(monkeypatch: pytest.MonkeyPatch, value: str | None, expected: int) -> None:
    if value is None:
        monkeypatch.delenv("ROCKETMQ_SERIALIZE_TYPE", raising=False)
    else:
        monkeypatch.setenv("ROCKETMQ_SERIALIZE_TYPE", value)
    assert commands.serialize_type_from_env() == expected


def test_bad_serialize_type_in_env_is_explained(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROCKETMQ_SERIALIZE_TYPE", "XML")
    with pytest.raises(ValueError, match="JSON or ROCKETMQ"):
        commands.serialize_type_from_env()


# --- processor table -------------------------------------------------------------------


class _Connection:
    remote_address = "10.1.1.1:5000"


CTX = RequestContext(_Connection())  # type: ignore[arg-type]


async def test_unknown_code_without_default() -> None:
    request = create_request(77, serialize_type=codec.SERIALIZE_ROCKETMQ)
    response = await ProcessorTable().dispatch(CTX, request)
    assert response is not None
    assert (response.code, response.remark) == (3, " request type 77 not supported")
    assert response.opaque == request.opaque and response.is_response
    assert response.serialize_type == commands.DEFAULT_SERIALIZE_TYPE  # Java answers errors in its default


async def test_default_processor_takes_unregistered_codes() -> None:
    async def fallback(ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        return create_response(request, 0, f"default for {request.code}")

    table = ProcessorTable(default=fallback)
    response = await table.dispatch(CTX, create_request(55))
    assert response is not None and response.remark == "default for 55"
    table.register_default(None)
    response = await table.dispatch(CTX, create_request(55))
    assert response is not None and response.code == 3


async def test_processor_response_is_fixed_up_like_java() -> None:
    async def sloppy(ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        return RemotingCommand(code=0, remark="made by hand")

    table = ProcessorTable()
    table.register(1, sloppy)
    request = create_request(1, serialize_type=codec.SERIALIZE_ROCKETMQ)
    response = await table.dispatch(CTX, request)
    assert response is not None
    assert response.opaque == request.opaque and response.is_response
    assert response.serialize_type == codec.SERIALIZE_ROCKETMQ


async def test_exception_becomes_system_error() -> None:
    def broken(ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        raise KeyError("queueId")

    table = ProcessorTable()
    table.register(1, broken)
    response = await table.dispatch(CTX, create_request(1))
    assert response is not None
    assert (response.code, response.remark) == (1, "KeyError: 'queueId'")


async def test_wrong_return_type_becomes_system_error() -> None:
    table = ProcessorTable()
    table.register(1, lambda ctx, request: "not a command")  # type: ignore[arg-type]
    response = await table.dispatch(CTX, create_request(1))
    assert response is not None and response.code == 1


async def test_reject_request_answers_system_busy() -> None:
    class Busy(RequestProcessor):
        async def process(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
            raise AssertionError("a rejected request is not processed")

        def reject_request(self) -> bool:
            return True

    table = ProcessorTable()
    table.register(1, Busy())
    response = await table.dispatch(CTX, create_request(1))
    assert response is not None
    assert (response.code, response.remark) == (2, REJECT_REQUEST_REMARK)
    assert REJECT_REQUEST_REMARK == "[REJECTREQUEST]system busy, start flow control for a while"


@pytest.mark.parametrize("code", [1, 2, 3, 4])
async def test_oneway_never_gets_an_answer(code: int) -> None:
    class Busy(RequestProcessor):
        async def process(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
            return create_response(request)

        def reject_request(self) -> bool:
            return True

    def broken(ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        raise RuntimeError("x")

    table = ProcessorTable()
    table.register(1, lambda ctx, request: create_response(request))
    table.register(2, Busy())
    table.register(3, broken)
    assert await table.dispatch(CTX, mark_oneway(create_request(code))) is None


async def test_none_means_no_response() -> None:
    table = ProcessorTable()
    table.register(1, lambda ctx, request: None)
    assert await table.dispatch(CTX, create_request(1)) is None


async def test_sync_function_runs_in_its_executor() -> None:
    threads: list[int] = []

    def blocking(ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        threads.append(threading.get_ident())
        return create_response(request, 0, ctx.remote_address)

    with ThreadPoolExecutor(1) as executor:
        table = ProcessorTable()
        table.register(1, blocking, executor)
        assert isinstance(table.get(1), SyncProcessor)
        response = await table.dispatch(CTX, create_request(1))
    assert response is not None and response.remark == "10.1.1.1:5000"
    assert threads and threads[0] != threading.get_ident()


async def test_registration_errors() -> None:
    table = ProcessorTable()
    with pytest.raises(TypeError):
        table.register(1, 42)  # type: ignore[arg-type]

    async def coroutine(ctx: RequestContext, request: RemotingCommand) -> None:
        await asyncio.sleep(0)

    with ThreadPoolExecutor(1) as executor, pytest.raises(TypeError):
        table.register(1, coroutine, executor)
    assert 1 not in table


@pytest.mark.parametrize("serialize_type", [codec.SERIALIZE_JSON, codec.SERIALIZE_ROCKETMQ])
@pytest.mark.parametrize("body", [None, b"", b"x", bytes(range(256)) * 40, memoryview(b"records" * 1000)])
def test_a_frame_apart_is_the_frame(serialize_type, body):
    command = create_request(11, {"topic": "T", "queueId": "3"}, body, remark="r", serialize_type=serialize_type)
    head, apart = codec.encode_command_apart(command)
    assert head + (bytes(apart) if apart is not None else b"") == codec.encode_command(command)
    assert apart is None or apart is body
    assert command.body is body


def test_a_frame_apart_too_large_raises_the_codecs_error():
    command = create_request(11, {"topic": "T"}, memoryview(bytearray(codec.MAX_FRAME_LENGTH)))
    with pytest.raises(FrameTooLargeError) as apart:
        codec.encode_command_apart(command)
    with pytest.raises(FrameTooLargeError) as whole:
        codec.encode_command(command)
    assert str(apart.value) == str(whole.value)


# --- a decoded ROCKETMQ frame's extFields, made on first use ------------------------------------------------------


_ROCKETMQ_FRAME = codec.encode_command(create_request(310, {"a": "G", "b": "T", "e": "", "x": "1"}, b"body",
                                                     serialize_type=codec.SERIALIZE_ROCKETMQ))


def _decoded_rocketmq(compiled) -> RemotingCommand:
    return compiled.decode_frame(_ROCKETMQ_FRAME[4:])


def test_a_decoded_rocketmq_command_makes_its_ext_fields_once(compiled) -> None:
    command = _decoded_rocketmq(compiled)
    assert command._wire_ext is not None and command._ext_fields is None
    fields = command.ext_fields
    assert fields == {"a": "G", "b": "T", "x": "1"}  # the empty value is Java's null: absent
    assert command.ext_fields is fields and command._wire_ext is None
    fields["y"] = "2"  # the dict handed out is the command's own, as a slot's would be
    assert codec.decode_frame(codec.encode_command(command)[4:]).ext_fields == {"a": "G", "b": "T", "x": "1", "y": "2"}


def test_setting_ext_fields_replaces_the_undecoded_block(compiled) -> None:
    command = _decoded_rocketmq(compiled)
    command.ext_fields = {"b": "other"}
    assert command.ext_fields == {"b": "other"} and command._wire_ext is None
    assert codec.decode_frame(codec.encode_command(command)[4:]).ext_fields == {"b": "other"}
    command = _decoded_rocketmq(compiled)
    command.ext_fields = None
    assert command.ext_fields is None


def test_a_decoded_rocketmq_command_reencodes_copies_and_compares_as_its_fields(twin, compiled) -> None:
    import copy
    import pickle

    command = _decoded_rocketmq(compiled)
    command.ext_fields  # made; the others still hold their blocks
    frame = compiled.encode_command(_decoded_rocketmq(compiled))
    assert frame == compiled.encode_command(command) == codec.encode_command(_decoded_rocketmq(compiled))
    assert b"\x00\x01e" in _ROCKETMQ_FRAME and b"\x00\x01e" not in frame  # the null entry is not written back
    twin_decoded = twin.decode_frame(frame[4:])
    for other in (copy.copy(_decoded_rocketmq(compiled)), copy.deepcopy(_decoded_rocketmq(compiled)),
                  pickle.loads(pickle.dumps(_decoded_rocketmq(compiled))), twin_decoded):
        assert other == command
        assert other.ext_fields == {"a": "G", "b": "T", "x": "1"}
    assert "ext_fields={'a': 'G', 'b': 'T', 'x': '1'}" in repr(_decoded_rocketmq(compiled))
