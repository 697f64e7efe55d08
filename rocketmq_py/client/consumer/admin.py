"""The broker's requests to consumers (the consumer half of Java's impl/ClientRemotingProcessor):
NOTIFY_CONSUMER_IDS_CHANGED, RESET_CONSUMER_CLIENT_OFFSET, GET_CONSUMER_STATUS_FROM_CLIENT,
GET_CONSUMER_RUNNING_INFO and CONSUME_MESSAGE_DIRECTLY. The last four are what ``mqadmin consumerStatus``,
``resetOffsetByTime`` and ``consumeMessage`` reach a consumer with."""
from __future__ import annotations

import asyncio
import logging
import sys
import threading
import traceback
from typing import TYPE_CHECKING

from rocketmq_py import codec
from rocketmq_py.common import consumer_body
from rocketmq_py.common.codes import RequestCode, ResponseCode
from rocketmq_py.common.headers.consumer import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
    NotifyConsumerIdsChangedRequestHeader,
    ResetOffsetRequestHeader,
)
from rocketmq_py.remoting.command import RemotingCommand, create_response
from rocketmq_py.remoting.protocol import RequestContext

if TYPE_CHECKING:
    from rocketmq_py.client.instance import MQClientInstance

_log = logging.getLogger(__name__)


def python_stacks() -> str:
    """Every thread's stack, the Python counterpart of the jstack Java adds on request."""
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    parts = []
    for ident, frame in sys._current_frames().items():
        parts.append(f'"{names.get(ident, ident)}"\n' + "".join(traceback.format_stack(frame)))
    return "\n".join(parts)


class ConsumerRequestProcessors:
    """Answers the consumer requests for every consumer registered in one client instance."""

    def __init__(self, instance: "MQClientInstance") -> None:
        self.instance = instance
        self._resets: set[asyncio.Task[None]] = set()

    def register(self) -> None:
        processors = self.instance.processors
        processors.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, self.notify_consumer_ids_changed)
        processors.register(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, self.reset_offset)
        processors.register(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, self.get_consumer_status)
        processors.register(RequestCode.GET_CONSUMER_RUNNING_INFO, self.get_consumer_running_info)
        processors.register(RequestCode.CONSUME_MESSAGE_DIRECTLY, self.consume_message_directly)

    def notify_consumer_ids_changed(self, ctx: RequestContext, request: RemotingCommand) -> None:
        header = NotifyConsumerIdsChangedRequestHeader.from_command(request)
        _log.info("the consumers of %s changed (notice from %s); rebalancing", header.consumer_group,
                  ctx.remote_address)
        for consumer in list(self.instance.consumers.values()):
            consumer.rebalance_soon()
        return None

    def reset_offset(self, ctx: RequestContext, request: RemotingCommand) -> None:
        header = ResetOffsetRequestHeader.from_command(request)
        offsets = consumer_body.decode_reset_offset_body(request.body)
        _log.info("reset offset of %s for topic %s to timestamp %d requested by %s", header.group, header.topic,
                  header.timestamp, ctx.remote_address)
        consumer = self.instance.consumers.get(header.group)
        if consumer is not None:
            task = asyncio.get_running_loop().create_task(consumer.reset_offset(header.topic, offsets))
            self._resets.add(task)
            task.add_done_callback(self._resets.discard)
        return None

    def get_consumer_status(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = GetConsumerStatusRequestHeader.from_command(request)
        consumer = self.instance.consumers.get(header.group)
        table = consumer.consumer_status(header.topic) if consumer is not None else {}
        return create_response(request, ResponseCode.SUCCESS, body=consumer_body.encode_consumer_status_body(table))

    async def get_consumer_running_info(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = GetConsumerRunningInfoRequestHeader.from_command(request)
        consumer = self.instance.consumers.get(header.consumer_group)
        if consumer is None:
            return create_response(request, ResponseCode.SYSTEM_ERROR,
                                   f"The Consumer Group <{header.consumer_group}> not exist in this consumer")
        info = await consumer.consumer_running_info()
        if header.jstack_enable:
            info.jstack = python_stacks()
        return create_response(request, ResponseCode.SUCCESS, body=info.encode())

    async def consume_message_directly(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = ConsumeMessageDirectlyResultRequestHeader.from_command(request)
        consumer = self.instance.consumers.get(header.consumer_group)
        messages = codec.decode_store_records(request.body or b"", strict=False)
        result = None
        if consumer is not None and messages:
            result = await consumer.consume_message_directly(messages[0], header.broker_name)
        if result is None:
            return create_response(request, ResponseCode.SYSTEM_ERROR,
                                   f"The Consumer Group <{header.consumer_group}> not exist in this consumer")
        return create_response(request, ResponseCode.SUCCESS, body=result.encode())


def register_consumer_processors(instance: "MQClientInstance") -> ConsumerRequestProcessors:
    processors = ConsumerRequestProcessors(instance)
    processors.register()
    return processors
