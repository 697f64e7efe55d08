"""RocketMQ access for the Spark source and sink: route and offset look-ups, pipelined range pulls.

Spark runs the source's methods in plain (non-async) Python processes: the planner and the
streaming runner on the driver, pooled workers on the executors. Each process keeps one
:class:`Session` per set of client settings; its coroutines all run on the process's one
event loop (:mod:`rocketmq_py.spark.runtime`), which keeps running between calls so that a
connection a server closes is dropped at once. Workers are reused, so connections survive
across tasks.
"""
from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import logging
import os
import re
import threading
from typing import TYPE_CHECKING, Any, Coroutine, Iterator, NamedTuple, TypeVar

from rocketmq_py import codec
from rocketmq_py.client.api import MQClientAPI
from rocketmq_py.common.acl import SessionCredentials
from rocketmq_py.common.codes import ResponseCode
from rocketmq_py.common.headers.pull import (
    RETRY_PAST_REMOVED,
    RETRY_PAST_UNMATCHED,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    build_pull_sys_flag,
)
from rocketmq_py.common.message import MessageExt
from rocketmq_py.common.message_queue import MessageQueue
from rocketmq_py.common.route import MASTER_ID
from rocketmq_py.errors import PullRetryImmediatelyError
from rocketmq_py.remoting.client import RemotingClient
from rocketmq_py.remoting.config import RemotingClientConfig
from rocketmq_py.spark.options import ClientSettings
from rocketmq_py.spark.planning import DataLossError, QueueBounds, QueueKey, QueueRange
from rocketmq_py.spark.runtime import process_loop

if TYPE_CHECKING:
    from rocketmq_py.common.route import TopicRouteData

_log = logging.getLogger(__name__)
_T = TypeVar("_T")


class PullAnswer(NamedTuple):
    """What one pull answers."""

    code: int
    #: The broker's store status (Java's GetMessageStatus name).
    remark: str | None
    header: PullMessageResponseHeader
    #: The messages of the body.
    messages: list[MessageExt]


#: Queue permission bits (Java's PermName): a queue of a topic without PERM_READ is not read.
PERM_READ = 0x4

_SESSIONS: dict[ClientSettings, "Session"] = {}
_SESSIONS_LOCK = threading.Lock()


def session(settings: ClientSettings) -> "Session":
    """The process's session for these settings (created on first use, reused by later tasks)."""
    with _SESSIONS_LOCK:
        found = _SESSIONS.get(settings)
        # A forked worker inherits its parent's sessions, whose connections belong to the parent.
        if found is None or found.closed or found.pid != os.getpid():
            found = _SESSIONS[settings] = Session(settings)
        return found


