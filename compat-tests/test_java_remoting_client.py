"""Issue 2, point 2: the official Java NettyRemotingClient calls our Python remoting server with sync,
async and oneway calls in both serializations; remark, extFields and body round-trip unchanged."""
from __future__ import annotations

import asyncio
import base64

import pytest
from harness import run_peer

from rocketmq_py import codec
from rocketmq_py.remoting import RemotingServer, create_response

ECHO_CODE = 1000
REMARK = "héllo ✓ remark with spaces"
EXT = {"topic": "TopicTest", "queueId": "3", "note": "a=b c", "unicode": "日本語"}
BODY = bytes(range(256)) * 4


class Recorder:
    """Echoes a request back and remembers what arrived."""

    def __init__(self) -> None:
        self.requests: list[codec.RemotingCommand] = []
        self.arrived = asyncio.Event()

    async def process(self, ctx, request):
        self.requests.append(request)
        self.arrived.set()
        return create_response(request, remark=request.remark, ext_fields=request.ext_fields, body=request.body)


@pytest.fixture
async def echo_server():
    recorder = Recorder()
    server = RemotingServer(port=0)
    server.processors.register(ECHO_CODE, recorder.process)
    await server.start()
    try:
        yield server, recorder
    finally:
        await server.shutdown()


def _call(server, mode, serialize, count=1, *extra):
    args = ["--addr", server.address, "--code", str(ECHO_CODE), "--mode", mode, "--serialize", serialize,
            "--remark", REMARK, "--body-base64", base64.b64encode(BODY).decode(), "--count", str(count)]
    for key, value in EXT.items():
        args += ["--ext", f"{key}={value}"]
    return run_peer("remoting-call", *args, *extra)


def _assert_request_intact(request: codec.RemotingCommand, serialize: str, oneway: bool = False) -> None:
    assert request.remark == REMARK
    assert request.ext_fields == EXT
    assert request.body == BODY
    assert request.language == codec.LANGUAGE_JAVA
    assert request.serialize_type == (codec.SERIALIZE_JSON if serialize == "JSON" else codec.SERIALIZE_ROCKETMQ)
    assert not request.is_response
    assert request.is_oneway is oneway


@pytest.mark.parametrize("serialize", ["JSON", "ROCKETMQ"])
@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_java_client_round_trips_through_python_server(echo_server, mode, serialize):
    server, recorder = echo_server
    responses = await asyncio.to_thread(_call, server, mode, serialize, 3)

    assert len(responses) == 3 and len(recorder.requests) == 3
    for request, response in zip(recorder.requests, responses):
        _assert_request_intact(request, serialize)
        assert response["code"] == 0
        assert response["opaque"] == request.opaque
        assert response["flag"] & codec.FLAG_RESPONSE
        assert response["remark"] == REMARK
        assert response["extFields"] == EXT
        assert base64.b64decode(response["bodyBase64"]) == BODY
        assert response["serializeType"] == serialize
        assert response["language"] == "PYTHON"


@pytest.mark.parametrize("serialize", ["JSON", "ROCKETMQ"])
async def test_java_oneway_reaches_python_server_without_a_response(echo_server, serialize):
    server, recorder = echo_server
    [line] = await asyncio.to_thread(_call, server, "oneway", serialize)
    assert line == {"oneway": True, "sent": True}
    await asyncio.wait_for(recorder.arrived.wait(), 10)
    [request] = recorder.requests
    _assert_request_intact(request, serialize, oneway=True)


@pytest.mark.parametrize("serialize", ["JSON", "ROCKETMQ"])
async def test_unknown_code_from_java_gets_request_code_not_supported(echo_server, serialize):
    server, _ = echo_server
    [response] = await asyncio.to_thread(
        run_peer, "remoting-call", "--addr", server.address, "--code", "4242", "--mode", "sync",
        "--serialize", serialize)
    assert response["code"] == 3
    assert response["remark"] == " request type 4242 not supported"
