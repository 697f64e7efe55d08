"""Flushing the store to disk (Java's CommitLog.FlushRealTimeService, GroupCommitService and
DefaultMessageStore.FlushConsumeQueueService).

ASYNC_FLUSH: a thread writes back the CommitLog every ``flushIntervalCommitLog``
ms once ``flushCommitLogLeastPages`` pages are pending (everything every
``flushCommitLogThoroughInterval``). SYNC_FLUSH: a put registers the offset it
needs flushed and waits; the group-commit thread flushes once for every put
that arrived meanwhile and completes them together. Flush work runs on
threads: ``fdatasync`` releases the GIL, so the event loop keeps serving.
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Any, Callable, Iterable

from rocketmq_py.store.checkpoint import StoreCheckpoint
from rocketmq_py.store.config import MessageStoreConfig
from rocketmq_py.store.mapped_file import MappedFileQueue
from rocketmq_py.store.results import PutMessageStatus

_log = logging.getLogger(__name__)

RETRY_TIMES_OVER = 10


class ServiceThread:
    """A daemon thread that runs ``run`` until stopped; ``wakeup`` ends its current wait early."""

    name = "service"

    def __init__(self) -> None:
        self._stopped = threading.Event()
        self._wakeup = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    @property
    def started(self) -> bool:
        return self._thread is not None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._main, name=self.name, daemon=True)
        self._thread.start()

    def _main(self) -> None:
        try:
            self.run()
        except Exception:
            _log.exception("%s stopped on an error", self.name)

    def run(self) -> None:
        raise NotImplementedError

    def wakeup(self) -> None:
        # Every put wakes the flush thread: once it is awake, setting the event again (a lock and a notify)
        # is work for nothing (Java's wakeup is a compare-and-set for the same reason).
        if not self._wakeup.is_set():
            self._wakeup.set()

    def wait_for_running(self, interval_ms: float) -> None:
        self._wakeup.wait(interval_ms / 1000)
        self._wakeup.clear()

    def shutdown(self, timeout_s: float = 30) -> None:
        self._stopped.set()
        self._wakeup.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)


class FlushRealTimeService(ServiceThread):
    name = "FlushRealTimeService"

    def __init__(self, queue: MappedFileQueue, checkpoint: StoreCheckpoint, config: MessageStoreConfig) -> None:
        super().__init__()
        self.queue = queue
        self.checkpoint = checkpoint
        self.config = config
        self._last_thorough = 0.0

    def run(self) -> None:
        while not self.stopped:
            least_pages = self.config.flush_commit_log_least_pages
            now = time.monotonic()
            if now >= self._last_thorough + self.config.flush_commit_log_thorough_interval / 1000:
                self._last_thorough = now
                least_pages = 0
            if self.config.flush_commit_log_timed:
                self._stopped.wait(self.config.flush_interval_commit_log / 1000)
            else:
                self.wait_for_running(self.config.flush_interval_commit_log)
            self._flush(least_pages)
        for _ in range(RETRY_TIMES_OVER):
            if self._flush(0):
                break

    def _flush(self, least_pages: int) -> bool:
        try:
            unchanged = self.queue.flush(least_pages)
        except (OSError, ValueError):
            _log.exception("flushing the CommitLog failed")
            return True
        if self.queue.store_timestamp > 0:
            self.checkpoint.physic_msg_timestamp = self.queue.store_timestamp
        return unchanged


class _Waiter:
    """One put waiting for the CommitLog to be flushed up to ``next_offset``."""

    __slots__ = ("next_offset", "loop", "future")

    def __init__(self, next_offset: int, loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any]) -> None:
        self.next_offset = next_offset
        self.loop = loop
        self.future = future


def _complete(waiters: Iterable[_Waiter], status: PutMessageStatus) -> None:
    for waiter in waiters:
        if not waiter.future.done():
            waiter.future.set_result(status)


class GroupCommitService(ServiceThread):
    name = "GroupCommitService"

    def __init__(self, queue: MappedFileQueue, checkpoint: StoreCheckpoint) -> None:
        super().__init__()
        self.queue = queue
        self.checkpoint = checkpoint
        self._requests: list[_Waiter] = []
        self._lock = threading.Lock()

    def put_request(self, next_offset: int) -> asyncio.Future[Any]:
        """A future, on the running loop, completed with PUT_OK once ``next_offset`` is flushed."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        with self._lock:
            self._requests.append(_Waiter(next_offset, loop, future))
        self.wakeup()
        return future

    def run(self) -> None:
        while not self.stopped:
            self.wait_for_running(10)
            self._do_commit()
        time.sleep(0.01)
        self._do_commit()

    def _do_commit(self) -> None:
        with self._lock:
            requests, self._requests = self._requests, []
        if not requests:
            # Puts that did not ask to wait still get flushed soon.
            self._flush()
            return
        # Each waiter, in the order they came, may take two flushes (its record may be in the next file), as in
        # Java's doCommit: one flush writes one file, so a group commit whose waiters span more files than two
        # still answers each of them PUT_OK.
        flushed: dict[_Waiter, bool] = {}
        for waiter in requests:
            for _ in range(2):
                if self.queue.flushed_where >= waiter.next_offset:
                    break
                self._flush()
            flushed[waiter] = self.queue.flushed_where >= waiter.next_offset
        by_loop: dict[asyncio.AbstractEventLoop, list[_Waiter]] = {}
        for waiter in requests:
            by_loop.setdefault(waiter.loop, []).append(waiter)
        for loop, waiters in by_loop.items():
            done = [w for w in waiters if flushed[w]]
            late = [w for w in waiters if not flushed[w]]
            try:
                if done:
                    loop.call_soon_threadsafe(_complete, done, PutMessageStatus.PUT_OK)
                if late:
                    loop.call_soon_threadsafe(_complete, late, PutMessageStatus.FLUSH_DISK_TIMEOUT)
            except RuntimeError:  # the loop is closed: nobody waits any more
                pass

    def _flush(self) -> None:
        try:
            self.queue.flush(0)
        except (OSError, ValueError):
            _log.exception("flushing the CommitLog failed")
            return
        if self.queue.store_timestamp > 0:
            self.checkpoint.physic_msg_timestamp = self.queue.store_timestamp


