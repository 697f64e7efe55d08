"""Concurrent consumption (Java's impl/consumer/ConsumeMessageConcurrentlyService).

Pulled messages are cut into requests of ``consume_message_batch_max_size``
and handed to the listener workers. After a call, the messages it did not
acknowledge are sent back to the broker (CONSUMER_SEND_MSG_BACK: they come
again on the retry topic, and go to the dead-letter queue after the maximum
reconsume times); a message whose send-back failed is consumed again here 5 s
later. Then the acknowledged messages leave the process queue and the queue's
offset moves to the smallest message still cached. A consume thread does all
of this itself, as in Java; only a send-back goes to the event loop.
"""
from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Callable

from rocketmq_py.client.consumer.listener import (
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    concurrently_status,
)
from rocketmq_py.client.consumer.runner import AsyncRunner, ThreadRunner
from rocketmq_py.common.clock import now_ms
from rocketmq_py.common.consumer_body import CMResult, ConsumeMessageDirectlyResult
from rocketmq_py.common.heartbeat_consumer import MessageModel
from rocketmq_py.common.message import MessageConst
from rocketmq_py.common.message_queue import MessageQueue

if TYPE_CHECKING:
    from rocketmq_py.client.consumer.listener import Listener
    from rocketmq_py.client.consumer.process_queue import ProcessQueue
    from rocketmq_py.client.consumer.push import AsyncPushConsumer
    from rocketmq_py.common.message import MessageExt

_log = logging.getLogger(__name__)

RESUBMIT_DELAY_S = 5.0
EXPIRED_MESSAGE_DELAY_LEVEL = 3
_START_TIME = MessageConst.CONSUME_START_TIMESTAMP


@dataclass
class ConsumeRequest:
    messages: list[MessageExt]
    process_queue: ProcessQueue
    message_queue: MessageQueue


