"""Smoke test of the Java compatibility harness itself (official servers, peers, mqadmin, codec)."""

from __future__ import annotations

import base64
import uuid
import zlib

import pytest

from harness.peers import mqadmin, run_peer

pytestmark = pytest.mark.compat


def java_string_hash(s: str) -> int:
    data = s.encode("utf-16-be")  # Java hashes UTF-16 code units
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def test_produce_then_consume_same_messages(java_namesrv, java_broker):
    topic = f"SmokeTopic_{uuid.uuid4().hex[:8]}"
    sent = run_peer("produce", namesrv=java_namesrv.addr, topic=topic, count=5, tags="TagA", keys="key-{i}",
                    body="smoke-{i}")
    assert len(sent) == 5
    assert {s["status"] for s in sent} == {"SEND_OK"}
    assert {s["brokerName"] for s in sent} == {java_broker.broker_name}

    lines = run_peer("consume", namesrv=java_namesrv.addr, topic=topic, group=f"SmokeGroup_{uuid.uuid4().hex[:8]}",
                     count=5, timeout_ms=30000)
    *received, done = lines
    assert done == {"done": True, "count": 5, "timedOut": False}
    assert sorted(m["msgId"] for m in received) == sorted(s["msgId"] for s in sent)
    assert sorted(m["offsetMsgId"] for m in received) == sorted(s["offsetMsgId"] for s in sent)
    bodies = sorted(base64.b64decode(m["bodyBase64"]).decode() for m in received)
    assert bodies == [f"smoke-{i}" for i in range(5)]
    assert {m["topic"] for m in received} == {topic}
    assert {m["tags"] for m in received} == {"TagA"}
    assert {m["storeHost"] for m in received} == {java_broker.addr}


def test_mqadmin_cluster_list_shows_broker(java_namesrv, java_broker):
    out = mqadmin("clusterList", namesrv=java_namesrv.addr)
    assert java_broker.broker_name in out
    assert java_broker.addr in out


def test_codec_service_answers(codec_service):
    assert java_string_hash("TagA") == 2598919
    assert codec_service.call({"op": "stringHash", "s": "TagA"}) == {"hash": java_string_hash("TagA")}
    body = b"hello rocketmq"
    reply = codec_service.call({"op": "crc32", "bodyBase64": base64.b64encode(body).decode()})
    assert reply == {"crc": zlib.crc32(body) & 0x7FFFFFFF}
    assert "error" in codec_service.call({"op": "no-such-op"})
    # still serving after an error
    assert codec_service.call({"op": "ping"}) == {"pong": True}
