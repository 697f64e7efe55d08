"""The replier's side of request-reply (Java's MessageUtil.createReplyMessage); the requester's side is
:meth:`AsyncProducer.request` and :mod:`rocketmq_py.client.reply`.

A request message carries CORRELATION_ID, REPLY_TO_CLIENT (the requester's
client id) and TTL. The replier answers with :func:`create_reply_message` to
``<cluster>_REPLY_TOPIC``; the broker pushes that reply to the requester's
connection (code 326), where the pending future of its correlation id ends.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from rocketmq_py.common.message import Message, MessageConst
from rocketmq_py.common.topic import REPLY_MESSAGE_FLAG, reply_topic
from rocketmq_py.errors import ReplyMessageError

if TYPE_CHECKING:
    from rocketmq_py.client.producer.core import AsyncProducer
    from rocketmq_py.client.producer.result import SendResult


def create_reply_message(request: Message, body: bytes) -> Message:
    """The reply to a request message a consumer received (Java's MessageUtil.createReplyMessage)."""
    if request is None:
        raise ReplyMessageError("cannot create a reply: the request message is None")
    cluster = request.properties.get(MessageConst.CLUSTER)
    if cluster is None:
        raise ReplyMessageError(
            "cannot create a reply: the request message has no CLUSTER property; reply only to messages "
            "received from a broker"
        )
    reply = Message(reply_topic(cluster), body)
    reply.properties[MessageConst.MESSAGE_TYPE] = REPLY_MESSAGE_FLAG
    for name in (MessageConst.CORRELATION_ID, MessageConst.MESSAGE_REPLY_TO_CLIENT, MessageConst.MESSAGE_TTL):
        value = request.properties.get(name)
        if value is not None:
            reply.properties[name] = value
    return reply


async def send_reply(producer: "AsyncProducer", request: Message, body: bytes,
                     timeout_ms: float | None = None) -> "SendResult":
    """Create the reply to ``request`` and send it with ``producer`` (the consumer-side helper)."""
    return await producer.send(create_reply_message(request, body), timeout_ms=timeout_ms)
