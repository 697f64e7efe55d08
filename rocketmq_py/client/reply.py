"""Replies pushed to a requester (the PUSH_REPLY_MESSAGE_TO_CLIENT half of Java's ClientRemotingProcessor and
RequestFutureHolder): the pending requests of one client instance, by correlation id."""
from __future__ import annotations

import asyncio
import logging
import uuid

from rocketmq_py import codec
from rocketmq_py.common import sysflag
from rocketmq_py.common.clock import now_ms
from rocketmq_py.common.codes import ResponseCode
from rocketmq_py.common.headers.send import ReplyMessageRequestHeader
from rocketmq_py.common.message import MessageConst, MessageExt
from rocketmq_py.remoting.command import RemotingCommand, create_response
from rocketmq_py.remoting.protocol import RequestContext

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
        received_ms = now_ms()
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
    header = ReplyMessageRequestHeader.from_command(request)
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
