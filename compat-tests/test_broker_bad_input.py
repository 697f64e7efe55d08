"""Issue 5, point 5: bad input on the wire gets the response codes the Java broker gives, and the broker keeps
serving. Each case goes to the official Java broker and to ours, and the answers are compared: unknown
request codes, headers that miss required fields, oversized messages and properties, illegal topics and
queue ids, writes to forbidden system topics, pulls from a topic without read permission, and frames that
cannot be decoded (both brokers close that connection and serve the next one)."""
from __future__ import annotations

import json
import socket
import struct
import time
import uuid

import pytest
from harness import wire
from test_broker_java_clients import py_broker, py_namesrv  # noqa: F401  (module fixtures)

from rocketmq_py import codec

SEND_MESSAGE, PULL_MESSAGE, QUERY_CONSUMER_OFFSET = 10, 11, 14
UPDATE_AND_CREATE_TOPIC, SEND_MESSAGE_V2 = 17, 310
TOPIC = f"BadInput_{uuid.uuid4().hex[:8]}"
NO_READ_TOPIC = f"NoRead_{uuid.uuid4().hex[:8]}"
MAX_MESSAGE_SIZE = 4 * 1024 * 1024


def _send_fields(topic: str, queue_id: int = 0, properties: str | None = None) -> dict:
    props = properties if properties is not None else codec.properties_to_string(
        {"WAIT": "true", "UNIQ_KEY": uuid.uuid4().hex.upper()})
    return {"a": "bad_input_producer", "b": topic, "c": "TBW102", "d": "4", "e": str(queue_id), "f": "0",
            "g": str(int(time.time() * 1000)), "h": "0", "i": props, "k": "false", "m": "false"}


CASES = {
    "unknown request code": (9999, {}, b""),
    "send v1 without topic": (SEND_MESSAGE, {"producerGroup": "g"}, b"x"),
    "query offset without queueId": (QUERY_CONSUMER_OFFSET, {"consumerGroup": "g", "topic": "T"}, b""),
    "pull without its header": (PULL_MESSAGE, {"consumerGroup": "g"}, b""),
    "oversized body": (SEND_MESSAGE_V2, _send_fields(TOPIC), b"b" * (MAX_MESSAGE_SIZE + 1)),
    "oversized properties": (SEND_MESSAGE_V2, _send_fields(TOPIC, properties=codec.properties_to_string(
        {"WAIT": "true", "big": "p" * 40000})), b"x"),
    "forbidden system topic": (SEND_MESSAGE_V2, _send_fields("SCHEDULE_TOPIC_XXXX"), b"x"),
    "forbidden transaction topic": (SEND_MESSAGE_V2, _send_fields("RMQ_SYS_TRANS_HALF_TOPIC"), b"x"),
    "illegal topic name": (SEND_MESSAGE_V2, _send_fields("bad topic!"), b"x"),
    "queue id out of range": (SEND_MESSAGE_V2, _send_fields(TOPIC, queue_id=99), b"x"),
    "pull without read permission": (PULL_MESSAGE, {
        "consumerGroup": "bad_input_group", "topic": NO_READ_TOPIC, "queueId": "0", "queueOffset": "0",
        "maxMsgNums": "32", "sysFlag": "4", "commitOffset": "0", "suspendTimeoutMillis": "0",
        "subscription": "*", "subVersion": "0", "expressionType": "TAG"}, b""),
}

#: Cases whose remark is the same text on both brokers (the others differ in exception details).
SAME_REMARK = {"unknown request code", "send v1 without topic", "oversized body", "oversized properties", "forbidden system topic",
               "forbidden transaction topic", "illegal topic name", "pull without read permission"}


def _create_topics(addr: str) -> None:
    for topic, perm in ((TOPIC, 6), (NO_READ_TOPIC, 2)):
        header, _ = wire.request(addr, UPDATE_AND_CREATE_TOPIC, {
            "topic": topic, "defaultTopic": "TBW102", "readQueueNums": "4", "writeQueueNums": "4", "perm": str(perm),
            "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"})
        assert header["code"] == 0, header


@pytest.fixture(scope="module")
def both_brokers(java_broker, py_broker):
    for addr in (java_broker.addr, py_broker.addr):
        _create_topics(addr)
    return {"java": java_broker.addr, "ours": py_broker.addr}


def _serves(addr: str) -> bool:
    header, _ = wire.request(addr, SEND_MESSAGE_V2, _send_fields(TOPIC), b"still serving", timeout=10)
    return header["code"] == 0


@pytest.mark.parametrize("case", list(CASES))
def test_bad_request_gets_javas_answer(both_brokers, case):
    code, fields, body = CASES[case]
    answers = {side: wire.request(addr, code, fields, body, timeout=10)[0] for side, addr in both_brokers.items()}
    java, ours = answers["java"], answers["ours"]
    assert ours["code"] == java["code"], (java, ours)
    if case in SAME_REMARK:
        assert ours.get("remark") == java.get("remark")
    elif case == "queue id out of range":
        assert ours["remark"].split(" Producer:")[0] == java["remark"].split(" Producer:")[0]
    elif "<" in java.get("remark", ""):
        field = java["remark"].split("<")[1].split(">")[0]
        assert f"the custom field <{field}> is null" in ours["remark"]
    for addr in both_brokers.values():
        assert _serves(addr)


def _frame(header: bytes, body: bytes = b"", serialize_type: int = 0, header_length: int | None = None) -> bytes:
    length = len(header) if header_length is None else header_length
    return struct.pack(">ii", 4 + len(header) + len(body), (serialize_type << 24) | length) + header + body


FRAMES = {
    "header longer than the frame": _frame(b"{}", header_length=1000),
    "header that is not JSON": _frame(b"\x00\x01not json at all"),
    "frame over 16 MiB": struct.pack(">i", 16 * 1024 * 1024 + 100) + b"\x00" * 64,
    "binary header cut short": _frame(b"\x00\x0a\x00", serialize_type=1),
}


def _closed_after(addr: str, data: bytes) -> bool:
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(data)
        try:
            return sock.recv(1) == b""
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False


@pytest.mark.parametrize("case", list(FRAMES))
def test_undecodable_frame_closes_the_connection_and_the_broker_serves_on(both_brokers, case):
    results = {side: _closed_after(addr, FRAMES[case]) for side, addr in both_brokers.items()}
    assert results == {"java": True, "ours": True}
    for addr in both_brokers.values():
        assert _serves(addr)


def test_answers_in_the_serialization_of_the_request(both_brokers):
    request = codec.RemotingCommand(code=9999, language=0, version=409, opaque=7, flag=0,
                                    serialize_type=codec.SERIALIZE_ROCKETMQ)
    for side, addr in both_brokers.items():
        host, port = addr.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(codec.encode_command(request))
            decoder = codec.FrameDecoder()
            responses = []
            while not responses:
                responses = decoder.feed(sock.recv(65536))
        [response] = responses
        assert (response.code, response.opaque) == (3, 7), side
        assert json.dumps(response.remark) == json.dumps(" request type 9999 not supported")
