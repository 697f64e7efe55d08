"""Issue 3, point 5: request-reply both ways with the official Java client: a Python requester with a
Java replier, and a Java requester with a Python replier (which pulls the requests from the Java
broker and answers with the reply helper)."""
from __future__ import annotations

import asyncio
import threading

from harness import run_peer, unique_name

from rocketmq_py import codec
from rocketmq_py.client.producer import AsyncProducer, Producer, create_reply_message
from rocketmq_py.common.codes import RequestCode
from rocketmq_py.common.message import Message
from rocketmq_py.remoting import RemotingClient, create_request

COUNT = 3


def test_python_requester_java_replier(java_namesrv, java_broker):
    topic = unique_name("RequestPy")
    with Producer(unique_name("pg"), namesrv_addr=java_namesrv.addr) as producer:
        producer.send(Message(topic, b"creates-the-topic"))
        replier_lines: list[dict] = []
        replier = threading.Thread(target=lambda: replier_lines.extend(run_peer(
            "reply", namesrv=java_namesrv.addr, topic=topic, group=unique_name("replier"), count=COUNT + 1,
            timeout_ms=90000, timeout=150)))
        replier.start()
        replies = []
        for i in range(COUNT):
            request = Message(topic, f"question-{i}".encode(), tags="Req")
            reply = producer.request(request, timeout_ms=30000)
            replies.append((request, reply))
        done = threading.Event()
        async_replies = []
        future = producer.request_async(Message(topic, b"question-async"), timeout_ms=30000,
                                        on_success=lambda r: (async_replies.append(r), done.set()))
        assert future.result(40).body == b"reply:question-async"
        assert done.wait(5) and async_replies[0].body == b"reply:question-async"
        replier.join(150)
    for request, reply in replies:
        assert reply.body == b"reply:" + request.body
        assert reply.properties["CORRELATION_ID"] == request.properties["CORRELATION_ID"]
        assert reply.properties["MSG_TYPE"] == "reply"
        assert reply.topic == f"{java_broker.cluster}_REPLY_TOPIC"
    assert not replier_lines[-1]["timedOut"]


async def _reply_to_requests(replier: AsyncProducer, broker_addr: str, topic: str, want: int,
                             timeout_s: float) -> int:
    """Pull the topic's queues with a bare-bones loop (the Python consumer is another issue) and answer each
    request as soon as it is seen; the Java requester sends its next request only after a reply."""
    remoting = RemotingClient()
    offsets: dict[int, int] = {}
    answered = 0
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    try:
        while answered < want and loop.time() < deadline:
            for queue_id in range(4):
                fields = {"consumerGroup": "py_replier", "topic": topic, "queueId": str(queue_id),
                          "queueOffset": str(offsets.get(queue_id, 0)), "maxMsgNums": "32", "sysFlag": "4",
                          "commitOffset": "0", "suspendTimeoutMillis": "0", "subVersion": "0",
                          "subscription": "*", "expressionType": "TAG"}
                response = await remoting.invoke(broker_addr, create_request(RequestCode.PULL_MESSAGE, fields), 3000)
                if response.code != 0 or not response.body:
                    continue
                offsets[queue_id] = int(response.ext_fields["nextBeginOffset"])
                for request in codec.decode_store_records(response.body):
                    reply = create_reply_message(request, b"py-reply:" + request.body)
                    assert (await replier.send(reply)).ok
                    answered += 1
            await asyncio.sleep(0.1)
    finally:
        await remoting.shutdown()
    return answered


async def test_java_requester_python_replier(java_namesrv, java_broker):
    topic = unique_name("RequestJava")
    requester = asyncio.create_task(asyncio.to_thread(
        run_peer, "request", namesrv=java_namesrv.addr, topic=topic, count=COUNT, timeout_ms=30000, timeout=150))
    async with AsyncProducer(unique_name("replier_pg"), namesrv_addr=java_namesrv.addr) as replier:
        answered = await _reply_to_requests(replier, java_broker.addr, topic, COUNT, 90)
        assert answered == COUNT, f"answered {answered} of {COUNT} requests from the Java requester"
        lines = await requester
    assert [line["request"] for line in lines] == [f"request-{i}" for i in range(COUNT)]
    assert [line["reply"] for line in lines] == [f"py-reply:request-{i}" for i in range(COUNT)]
