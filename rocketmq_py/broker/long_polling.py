"""Suspended pulls (Java's broker/longpolling/PullRequestHoldService and NotifyMessageArrivingListener).

A pull that finds nothing new, with the SUSPEND flag, is parked here under
its topic and queue instead of being answered. The store's arrival listener
wakes the parked pulls of a queue whose new message passes their filter; a
pull is also woken when its hold time (``suspendTimeoutMillis``, or
``shortPollingTimeMills`` without long polling) is over. A woken pull runs
again without suspension and is answered with the original opaque, in the
broker's default serialization, as Java does.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Callable, TYPE_CHECKING

from rocketmq_py.remoting import RemotingCommand, RemotingConnection, mark_response
from rocketmq_py.remoting.command import DEFAULT_SERIALIZE_TYPE

if TYPE_CHECKING:
    from rocketmq_py.broker.filter import ExpressionMessageFilter
    from rocketmq_py.store import Arrival

_log = logging.getLogger(__name__)

#: Runs a woken pull: (connection, request) -> the response, or None.
Replay = Callable[[RemotingConnection, RemotingCommand], "RemotingCommand | None"]


class PullRequest:
    __slots__ = ("request", "connection", "pull_from_offset", "message_filter", "deadline", "timer")

    def __init__(self, request: RemotingCommand, connection: RemotingConnection, pull_from_offset: int,
                 message_filter: ExpressionMessageFilter, deadline: float) -> None:
        self.request = request
        self.connection = connection
        self.pull_from_offset = pull_from_offset
        self.message_filter = message_filter
        self.deadline = deadline
        self.timer: asyncio.TimerHandle | None = None


class PullRequestHoldService:
    def __init__(self, replay: Replay, max_offset: Callable[[str, int], int]) -> None:
        self._replay = replay
        self._max_offset = max_offset
        self.table: dict[tuple[str, int], list[PullRequest]] = {}
        self._send_tasks: set[asyncio.Task[Any]] = set()

    @property
    def suspended(self) -> int:
        return sum(len(requests) for requests in self.table.values())

    def suspend(self, topic: str, queue_id: int, request: PullRequest, hold_ms: int) -> None:
        loop = asyncio.get_running_loop()
        request.timer = loop.call_later(max(hold_ms, 0) / 1000, self._expire, topic, queue_id, request)
        self.table.setdefault((topic, queue_id), []).append(request)

    def _expire(self, topic: str, queue_id: int, request: PullRequest) -> None:
        requests = self.table.get((topic, queue_id))
        if requests is None or request not in requests:
            return
        requests.remove(request)
        if not requests:
            del self.table[(topic, queue_id)]
        self._wake(request)

    def on_arrivals(self, arrivals: list[Arrival]) -> None:
        """The store's arrival listener (``MessageStore.add_arrival_listener``): wake what waits on the queues
        of one put's messages."""
        # Called for every put: mostly no pull waits at all, and most queues have none waiting.
        table = self.table
        if not table:
            return
        for topic, queue_id, next_offset, tags_code, _, properties_text in arrivals:
            if (topic, queue_id) in table:
                self.notify_message_arriving(topic, queue_id, next_offset, tags_code, properties_text)

    def notify_message_arriving(self, topic: str, queue_id: int, max_offset: int, tags_code: int | None = None,
                                properties_text: str | None = None) -> None:
        """A message was stored in ``topic``/``queue_id`` (``max_offset`` is the queue's next offset)."""
        requests = self.table.get((topic, queue_id))
        if not requests:
            return
        kept = []
        for request in requests:
            newest = max_offset
            if newest <= request.pull_from_offset:
                newest = self._max_offset(topic, queue_id)
            if newest > request.pull_from_offset and self._matches(request, tags_code, properties_text):
                self._wake(request)
            elif not request.connection.is_open:
                self._cancel(request)
            else:
                kept.append(request)
        if kept:
            self.table[(topic, queue_id)] = kept
        else:
            del self.table[(topic, queue_id)]

    @staticmethod
    def _matches(request: PullRequest, tags_code: int | None, properties_text: str | None) -> bool:
        message_filter = request.message_filter
        if tags_code is not None and not message_filter.is_matched_by_consume_queue(tags_code):
            return False
        if properties_text is not None:
            return message_filter.is_matched_by_properties(properties_text)
        return True

    @staticmethod
    def _cancel(request: PullRequest) -> None:
        if request.timer is not None:
            request.timer.cancel()
            request.timer = None

    def _wake(self, request: PullRequest) -> None:
        self._cancel(request)
        connection = request.connection
        if not connection.is_open:
            return
        try:
            response = self._replay(connection, request.request)
        except Exception:
            _log.exception("replaying a suspended pull from %s failed", connection.remote_address)
            return
        if response is None:
            return
        response.opaque = request.request.opaque
        mark_response(response)
        response.serialize_type = DEFAULT_SERIALIZE_TYPE
        task = asyncio.get_running_loop().create_task(self._send(connection, response))
        self._send_tasks.add(task)
        task.add_done_callback(self._send_tasks.discard)

    @staticmethod
    async def _send(connection: RemotingConnection, response: RemotingCommand) -> None:
        try:
            await connection.send(response)
        except Exception as error:
            _log.info("the answer to a suspended pull could not be sent to %s: %s", connection.remote_address, error)

    def check_all(self) -> None:
        """Wake what has new messages or is past its hold time (Java's 5-second check)."""
        now = time.monotonic()
        for (topic, queue_id), requests in list(self.table.items()):
            self.notify_message_arriving(topic, queue_id, self._max_offset(topic, queue_id))
            for request in list(self.table.get((topic, queue_id), ())):
                if request.deadline <= now:
                    self._expire(topic, queue_id, request)

    def shutdown(self) -> None:
        for requests in self.table.values():
            for request in requests:
                self._cancel(request)
        self.table.clear()
        for task in list(self._send_tasks):
            task.cancel()