class FlushConsumeQueueService(ServiceThread):
    name = "FlushConsumeQueueService"

    def __init__(self, config: MessageStoreConfig, checkpoint: StoreCheckpoint,
                 consume_queues: Callable[[], list[Any]], flush_index: Callable[[], None]) -> None:
        super().__init__()
        self.config = config
        self.checkpoint = checkpoint
        self.consume_queues = consume_queues
        self.flush_index = flush_index
        self._last_thorough = 0.0

    def run(self) -> None:
        while not self.stopped:
            self.wait_for_running(self.config.flush_interval_consume_queue)
            self.do_flush(1)
        self.do_flush(3)

    def do_flush(self, retry_times: int) -> None:
        least_pages = 0 if retry_times == 3 else self.config.flush_consume_queue_least_pages
        logics_timestamp = 0
        now = time.monotonic()
        if now >= self._last_thorough + self.config.flush_consume_queue_thorough_interval / 1000:
            self._last_thorough = now
            least_pages = 0
            logics_timestamp = self.checkpoint.logics_msg_timestamp
        for consume_queue in self.consume_queues():
            for _ in range(retry_times):
                try:
                    if consume_queue.flush(least_pages):
                        break
                except (OSError, ValueError):
                    _log.exception("flushing %s-%d failed", consume_queue.topic, consume_queue.queue_id)
                    break
        if least_pages == 0:
            try:
                self.flush_index()
            except (OSError, ValueError):
                _log.exception("flushing the index failed")
            if logics_timestamp > 0:
                self.checkpoint.logics_msg_timestamp = logics_timestamp
            self.checkpoint.flush()
