"""Request-reply pieces with no broker: the reply helper and the processor that ends a waiting request."""
from __future__ import annotations

import asyncio
import zlib

import pytest

from rocketmq_py import codec
from rocketmq_py.client.producer import create_reply_message
from rocketmq_py.client.reply import ReplyFutures
from rocketmq_py.common.message import Message
from rocketmq_py.errors import ReplyMessageError
from rocketmq_py.remoting import create_request


def test_reply_message_goes_to_the_clusters_reply_topic():
    request = Message("Req", b"q", properties={"CLUSTER": "DefaultCluster", "CORRELATION_ID": "c-1",
                                               "REPLY_TO_CLIENT": "10.0.0.1@x", "TTL": "3000"})
    reply = create_reply_message(request, b"answer")
    assert reply.topic == "DefaultCluster_REPLY_TOPIC" and reply.body == b"answer"
    for name, value in {"MSG_TYPE": "reply", "CORRELATION_ID": "c-1", "REPLY_TO_CLIENT": "10.0.0.1@x",
                        "TTL": "3000"}.items():
        assert reply.properties[name] == value
    with pytest.raises(ReplyMessageError, match="CLUSTER"):
        create_reply_message(Message("Req", b"q"), b"a")


async def test_pushed_reply_ends_the_waiting_request():
    futures = ReplyFutures()
    waiting = futures.expect("c-9")
    properties = codec.properties_to_string({"CORRELATION_ID": "c-9", "MSG_TYPE": "reply"})
    fields = {"producerGroup": "pg", "topic": "C_REPLY_TOPIC", "defaultTopic": "TBW102",
              "defaultTopicQueueNums": "4", "queueId": "0", "sysFlag": str(0x301), "bornTimestamp": "1",
              "flag": "0", "properties": properties, "bornHost": "10.0.0.2:5555", "storeHost": "10.0.0.3:10911",
              "storeTimestamp": "2"}
    request = create_request(326, fields, zlib.compress(b"the answer"))

    class Ctx:
        remote_address = "10.0.0.3:10911"

    response = futures.process(Ctx(), request)
    assert response.code == 0
    reply = await asyncio.wait_for(waiting, 1)
    assert reply.body == b"the answer" and reply.topic == "C_REPLY_TOPIC"
    assert reply.properties["CORRELATION_ID"] == "c-9" and "ARRIVE_TIME" in reply.properties
    assert futures.waiting == {}
    assert futures.process(Ctx(), create_request(326, {"topic": "x"})).code == 1
