"""Message trace for producers (Java's AsyncTraceDispatcher and SendMessageTraceHookImpl).

Each successful send adds a Pub record; a background task gathers the
records and sends them, as Java does, in messages to the trace topic
(RMQ_SYS_TRACE_TOPIC unless ``custom_trace_topic``) through an internal
producer, keyed by the traced message ids and keys.
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from rocketmq_py.common.clock import now_ms
from rocketmq_py.common.message import Message, MessageConst
from rocketmq_py.common.message_queue import MessageQueue
from rocketmq_py.common.topic import RMQ_SYS_TRACE_TOPIC
from rocketmq_py.common.trace import (
    TRACE_GROUP_PREFIX,
    TRACE_INSTANCE_NAME,
    TraceBean,
    TraceContext,
    TraceMessageType,
    TraceType,
    encode_trace,
)

if TYPE_CHECKING:
    from rocketmq_py.client.producer.core import AsyncProducer
    from rocketmq_py.client.producer.result import SendResult

_log = logging.getLogger(__name__)

BATCH_SIZE = 100
MAX_MESSAGE_SIZE = 128_000
QUEUE_LIMIT = 2048
SEND_TIMEOUT_MS = 5000


def message_type(message: Message) -> TraceMessageType:
    if message.properties.get(MessageConst.TRANSACTION_PREPARED) == "true":
        return TraceMessageType.Trans_Msg_Half
    if MessageConst.DELAY_TIME_LEVEL in message.properties or MessageConst.START_DELIVER_TIME in message.properties:
        return TraceMessageType.Delay_Msg
    return TraceMessageType.Normal_Msg


class TraceDispatcher:
    """Sends the trace records of one producer's sends to the trace topic, through a producer of its own."""

    def __init__(self, producer: "AsyncProducer", producer_class: "type[AsyncProducer]") -> None:
        # The class comes from the caller: importing the producer module here would make an import cycle.
        config = producer.config
        self.owner = producer
        self.topic = config.custom_trace_topic or RMQ_SYS_TRACE_TOPIC
        self.group_name = config.producer_group
        self.producer = producer_class(
            f"{TRACE_GROUP_PREFIX}-{config.producer_group}",
            namesrv_addr=config.namesrv_addr, instance_name=f"{TRACE_INSTANCE_NAME}_{id(self)}",
            client_ip=config.client_ip, access_key=config.access_key, secret_key=config.secret_key,
            security_token=config.security_token, serialize_type=config.serialize_type,
            send_msg_timeout=SEND_TIMEOUT_MS, max_message_size=MAX_MESSAGE_SIZE * 2,
            use_tls=config.use_tls, tls_config=config.tls_config,
        )
        self.queue: asyncio.Queue[TraceContext | None] = asyncio.Queue(QUEUE_LIMIT)
        self._worker: asyncio.Task[None] | None = None
        self.dropped = 0

    async def start(self) -> None:
        await self.producer.start()
        self._worker = asyncio.get_running_loop().create_task(self._run())
        self.owner.send_hooks.append(self.on_send)

    def on_send(self, message: Message, queue: MessageQueue, addr: str, result: "SendResult | None",
                error: BaseException | None, cost_ms: float) -> None:
        if result is None or not result.trace_on or queue.topic == self.topic:
            return
        now = now_ms()
        bean = TraceBean(
            topic=self.owner.config.without_namespace(queue.topic), msg_id=result.msg_id,
            offset_msg_id=result.offset_msg_id, tags=message.tags, keys=message.keys, store_host=addr,
            body_length=len(message.body), msg_type=message_type(message),
        )
        context = TraceContext(TraceType.Pub, int(now - cost_ms), result.region_id, self.group_name,
                               cost_time=int(cost_ms), success=result.ok, beans=[bean])
        try:
            self.queue.put_nowait(context)
        except asyncio.QueueFull:
            self.dropped += 1

    async def _run(self) -> None:
        while True:
            first = await self.queue.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < BATCH_SIZE and not self.queue.empty():
                item = self.queue.get_nowait()
                if item is None:
                    await self._send(batch)
                    return
                batch.append(item)
            await self._send(batch)

    async def _send(self, contexts: list[TraceContext]) -> None:
        data: list[str] = []
        keys: list[str] = []
        size = 0
        for context in contexts:
            text, context_keys = encode_trace(context)
            data.append(text)
            keys.extend(context_keys)
            size += len(text)
            if size >= MAX_MESSAGE_SIZE:
                await self._send_one("".join(data), keys)
                data, keys, size = [], [], 0
        if data:
            await self._send_one("".join(data), keys)

    async def _send_one(self, data: str, keys: list[str]) -> None:
        message = Message(self.topic, data.encode("utf-8"), keys=list(dict.fromkeys(k for k in keys if k)))
        try:
            await self.producer.send(message)
        except Exception as error:
            _log.warning("sending message trace to %s failed: %s", self.topic, error)

    async def shutdown(self) -> None:
        if self.on_send in self.owner.send_hooks:
            self.owner.send_hooks.remove(self.on_send)
        if self._worker is not None:
            await self.queue.put(None)
            await asyncio.wait({self._worker}, timeout=SEND_TIMEOUT_MS / 1000)
            self._worker.cancel()
        await self.producer.shutdown()
