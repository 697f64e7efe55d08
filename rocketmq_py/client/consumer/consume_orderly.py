"""Orderly consumption (Java's impl/consumer/ConsumeMessageOrderlyService).

One consume task per queue at a time takes the smallest cached offsets in
batches and calls the listener, so a queue is consumed serially, in order.
In clustering the queue must be locked on its broker (the lock is taken by the
rebalance and renewed every 20 s); a task that finds its lock lost or expired
tries to lock again shortly. ``SUSPEND_CURRENT_QUEUE_A_MOMENT`` puts the batch
back and retries it after ``suspend_current_queue_time_millis``; after
``max_reconsume_times`` (no limit by default) the batch is sent to the retry
topic, from where it goes to the dead-letter queue, and the queue moves on.
"""
from __future__ import annotations

import asyncio
import logging
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from rocketmq_py.client.consumer.listener import ConsumeOrderlyContext, ConsumeOrderlyStatus, orderly_status
from rocketmq_py.client.consumer.process_queue import REBALANCE_LOCK_INTERVAL_MS
from rocketmq_py.common.consumer_body import CMResult, ConsumeMessageDirectlyResult
from rocketmq_py.common.heartbeat_consumer import MessageModel
from rocketmq_py.common.message_queue import MessageQueue

if TYPE_CHECKING:
    from rocketmq_py.client.consumer.listener import Listener
    from rocketmq_py.client.consumer.process_queue import ProcessQueue
    from rocketmq_py.client.consumer.push import AsyncPushConsumer
    from rocketmq_py.common.message import MessageExt

_log = logging.getLogger(__name__)

#: Java's rocketmq.client.maxTimeConsumeContinuously: a queue yields to others after this long.
MAX_TIME_CONSUME_CONTINUOUSLY_S = 60.0
INITIAL_LOCK_DELAY_S = 1.0