class ConsumeMessageConcurrentlyService:
    def __init__(self, consumer: "AsyncPushConsumer", listener: Listener) -> None:
        self.consumer = consumer
        self.config = consumer.config
        self.listener = listener
        self.group = consumer.group
        self._runner: AsyncRunner[ConsumeRequest] | ThreadRunner[ConsumeRequest] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._cleaner: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def core_pool_size(self) -> int:
        return self.config.consume_thread_min

    def start(self) -> None:
        name = f"ConsumeMessageThread_{self.group[:100]}"
        workers = self.config.consume_thread_min
        self._loop = asyncio.get_running_loop()
        if self.listener.is_async:
            self._runner = AsyncRunner(workers, self._consume_async, name)
        else:
            self._runner = ThreadRunner(workers, self._consume_in_thread, name)
        self._cleaner = self._loop.create_task(self._clean_expired_loop())

    async def shutdown(self, timeout_s: float) -> None:
        if self._cleaner is not None:
            self._cleaner.cancel()
        if self._runner is not None:
            await self._runner.shutdown(timeout_s)
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=max(timeout_s, 1.0))

    # --- submitting --------------------------------------------------------------------------------

    def submit(self, messages: list[MessageExt], pq: ProcessQueue, queue: MessageQueue, dispatch: bool = True) -> None:
        assert self._runner is not None
        size = self.config.consume_message_batch_max_size
        if len(messages) <= size:
            requests = [ConsumeRequest(messages, pq, queue)]
        else:
            requests = [ConsumeRequest(messages[start:start + size], pq, queue)
                        for start in range(0, len(messages), size)]
        pq.requests_submitted(len(requests))
        submit = self._runner.submit
        for request in requests:
            submit(request)

    def _submit_later(self, messages: list[MessageExt], pq: ProcessQueue, queue: MessageQueue) -> None:
        loop = asyncio.get_running_loop()
        loop.call_later(RESUBMIT_DELAY_S, self._resubmit, messages, pq, queue)

    def _resubmit(self, messages: list[MessageExt], pq: ProcessQueue, queue: MessageQueue) -> None:
        if self._runner is not None and not pq.dropped:
            self.submit(messages, pq, queue)

    # --- consuming --------------------------------------------------------------------------------

    def _prepare(self, request: ConsumeRequest) -> ConsumeConcurrentlyContext:
        self.consumer.reset_retry_and_namespace(request.messages)
        started = str(now_ms())
        for message in request.messages:
            message.properties[_START_TIME] = started
        return ConsumeConcurrentlyContext(request.message_queue)

    def _consume_in_thread(self, request: ConsumeRequest) -> None:
        """Java's ConsumeRequest.run, in a consume thread: the listener call, then its result."""
        if request.process_queue.dropped:
            request.process_queue.request_finished()
            return
        context = self._prepare(request)
        began = time.monotonic()
        has_error = False
        try:
            value = self.listener.function(request.messages, context)
        except Exception:
            has_error = True
            value = None
            self._log_listener_error(request)
        rt_ms = (time.monotonic() - began) * 1000.0
        self._finish(request, concurrently_status(value, has_error, self.group), context, rt_ms)

    async def _consume_async(self, request: ConsumeRequest) -> None:
        if request.process_queue.dropped:
            request.process_queue.request_finished()
            return
        context = self._prepare(request)
        began = time.monotonic()
        has_error = False
        try:
            value = await self.listener.function(request.messages, context)
        except asyncio.CancelledError:
            raise
        except Exception:
            has_error = True
            value = None
            self._log_listener_error(request)
        rt_ms = (time.monotonic() - began) * 1000.0
        self._finish(request, concurrently_status(value, has_error, self.group), context, rt_ms)

    def _log_listener_error(self, request: ConsumeRequest) -> None:
        _log.warning("the listener of %s raised while consuming %d message(s) of %s; they are consumed again later",
                     self.group, len(request.messages), request.message_queue, exc_info=True)

    def _finish(self, request: ConsumeRequest, status: ConsumeConcurrentlyStatus, context: ConsumeConcurrentlyContext,
                rt_ms: float) -> None:
        """Java's processConsumeResult, where the listener ran: acknowledge, send back the rest, move the offset."""
        pq = request.process_queue
        pq.request_finished()
        messages = request.messages
        if pq.dropped or not messages:
            return
        topic = request.message_queue.topic
        if status is ConsumeConcurrentlyStatus.CONSUME_SUCCESS:
            ack_index = min(context.ack_index, len(messages) - 1)
        else:
            ack_index = -1
        ok = ack_index + 1
        self.consumer.stats.consumed(topic, rt_ms, ok, len(messages) - ok)
        failed = messages[ack_index + 1:]
        if failed and self.config.message_model is MessageModel.CLUSTERING:
            assert self._loop is not None
            self._loop.call_soon_threadsafe(self._spawn, self._send_back_then_commit, request, failed, context)
            return
        if failed:
            for message in failed:
                _log.warning("broadcasting: %s of %s was not consumed and is not retried", message.msg_id, topic)
        self._commit(request, messages)

    def _spawn(self, send_back: Callable[..., Any], *args: Any) -> None:
        task = asyncio.get_running_loop().create_task(send_back(*args))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send_back_then_commit(self, request: ConsumeRequest, failed: list[MessageExt],
                                     context: ConsumeConcurrentlyContext) -> None:
        back_failed = []
        for message in failed:
            if not await self.consumer.send_message_back(message, context.delay_level_when_next_consume,
                                                         context.message_queue.broker_name):
                message.reconsume_times += 1
                back_failed.append(message)
        done = request.messages
        if back_failed:
            failed_ids = {id(message) for message in back_failed}
            done = [message for message in request.messages if id(message) not in failed_ids]
            self._submit_later(back_failed, request.process_queue, request.message_queue)
        self._commit(request, done)

    def _commit(self, request: ConsumeRequest, messages: list[MessageExt]) -> None:
        request.process_queue.remove_consumed(messages, partial(self._move_offset, request))

    def _move_offset(self, request: ConsumeRequest, offset: int) -> None:
        if offset >= 0 and not request.process_queue.dropped:
            assert self.consumer.offset_store is not None
            self.consumer.offset_store.update_offset(request.message_queue, offset, True)

    # --- admin and housekeeping -----------------------------------------------------------------

    async def consume_message_directly(self, message: MessageExt, broker_name: str | None) -> ConsumeMessageDirectlyResult:
        result = ConsumeMessageDirectlyResult(order=False, auto_commit=True)
        queue = MessageQueue(message.topic, broker_name or "", message.queue_id)
        context = ConsumeConcurrentlyContext(queue)
        self.consumer.reset_retry_and_namespace([message])
        began = time.monotonic()
        try:
            value = await self.consumer.call_listener(self.listener, [message], context)
        except Exception as error:
            result.consume_result = CMResult.CR_THROW_EXCEPTION
            result.remark = f"{type(error).__name__}: {error}"
            _log.warning("consume message directly failed for %s", self.group, exc_info=True)
        else:
            if value is ConsumeConcurrentlyStatus.CONSUME_SUCCESS:
                result.consume_result = CMResult.CR_SUCCESS
            elif value is ConsumeConcurrentlyStatus.RECONSUME_LATER:
                result.consume_result = CMResult.CR_LATER
            else:
                result.consume_result = CMResult.CR_RETURN_NULL
        result.spent_time_mills = int((time.monotonic() - began) * 1000)
        return result

    async def _clean_expired_loop(self) -> None:
        period_s = self.config.consume_timeout * 60.0
        while True:
            await asyncio.sleep(period_s)
            try:
                await self.clean_expired_messages()
            except asyncio.CancelledError:
                raise
            except Exception:
                _log.error("cleaning expired messages of %s failed", self.group, exc_info=True)

    async def clean_expired_messages(self) -> None:
        """Messages in consumption longer than ``consume_timeout`` minutes are sent back (delay level 3)."""
        timeout_ms = self.config.consume_timeout * 60_000
        assert self.consumer.rebalance is not None
        for queue, pq in list(self.consumer.rebalance.process_queue_table.items()):
            for _ in range(16):
                message = pq.expired_first(timeout_ms, now_ms())
                if message is None:
                    break
                if not await self.consumer.send_message_back(message, EXPIRED_MESSAGE_DELAY_LEVEL, queue.broker_name):
                    break
                if pq.first_offset() == message.queue_offset:
                    pq.remove_messages([message])
