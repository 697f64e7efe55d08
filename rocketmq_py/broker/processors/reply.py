"""SEND_REPLY_MESSAGE (324) and SEND_REPLY_MESSAGE_V2 (325) (Java's broker/processor/ReplyMessageProcessor).

A reply is pushed to the requester named by its REPLY_TO_CLIENT property with
PUSH_REPLY_MESSAGE_TO_CLIENT over that client's connection, and stored too
when ``storeReplyMessageEnable``. The answer tells whether the push worked.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from rocketmq_py import codec
from rocketmq_py.broker.queue_choice import random_queue_id
from rocketmq_py.common.clock import now_ms
from rocketmq_py.common.codes import RequestCode, ResponseCode
from rocketmq_py.common.headers.send import (
    ReplyMessageRequestHeader,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
)
from rocketmq_py.common.message import MessageConst
from rocketmq_py.remoting import ProcessorTable, RemotingCommand, RequestContext, create_request
from rocketmq_py.store import StoreMessage

if TYPE_CHECKING:
    from rocketmq_py.broker.controller import BrokerController

_log = logging.getLogger(__name__)

PUSH_TIMEOUT_MS = 10_000


class ReplyMessageProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register_into(self, table: ProcessorTable) -> None:
        table.register(RequestCode.SEND_REPLY_MESSAGE, self.reply)
        table.register(RequestCode.SEND_REPLY_MESSAGE_V2, self.reply)

    async def reply(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        if request.code == RequestCode.SEND_REPLY_MESSAGE:
            header: SendMessageRequestHeader | SendMessageRequestHeaderV2 = \
                SendMessageRequestHeader.from_command(request)
        else:
            header = SendMessageRequestHeaderV2.from_command(request)
        broker = self.broker
        send = broker.send_processor
        topic_config, refusal = send.check_send(ctx, request, header)
        if refusal is not None:
            return refusal
        assert topic_config is not None
        queue_id = header.queue_id if header.queue_id >= 0 else random_queue_id(topic_config.write_queue_nums)
        properties = codec.string_to_properties(header.properties)
        pushed, remark = await self._push(ctx, header, properties, request.body or b"")
        if pushed:
            response = send.send_response(request, ResponseCode.SUCCESS, None,
                                      SendMessageResponseHeader(msg_id="0", queue_id=queue_id, queue_offset=0))
        else:
            response = send.send_response(request, ResponseCode.SYSTEM_ERROR, remark)
        if broker.config.store_reply_message_enable:
            message = StoreMessage(
                topic=header.topic, body=request.body or b"", queue_id=queue_id, flag=header.flag,
                properties=properties, sys_flag=header.sys_flag, born_timestamp=header.born_timestamp,
                born_host=ctx.remote_address, store_host=broker.store_host,
                reconsume_times=header.reconsume_times or 0, properties_string=header.properties or "",
            )
            result = await broker.store.put_message(message)
            if not result.is_ok:
                _log.warning("storing the reply message for %s failed: %s", header.topic, result.status.name)
        return response

    async def _push(self, ctx: RequestContext, header: SendMessageRequestHeader | SendMessageRequestHeaderV2,
                    properties: dict[str, str], body: bytes) -> tuple[bool, str | None]:
        sender = properties.get(MessageConst.MESSAGE_REPLY_TO_CLIENT)
        if sender is None:
            return False, f"reply message properties[{MessageConst.MESSAGE_REPLY_TO_CLIENT}] is null"
        connection = self.broker.producers.find_connection(sender)
        if connection is None:
            return False, f"push reply message fail, channel of <{sender}> not found."
        pushed = dict(properties)
        pushed[MessageConst.PUSH_REPLY_TIME] = str(now_ms())
        push_header = ReplyMessageRequestHeader(
            producer_group=header.producer_group, topic=header.topic, default_topic=header.default_topic,
            default_topic_queue_nums=header.default_topic_queue_nums, queue_id=header.queue_id,
            sys_flag=header.sys_flag, born_timestamp=header.born_timestamp, flag=header.flag,
            properties=codec.properties_to_string(pushed), reconsume_times=header.reconsume_times,
            unit_mode=header.unit_mode, born_host=ctx.remote_address, store_host=self.broker.store_host,
            store_timestamp=now_ms(),
        )
        request = create_request(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, push_header.to_ext_fields(), body)
        try:
            answer = await self.broker.server.invoke(connection, request, PUSH_TIMEOUT_MS)
        except Exception as error:
            _log.warning("pushing a reply message to %s failed: %s", sender, error)
            return False, f"push reply message to {sender}fail."
        if answer.code != ResponseCode.SUCCESS:
            _log.warning("pushing a reply message to %s was refused: %s", sender, answer.remark)
            return False, f"push reply message to {sender}fail."
        return True, None
