"""Orderly consumption (Java's impl/consumer/ConsumeMessageOrderlyService).

One consume task per queue at a time takes the smallest cached offsets in
batches and calls the listener, so a queue is consumed serially, in order.
In clustering the queue must be locked on its broker (the lock is taken by the
rebalance and renewed every 20 s); a task that finds its lock lost or expired
tries to lock again shortly. ``SUSPEND_CURRENT_QUEUE_A_MOMENT`` puts the batch
back and retries it after ``suspend_current_queue_time_millis``; after
``max_reconsume_times`` (no limit by default) the batch is sent to the retry
topic, from where it goes to the dead-letter queue, and the queue moves on.

With a plain-function listener the task runs in a consume thread from its
first batch to its last, results and offsets included, as Java's
ConsumeRequest does; an ``async`` listener's task runs on the event loop.
Either way a per-queue lock keeps two tasks of one queue apart.
"""
from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from rocketmq_py.client.consumer.listener import ConsumeOrderlyContext, ConsumeOrderlyStatus, orderly_status
from rocketmq_py.client.consumer.process_queue import REBALANCE_LOCK_INTERVAL_MS
from rocketmq_py.client.consumer.runner import ThreadRunner
from rocketmq_py.common.clock import now_ms
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

#: Sends one message to the retry topic; False when that failed.
SendBack = Callable[["MessageExt"], bool]


@dataclass
class _QueueRequest:
    process_queue: ProcessQueue
    message_queue: MessageQueue


