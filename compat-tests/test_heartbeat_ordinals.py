"""Issue 11, point 4: HEART_BEAT bodies whose enum fields are numbers (the C++ client sends consumeType,
messageModel and consumeFromWhere as ordinals) register the group as the Java broker does.

Each body goes to the official broker and to ours over a connection kept open (a consumer is dropped
when its connection closes), then GET_CONSUMER_CONNECTION_LIST on the same connection says what each
broker understood; the answers must be equal, so the ordinal order comes from Java, not from us."""
from __future__ import annotations

import json
import uuid

import pytest

from rocketmq_py import codec
from rocketmq_py.remoting import BlockingRemotingClient, create_request

pytestmark = pytest.mark.compat

HEART_BEAT, GET_CONSUMER_CONNECTION_LIST = 34, 203
CONSUME_FROM_WHERE_ORDINALS = range(6)


def _heartbeat(group: str, consume_type, message_model, consume_from_where) -> bytes:
    consumer = {"groupName": group, "consumeType": consume_type, "messageModel": message_model,
                "consumeFromWhere": consume_from_where, "unitMode": False,
                "subscriptionDataSet": [{"topic": "OrdinalTopic", "subString": "*", "tagsSet": [], "codeSet": [],
                                         "subVersion": 1, "expressionType": "TAG", "classFilterMode": False}]}
    return json.dumps({"clientID": f"127.0.0.1@{group}", "producerDataSet": [],
                       "consumerDataSet": [consumer]}).encode()


def _understood(addr: str, body: bytes, group: str) -> tuple[int, dict | None]:
    with BlockingRemotingClient() as client:
        response = client.invoke(addr, create_request(HEART_BEAT, body=body), 10_000)
        if response.code != 0:
            return response.code, None
        listing = client.invoke(addr, create_request(GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": group}), 10_000)
        if listing.code != 0:
            return listing.code, None
        connection = codec.json_loads(listing.body)
        return 0, {key: connection.get(key) for key in ("consumeType", "messageModel", "consumeFromWhere")}


@pytest.mark.parametrize("consume_from_where", CONSUME_FROM_WHERE_ORDINALS)
def test_enum_ordinals_in_a_heartbeat_mean_what_they_mean_to_java(java_broker, py_broker, consume_from_where):
    consume_type, message_model = consume_from_where % 2, (consume_from_where // 2) % 2
    answers = {}
    for name, broker in (("java", java_broker), ("ours", py_broker)):
        group = f"Ordinal_{uuid.uuid4().hex[:8]}"
        answers[name] = _understood(broker.addr, _heartbeat(group, consume_type, message_model, consume_from_where),
                                    group)
    assert answers["java"][0] == 0, answers
    assert answers["ours"] == answers["java"]


def test_enum_names_and_ordinals_register_the_same_consumer(py_broker):
    group = f"Ordinal_{uuid.uuid4().hex[:8]}"
    by_name = _understood(py_broker.addr, _heartbeat(group, "CONSUME_PASSIVELY", "CLUSTERING",
                                                     "CONSUME_FROM_FIRST_OFFSET"), group)
    by_ordinal = _understood(py_broker.addr, _heartbeat(group, 1, 1, 4), group)
    assert by_name == by_ordinal == (0, {"consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
                                         "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET"})