class Session:
    """A remoting client and the client API, used from blocking code through the process loop."""

    def __init__(self, settings: ClientSettings) -> None:
        self.settings = settings
        self.background = process_loop()
        self.pid = os.getpid()
        self.closed = False
        credentials = None
        if settings.access_key and settings.secret_key:
            credentials = SessionCredentials(settings.access_key, settings.secret_key, settings.security_token)

        async def made() -> RemotingClient:  # made on the loop that will run it
            return RemotingClient(config=RemotingClientConfig(use_tls=settings.use_tls))

        self.remoting = self.background.run(made())
        self.api = MQClientAPI(self.remoting, credentials=credentials)

    def run(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        """Run a coroutine on the process loop and wait for it (called from Spark's threads)."""
        return self.background.run(coroutine)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.run(self.remoting.shutdown())

    # --- metadata (driver) ---------------------------------------------------------------------

    def namesrv_addrs(self) -> list[str]:
        return [a.strip() for a in self.settings.namesrv_addr.split(";") if a.strip()]

    async def _route(self, topic: str) -> TopicRouteData:
        error: Exception | None = None
        for addr in self.namesrv_addrs():
            try:
                return await self.api.get_topic_route(addr, topic)
            except Exception as failure:  # noqa: BLE001 - try the next name server, report the last failure
                error = failure
        raise RuntimeError(f"no route for topic {topic!r} from name server(s) {self.settings.namesrv_addr}: "
                           f"{error}") from error

    async def _topic_list(self) -> set[str]:
        error: Exception | None = None
        for addr in self.namesrv_addrs():
            try:
                return set((await self.api.get_all_topics(addr)).topics)
            except Exception as failure:  # noqa: BLE001 - try the next name server, report the last failure
                error = failure
        raise RuntimeError(f"no topic list from name server(s) {self.settings.namesrv_addr}: {error}") from error

    def topics_matching(self, pattern: str) -> tuple[str, ...]:
        """The name server's topics that ``pattern`` matches in full (as Kafka's subscribePattern), sorted."""
        regex = re.compile(pattern)
        return tuple(sorted(t for t in self.run(self._topic_list()) if regex.fullmatch(t)))

    async def _bounds(self, topics: tuple[str, ...], skip_missing: bool = False) -> list[QueueBounds]:
        queues: list[tuple[str, str, str, int]] = []
        for topic in topics:
            try:
                route = await self._route(topic)
            except RuntimeError:
                if not skip_missing:
                    raise
                # Listed by the name server, but deleted (or never routed) by the time we asked.
                _log.info("topic %s matched topicPattern but has no route now; skipped", topic)
                continue
            masters = {b.broker_name: b.broker_addrs.get(MASTER_ID) for b in route.broker_datas}
            for data in route.queue_datas:
                addr = masters.get(data.broker_name)
                if not addr or not data.perm & PERM_READ:
                    continue
                queues.extend((topic, data.broker_name, addr, qid) for qid in range(data.read_queue_nums))

        async def one(topic: str, broker: str, addr: str, qid: int) -> QueueBounds:
            mq = MessageQueue(topic, broker, qid)
            low, high = await asyncio.gather(self.api.get_min_offset(addr, mq), self.api.get_max_offset(addr, mq))
            # A queue whose ConsumeQueue the broker has not made yet may answer -1 (Java answers 0).
            low = max(low, 0)
            return QueueBounds(topic, broker, addr, qid, low, max(high, low))

        return list(await asyncio.gather(*(one(*q) for q in queues)))

    def bounds(self, topics: tuple[str, ...], skip_missing: bool = False) -> list[QueueBounds]:
        """Every readable queue of the topics with its master address and [min, max) offsets.

        ``skip_missing`` leaves out topics without a route (those found by a pattern) instead of failing.
        """
        return self.run(self._bounds(topics, skip_missing))

    def offsets_for_timestamp(self, bounds: list[QueueBounds], timestamp_ms: int) -> dict[QueueKey, int]:
        """The first offset stored at or after ``timestamp_ms`` in each queue (its max offset when none is).

        The broker's SEARCH_OFFSET_BY_TIMESTAMP answers the offset whose store time is *nearest* (either
        side, or the last message when the time is past all of them), so the answer is corrected here by
        reading the store times around it, as Kafka's offsetsForTimes promises.
        """
        async def one(queue: QueueBounds) -> int:
            if queue.max_offset <= queue.min_offset:
                return queue.max_offset
            mq = MessageQueue(queue.topic, queue.broker_name, queue.queue_id)
            near = await self.api.search_offset(queue.broker_addr, mq, timestamp_ms)
            return await self._first_at_or_after(queue, min(max(near, queue.min_offset), queue.max_offset),
                                                 timestamp_ms)

        async def every() -> list[int]:
            # gather is built inside the coroutine, on the loop that runs it.
            return list(await asyncio.gather(*(one(q) for q in bounds)))

        found = self.run(every())
        return {q.key: offset for q, offset in zip(bounds, found)}

    async def _store_times(self, queue: QueueBounds, offset: int, count: int) -> list[tuple[int, int]]:
        part = QueueRange(queue.topic, queue.broker_name, queue.broker_addr, queue.queue_id, offset, offset + count)
        answer = await self._pull(part, "SPARK_TIMESTAMP_LOOKUP", "*", offset, count)
        if answer.code != ResponseCode.SUCCESS:
            return []
        return [(m.queue_offset, m.store_timestamp) for m in answer.messages
                if offset <= m.queue_offset < offset + count]

    async def _first_at_or_after(self, queue: QueueBounds, offset: int, timestamp_ms: int) -> int:
        # Back while the message before is still at or after the time (store times do not decrease in a queue).
        while offset > queue.min_offset:
            before = await self._store_times(queue, offset - 1, 1)
            if not before or before[0][1] < timestamp_ms:
                break
            offset -= 1
        # Forward past messages stored before the time.
        while offset < queue.max_offset:
            times = await self._store_times(queue, offset, min(32, queue.max_offset - offset))
            if not times:
                break
            for queue_offset, stored in times:
                if stored >= timestamp_ms:
                    return queue_offset
            offset = times[-1][0] + 1
        return min(offset, queue.max_offset)

    # --- pulls (executors) -----------------------------------------------------------------------

    async def _pull(self, part: QueueRange, group: str, sub_expression: str, offset: int, count: int) -> PullAnswer:
        header = PullMessageRequestHeader(
            consumer_group=group, topic=part.topic, queue_id=part.queue_id, queue_offset=offset,
            max_msg_nums=count, sys_flag=build_pull_sys_flag(False, False, True), commit_offset=0,
            suspend_timeout_millis=0, sub_version=0, subscription=sub_expression, expression_type="TAG",
            broker_name=part.broker_name,
        )
        response = await self.api.pull_message(part.broker_addr, header, self.settings.pull_timeout_ms)
        answer = PullMessageResponseHeader.from_command(response)
        messages: list[MessageExt] = []
        if response.code == ResponseCode.SUCCESS and response.body:
            messages = codec.decode_store_records(response.body, strict=False)
        return PullAnswer(response.code, response.remark, answer, messages)

    def read_range(self, part: QueueRange, group: str, sub_expression: str = "*",
                   fail_on_data_loss: bool = True) -> Iterator[list[MessageExt]]:
        """The messages of ``part`` in queue order, a pull's worth at a time.

        ``pipeline_depth`` pulls of consecutive windows are in flight at once; a pull that
        returns less than its window (the broker's transfer limits) is followed by one for the
        rest before later windows are handed out, so the order is kept.
        """
        batch, depth = self.settings.pull_batch_size, self.settings.pipeline_depth
        pending: collections.deque[tuple[int, int, concurrent.futures.Future[PullAnswer]]] = collections.deque()
        next_window = part.start

        def issue(offset: int, count: int, front: bool = False) -> None:
            # Pulls run on the process loop while this thread turns earlier answers into Arrow batches.
            task = self.background.submit(self._pull(part, group, sub_expression, offset, count))
            (pending.appendleft if front else pending.append)((offset, count, task))

        try:
            while True:
                while len(pending) < depth and next_window < part.end:
                    count = min(batch, part.end - next_window)
                    issue(next_window, count)
                    next_window += count
                if not pending:
                    return
                offset, count, task = pending.popleft()
                code, remark, answer, messages = task.result()
                window_end = offset + count
                wanted = [m for m in messages if offset <= m.queue_offset < window_end]
                if code == ResponseCode.SUCCESS:
                    reached = answer.next_begin_offset
                elif code == ResponseCode.PULL_RETRY_IMMEDIATELY:
                    reached = self._past_retry(part, offset, remark, answer, fail_on_data_loss)
                else:
                    reached = self._lost(part, offset, window_end, answer, fail_on_data_loss)
                if wanted:
                    reached = max(reached, wanted[-1].queue_offset + 1)
                    yield wanted
                if reached <= offset and not wanted:
                    reached = self._lost(part, offset, window_end, answer, fail_on_data_loss)
                if reached < window_end:
                    issue(reached, window_end - reached, front=True)
        finally:
            for *_, task in pending:
                task.cancel()

    def _past_retry(self, part: QueueRange, offset: int, remark: str | None, answer: PullMessageResponseHeader,
                    fail_on_data_loss: bool) -> int:
        """Where a PULL_RETRY_IMMEDIATELY answer lets the read go on: past messages its filter refused, or past
        deleted ones as data loss; any other reason gives no way past messages not received (the task fails,
        and Spark runs it again)."""
        if remark == RETRY_PAST_UNMATCHED:
            return answer.next_begin_offset
        if remark == RETRY_PAST_REMOVED:
            return self._lost(part, offset, answer.next_begin_offset, answer, fail_on_data_loss)
        raise PullRetryImmediatelyError(
            ResponseCode.PULL_RETRY_IMMEDIATELY,
            f"{remark or '(no remark)'}: no messages of {part.topic}/{part.broker_name}/{part.queue_id} at offset "
            f"{offset}", part.broker_addr)

    def _lost(self, part: QueueRange, offset: int, skip_to: int, answer: PullMessageResponseHeader,
              fail_on_data_loss: bool) -> int:
        """Offsets [offset, ...) cannot be read: error, or skip to ``skip_to`` (to the queue's first message
        when the offset is below it)."""
        what = (f"queue {part.topic}/{part.broker_name}/{part.queue_id}: offsets from {offset} cannot be read "
                f"(the broker holds [{answer.min_offset}, {answer.max_offset}]; messages deleted or the queue reset)")
        if fail_on_data_loss:
            raise DataLossError(f"{what}; set failOnDataLoss=false to skip them")
        target = answer.min_offset if offset < answer.min_offset else skip_to
        _log.warning("%s; skipping to %d (failOnDataLoss=false)", what, target)
        return max(target, offset + 1) if target <= offset else target