class ConsumeMessageOrderlyService:
    def __init__(self, consumer: "AsyncPushConsumer", listener: Listener) -> None:
        self.consumer = consumer
        self.config = consumer.config
        self.listener = listener
        self.group = consumer.group
        self.clustering = self.config.message_model is MessageModel.CLUSTERING
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: ThreadRunner[_QueueRequest] | None = None
        # Java's MessageQueueLock: per queue, not per process queue, so that the task of a queue dropped by a
        # rebalance and the task of the same queue taken again never overlap
        self._thread_locks: dict[MessageQueue, threading.Lock] = {}
        self._thread_locks_guard = threading.Lock()
        self._task_locks: dict[MessageQueue, asyncio.Lock] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._lock_task: asyncio.Task[None] | None = None
        self.stopped = False

    @property
    def core_pool_size(self) -> int:
        return self.config.consume_thread_min

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        if not self.listener.is_async:
            self._runner = ThreadRunner(self.config.consume_thread_min, self._consume_in_thread,
                                        f"ConsumeMessageThread_{self.group[:100]}")
        if self.clustering:
            self._lock_task = self._loop.create_task(self._lock_periodically())

    async def shutdown(self, timeout_s: float) -> None:
        self.stopped = True
        if self._lock_task is not None:
            self._lock_task.cancel()
        if self._runner is not None:
            await self._runner.shutdown(timeout_s)
        running = [task for task in self._tasks if not task.done()]
        if running:
            await asyncio.wait(running, timeout=timeout_s)
        for task in self._tasks:
            task.cancel()
        if self.clustering:
            assert self.consumer.rebalance is not None
            await self.consumer.rebalance.unlock_all(oneway=False)

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

    # --- submitting (on the event loop) ------------------------------------------------------------

    def submit(self, messages: list[MessageExt] | None, pq: ProcessQueue, queue: MessageQueue,
               dispatch: bool = True) -> None:
        if not dispatch or self.stopped:
            return
        if self._runner is not None:
            self._runner.submit(_QueueRequest(pq, queue))
        else:
            self._spawn(self._consume_on_loop(pq, queue))

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

    def _on_loop(self, callback: Callable[..., None], *args: Any) -> None:
        """Run ``callback`` on the event loop (from a consume thread or from the loop itself)."""
        assert self._loop is not None
        self._loop.call_soon_threadsafe(callback, *args)

    # --- consuming: what both kinds of task do ---------------------------------------------------------

    def _may_start(self, pq: ProcessQueue, queue: MessageQueue) -> bool:
        """Broadcasting, or the queue is locked on its broker and the lock is fresh; else lock again later."""
        if self.clustering and not (pq.locked and not pq.is_lock_expired()):
            if not pq.dropped:
                self._on_loop(self._try_lock_later_and_reconsume, pq, queue, 100)
            return False
        return True

    def _may_go_on(self, pq: ProcessQueue, queue: MessageQueue, began: float, now: int) -> bool:
        """Whether the task may take another batch (``now``: the wall clock in ms); if not, the queue is rescheduled
        where Java reschedules it."""
        if pq.dropped or self.stopped:
            return False
        if self.clustering and (not pq.locked or pq.is_lock_expired(now)):
            self._on_loop(self._try_lock_later_and_reconsume, pq, queue, 10)
            return False
        if time.monotonic() - began > MAX_TIME_CONSUME_CONTINUOUSLY_S:
            self._on_loop(self._submit_later, pq, queue, 10)
            return False
        return True

    def _first_batch(self, pq: ProcessQueue, queue: MessageQueue, began: float) -> list[MessageExt]:
        """The task's first batch, smallest offsets first; [] when the task stops at once."""
        if not self._may_go_on(pq, queue, began, now_ms()):
            return []
        messages = pq.take_messages(self.config.consume_message_batch_max_size)
        if messages:
            self.consumer.reset_retry_and_namespace(messages)
        return messages

    def _log_listener_error(self, messages: list[MessageExt], context: ConsumeOrderlyContext) -> None:
        _log.warning("the orderly listener of %s raised while consuming %d message(s) of %s; the queue is "
                     "suspended for a moment", self.group, len(messages), context.message_queue, exc_info=True)

    # --- consuming: a task in a consume thread -----------------------------------------------------

    def _thread_lock(self, queue: MessageQueue) -> threading.Lock:
        with self._thread_locks_guard:
            lock = self._thread_locks.get(queue)
            if lock is None:
                lock = self._thread_locks[queue] = threading.Lock()
            return lock

    def _consume_in_thread(self, request: _QueueRequest) -> None:
        """Java's ConsumeRequest.run: the queue's batches in order, until none is left (or a minute passed).

        The task counts as in flight from its first batch to its last (rather than for each listener call, as
        Java's consume lock is held): a rebalance that drops the queue waits for it either way, and the task
        stops at its next batch once the queue is dropped."""
        pq, queue = request.process_queue, request.message_queue
        if pq.dropped:
            return
        with self._thread_lock(queue):
            if not self._may_start(pq, queue):
                return
            pq.requests_submitted(1)
            try:
                self._consume_batches_in_thread(pq, queue)
            finally:
                pq.request_finished()

    def _consume_batches_in_thread(self, pq: ProcessQueue, queue: MessageQueue) -> None:
        began = time.monotonic()
        function = self.listener.function
        messages = self._first_batch(pq, queue, began)
        while messages:
            context = ConsumeOrderlyContext(queue)
            started = time.monotonic()
            has_error = False
            try:
                value = function(messages, context)
            except Exception:
                has_error = True
                value = None
                self._log_listener_error(messages, context)
            if pq.dropped:
                return
            # a status as a listener returns one needs no call to tell (this runs for every batch)
            status = value if value.__class__ is ConsumeOrderlyStatus else orderly_status(value, has_error, self.group)
            rt_ms = (time.monotonic() - started) * 1000.0
            messages = self._process_result(messages, status, context, pq, queue, rt_ms, began,
                                            self._send_back_and_wait)

    def _send_back_and_wait(self, message: MessageExt) -> bool:
        """Java's sendMessageBack of a consume thread: the consume thread waits for it."""
        assert self._loop is not None
        resend = self.consumer.resend_to_retry_topic(message, self._max_reconsume_times(), message.reconsume_times)
        return asyncio.run_coroutine_threadsafe(resend, self._loop).result()

    # --- consuming: a task on the event loop (async listeners) ---------------------------------------

    async def _consume_on_loop(self, pq: ProcessQueue, queue: MessageQueue) -> None:
        if pq.dropped:
            return
        lock = self._task_locks.setdefault(queue, asyncio.Lock())
        async with lock:
            if not self._may_start(pq, queue):
                return
            pq.requests_submitted(1)
            try:
                await self._consume_batches_on_loop(pq, queue)
            finally:
                pq.request_finished()

    async def _consume_batches_on_loop(self, pq: ProcessQueue, queue: MessageQueue) -> None:
        began = time.monotonic()
        messages = self._first_batch(pq, queue, began)
        while messages:
            context = ConsumeOrderlyContext(queue)
            started = time.monotonic()
            has_error = False
            try:
                value = await self.listener.function(messages, context)
            except asyncio.CancelledError:
                raise
            except Exception:
                has_error = True
                value = None
                self._log_listener_error(messages, context)
            if pq.dropped:
                return
            status = orderly_status(value, has_error, self.group)
            rt_ms = (time.monotonic() - started) * 1000.0
            sent_back: dict[int, bool] = {}
            if status is ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT:
                # the messages past their maximum go to the retry topic first, so that the result is then
                # processed as in a consume thread
                for message in messages:
                    if message.reconsume_times >= self._max_reconsume_times():
                        sent_back[id(message)] = await self.consumer.resend_to_retry_topic(
                            message, self._max_reconsume_times(), message.reconsume_times)
            messages = self._process_result(messages, status, context, pq, queue, rt_ms, began,
                                            lambda message: sent_back[id(message)])

    # --- the result -------------------------------------------------------------------------------

    def _process_result(self, messages: list[MessageExt], status: ConsumeOrderlyStatus,
                        context: ConsumeOrderlyContext, pq: ProcessQueue, queue: MessageQueue, rt_ms: float,
                        began: float, send_back: SendBack) -> list[MessageExt]:
        """Java's processConsumeResult, then the head of its loop: the next batch, or [] when the task stops here
        (it was rescheduled). The batch is committed and the next taken under one hold of the queue's lock."""
        commit = False
        keep_going = True
        stats = self.consumer.stats
        suspend = ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        if context.auto_commit:
            if status is suspend:
                stats.consumed(queue.topic, rt_ms, 0, len(messages))
                if self._check_reconsume_times(messages, send_back):
                    pq.make_message_to_consume_again(messages)
                    self._on_loop(self._submit_later, pq, queue, context.suspend_current_queue_time_millis)
                    keep_going = False
                else:
                    commit = True
            else:
                commit = True
                stats.consumed(queue.topic, rt_ms, len(messages), 0)
        else:
            if status is ConsumeOrderlyStatus.SUCCESS:
                stats.consumed(queue.topic, rt_ms, len(messages), 0)
            elif status is ConsumeOrderlyStatus.COMMIT:
                commit = True
            elif status is ConsumeOrderlyStatus.ROLLBACK:
                pq.rollback()
                self._on_loop(self._submit_later, pq, queue, context.suspend_current_queue_time_millis)
                keep_going = False
            elif status is suspend:
                stats.consumed(queue.topic, rt_ms, 0, len(messages))
                if self._check_reconsume_times(messages, send_back):
                    pq.make_message_to_consume_again(messages)
                    self._on_loop(self._submit_later, pq, queue, context.suspend_current_queue_time_millis)
                    keep_going = False
        if status is not ConsumeOrderlyStatus.SUCCESS:
            _log.warning("orderly consumption of %s in %s did not succeed (%s)", queue, self.group, status.value)
        next_batch: list[MessageExt] = []
        commit_offset = -1
        now = now_ms()  # one reading for the lock's age and the queue's last consumption
        if keep_going and self._may_go_on(pq, queue, began, now):
            batch_size = self.config.consume_message_batch_max_size
            if commit:
                commit_offset, next_batch = pq.commit_and_take(batch_size, now)
            else:
                next_batch = pq.take_messages(batch_size)
        elif commit:
            commit_offset = pq.commit()
        if commit_offset >= 0 and not pq.dropped:
            assert self.consumer.offset_store is not None
            self.consumer.offset_store.update_offset(queue, commit_offset, False)
        if next_batch:
            self.consumer.reset_retry_and_namespace(next_batch)
        return next_batch

    def _max_reconsume_times(self) -> int:
        configured = self.config.max_reconsume_times
        return sys.maxsize if configured == -1 else configured

    def _check_reconsume_times(self, messages: list[MessageExt], send_back: SendBack) -> bool:
        """True to suspend (consume again here); messages past the maximum go to the retry topic instead."""
        suspend = False
        for message in messages:
            if message.reconsume_times >= self._max_reconsume_times():
                message.properties["RECONSUME_TIME"] = str(message.reconsume_times)
                if not send_back(message):
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
