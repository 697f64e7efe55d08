"""Request-reply (Java's RequestFutureHolder, RequestResponseFuture, MessageUtil.createReplyMessage and the
PUSH_REPLY_MESSAGE_TO_CLIENT half of ClientRemotingProcessor).

A request message carries CORRELATION_ID, REPLY_TO_CLIENT (the requester's
client id) and TTL. The replier answers with :func:`create_reply_message` to
``<cluster>_REPLY_TOPIC``; the broker pushes that reply to the requester's
connection (code 326), where the pending future of its correlation id ends.
"""
from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import TYPE_CHECKING

from rocketmq_py import codec
from rocketmq_py.common import sysflag
from rocketmq_py.common.codes import ResponseCode
from rocketmq_py.common.headers.send import ReplyMessageRequestHeader
from rocketmq_py.common.message import Message, MessageConst, MessageExt
from rocketmq_py.common.topic import REPLY_MESSAGE_FLAG, reply_topic
from rocketmq_py.errors import ReplyMessageError
from rocketmq_py.remoting.command import RemotingCommand, create_response
from rocketmq_py.remoting.processor import RequestContext

if TYPE_CHECKING:
    from rocketmq_py.client.producer.core import AsyncProducer
    from rocketmq_py.client.producer.result import SendResult

_log = logging.getLogger(__name__)


def new_correlation_id() -> str:
    return str(uuid.uuid4())


class ReplyFutures:
    """The requests of one client instance that wait for their replies, by correlation id."""

    def __init__(self) -> None:
        self.waiting: dict[str, asyncio.Future[MessageExt]] = {}

    def expect(self, correlation_id: str) -> "asyncio.Future[MessageExt]":
        future: asyncio.Future[MessageExt] = asyncio.get_running_loop().create_future()
        self.waiting[correlation_id] = future
        return future

    def forget(self, correlation_id: str) -> None:
        self.waiting.pop(correlation_id, None)

    def process(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        """PUSH_REPLY_MESSAGE_TO_CLIENT: build the reply message and end the request waiting for it."""
        received_ms = time.time_ns() // 1_000_000
        try:
            message = decode_reply(request, received_ms)
        except Exception as error:
            _log.warning("a reply from %s could not be read: %s", ctx.remote_address, error)
            return create_response(request, ResponseCode.SYSTEM_ERROR, "process reply message fail")
        correlation_id = message.properties.get(MessageConst.CORRELATION_ID, "")
        future = self.waiting.pop(correlation_id, None)
        if future is None:
            _log.warning("a reply for correlation id %s from %s matched no request", correlation_id,
                         message.born_host)
        elif not future.done():
            future.set_result(message)
        return create_response(request, ResponseCode.SUCCESS)


def decode_reply(request: RemotingCommand, received_ms: int) -> MessageExt:
    header = ReplyMessageRequestHeader.from_ext_fields(request.ext_fields)
    body = request.body or b""
    if header.sys_flag & sysflag.COMPRESSED_FLAG:
        body = codec.decompress(body, codec.compression_type(header.sys_flag))
    message = MessageExt(header.topic, body)
    message.queue_id = header.queue_id
    message.store_timestamp = header.store_timestamp
    message.born_timestamp = header.born_timestamp
    message.born_host = header.born_host
    message.store_host = header.store_host
    message.flag = header.flag
    message.sys_flag = header.sys_flag
    message.reconsume_times = header.reconsume_times or 0
    message.properties = codec.string_to_properties(header.properties)
    message.properties[MessageConst.REPLY_MESSAGE_ARRIVE_TIME] = str(received_ms)
    return message


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