class ConsumeMessageOrderlyService:
    def __init__(self, consumer: "AsyncPushConsumer", listener: Listener) -> None:
        self.consumer = consumer
        self.config = consumer.config
        self.listener = listener
        self.group = consumer.group
        self.clustering = self.config.message_model is MessageModel.CLUSTERING
        self._executor: ThreadPoolExecutor | None = None
        self._queue_locks: dict[MessageQueue, asyncio.Lock] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._lock_task: asyncio.Task[None] | None = None
        self.stopped = False
        self.active = 0

    @property
    def core_pool_size(self) -> int:
        return self.config.consume_thread_min

    def start(self) -> None:
        if not self.listener.is_async:
            self._executor = ThreadPoolExecutor(self.config.consume_thread_min,
                                                thread_name_prefix=f"ConsumeMessageThread_{self.group[:100]}")
        if self.clustering:
            self._lock_task = asyncio.get_running_loop().create_task(self._lock_periodically())

    async def shutdown(self, timeout_s: float) -> None:
        self.stopped = True
        if self._lock_task is not None:
            self._lock_task.cancel()
        running = [task for task in self._tasks if not task.done()]
        if running:
            await asyncio.wait(running, timeout=timeout_s)
        for task in self._tasks:
            task.cancel()
        if self._executor is not None:
            self._executor.shutdown(wait=False)
        if self.clustering:
            assert self.consumer.rebalance is not None
            await self.consumer.rebalance.unlock_all(oneway=False)

    def busy(self) -> int:
        return self.active

    async def _lock_periodically(self) -> None:
        await asyncio.sleep(INITIAL_LOCK_DELAY_S)
        while not self.stopped:
            try:
                assert self.consumer.rebalance is not None
                await self.consumer.rebalance.lock_all()
            except asyncio.CancelledError:
                raise
            except Exception:
                _log.error("renewing the queue locks of %s failed", self.group, exc_info=True)
            await asyncio.sleep(REBALANCE_LOCK_INTERVAL_MS / 1000.0)

    # --- submitting --------------------------------------------------------------------------------

    def submit(self, messages: list[MessageExt] | None, pq: ProcessQueue, queue: MessageQueue,
               dispatch: bool = True) -> None:
        if dispatch and not self.stopped:
            self._spawn(self._consume_queue(pq, queue))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _submit_later(self, pq: ProcessQueue, queue: MessageQueue, delay_ms: int) -> None:
        if delay_ms == -1:
            delay_ms = self.config.suspend_current_queue_time_millis
        delay_ms = min(max(delay_ms, 10), 30_000)
        asyncio.get_running_loop().call_later(delay_ms / 1000.0, self.submit, None, pq, queue, True)

    def _try_lock_later_and_reconsume(self, pq: ProcessQueue, queue: MessageQueue, delay_ms: int) -> None:
        async def relock() -> None:
            await asyncio.sleep(delay_ms / 1000.0)
            rebalance = self.consumer.rebalance
            locked = not self.stopped and rebalance is not None and await rebalance.lock(queue)
            self._submit_later(pq, queue, 10 if locked else 3000)

        self._spawn(relock())

    # --- consuming --------------------------------------------------------------------------------

    async def _consume_queue(self, pq: ProcessQueue, queue: MessageQueue) -> None:
        if pq.dropped:
            return
        lock = self._queue_locks.setdefault(queue, asyncio.Lock())
        async with lock:
            if self.clustering and not (pq.locked and not pq.is_lock_expired()):
                if not pq.dropped:
                    self._try_lock_later_and_reconsume(pq, queue, 100)
                return
            began = time.monotonic()
            while not pq.dropped and not self.stopped:
                if self.clustering and (not pq.locked or pq.is_lock_expired()):
                    self._try_lock_later_and_reconsume(pq, queue, 10)
                    return
                if time.monotonic() - began > MAX_TIME_CONSUME_CONTINUOUSLY_S:
                    self._submit_later(pq, queue, 10)
                    return
                messages = pq.take_messages(self.config.consume_message_batch_max_size)
                if not messages:
                    return
                self.consumer.reset_retry_and_namespace(messages)
                context = ConsumeOrderlyContext(queue)
                started = time.monotonic()
                self.active += 1
                pq.in_flight += 1
                try:
                    value, has_error = await self._call(messages, context)
                finally:
                    self.active -= 1
                    pq.in_flight -= 1
                if pq.dropped:
                    return
                status = orderly_status(value, has_error, self.group)
                if status is not ConsumeOrderlyStatus.SUCCESS:
                    _log.warning("orderly consumption of %s in %s did not succeed (%s)", queue, self.group,
                                 status.value)
                rt_ms = (time.monotonic() - started) * 1000.0
                if not await self._process_result(messages, status, context, pq, queue, rt_ms):
                    return

    async def _call(self, messages: list[MessageExt], context: ConsumeOrderlyContext) -> tuple[Any, bool]:
        try:
            if self.listener.is_async:
                return await self.listener.function(messages, context), False
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._executor, self.listener.function, messages, context), False
        except asyncio.CancelledError:
            raise
        except Exception:
            _log.warning("the orderly listener of %s raised while consuming %d message(s) of %s; the queue is "
                         "suspended for a moment", self.group, len(messages), context.message_queue, exc_info=True)
            return None, True

    async def _process_result(self, messages: list[MessageExt], status: ConsumeOrderlyStatus,
                              context: ConsumeOrderlyContext, pq: ProcessQueue, queue: MessageQueue,
                              rt_ms: float) -> bool:
        """Java's processConsumeResult; False when the queue's task should stop (it was rescheduled)."""
        commit_offset = -1
        keep_going = True
        stats = self.consumer.stats
        suspend = ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        if context.auto_commit:
            if status is suspend:
                stats.consumed(queue.topic, rt_ms, 0, len(messages))
                if await self._check_reconsume_times(messages):
                    pq.make_message_to_consume_again(messages)
                    self._submit_later(pq, queue, context.suspend_current_queue_time_millis)
                    keep_going = False
                else:
                    commit_offset = pq.commit()
            else:
                commit_offset = pq.commit()
                stats.consumed(queue.topic, rt_ms, len(messages), 0)
        else:
            if status is ConsumeOrderlyStatus.SUCCESS:
                stats.consumed(queue.topic, rt_ms, len(messages), 0)
            elif status is ConsumeOrderlyStatus.COMMIT:
                commit_offset = pq.commit()
            elif status is ConsumeOrderlyStatus.ROLLBACK:
                pq.rollback()
                self._submit_later(pq, queue, context.suspend_current_queue_time_millis)
                keep_going = False
            elif status is suspend:
                stats.consumed(queue.topic, rt_ms, 0, len(messages))
                if await self._check_reconsume_times(messages):
                    pq.make_message_to_consume_again(messages)
                    self._submit_later(pq, queue, context.suspend_current_queue_time_millis)
                    keep_going = False
        if commit_offset >= 0 and not pq.dropped:
            assert self.consumer.offset_store is not None
            self.consumer.offset_store.update_offset(queue, commit_offset, False)
        return keep_going

    def _max_reconsume_times(self) -> int:
        configured = self.config.max_reconsume_times
        return sys.maxsize if configured == -1 else configured

    async def _check_reconsume_times(self, messages: list[MessageExt]) -> bool:
        """True to suspend (consume again here); messages past the maximum go to the retry topic instead."""
        suspend = False
        for message in messages:
            if message.reconsume_times >= self._max_reconsume_times():
                message.properties["RECONSUME_TIME"] = str(message.reconsume_times)
                if not await self.consumer.resend_to_retry_topic(message, self._max_reconsume_times(),
                                                                 message.reconsume_times):
                    suspend = True
                    message.reconsume_times += 1
            else:
                suspend = True
                message.reconsume_times += 1
        return suspend

    async def consume_message_directly(self, message: MessageExt, broker_name: str | None) -> ConsumeMessageDirectlyResult:
        result = ConsumeMessageDirectlyResult(order=True)
        context = ConsumeOrderlyContext(MessageQueue(message.topic, broker_name or "", message.queue_id))
        self.consumer.reset_retry_and_namespace([message])
        began = time.monotonic()
        try:
            value = await self.consumer.call_listener(self.listener, [message], context)
        except Exception as error:
            result.consume_result = CMResult.CR_THROW_EXCEPTION
            result.remark = f"{type(error).__name__}: {error}"
        else:
            result.consume_result = {
                ConsumeOrderlyStatus.COMMIT: CMResult.CR_COMMIT,
                ConsumeOrderlyStatus.ROLLBACK: CMResult.CR_ROLLBACK,
                ConsumeOrderlyStatus.SUCCESS: CMResult.CR_SUCCESS,
                ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT: CMResult.CR_LATER,
            }.get(value, CMResult.CR_RETURN_NULL)
        result.auto_commit = context.auto_commit
        result.spent_time_mills = int((time.monotonic() - began) * 1000)
        return result
