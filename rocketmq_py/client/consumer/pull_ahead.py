"""A second pull in flight for a push consumer's queue with a backlog (no Java counterpart: Java's
DefaultMQPushConsumerImpl keeps one pull per queue in flight).

With one pull in flight a queue gets at most ``pull_batch_size`` messages per round trip, and when the
listener is quicker than the round trip the queue lies dry between answers. When the last answer proves that
at least two more full batches wait behind its ``nextBeginOffset``, the push consumer sends the pull of the
batch after the next one before the next one is answered, so that the round trip overlaps consumption.

What keeps this safe:

* The pull ahead is made for the offset the pull before it is *expected* to end at (its offset plus the batch
  size). Its answer is used only if the answer before it really ends there; otherwise (a filter passed over
  units, a size limit cut the batch short, no new message, a moved offset, a failure) it is discarded unread,
  and the consumer goes on from the real offset. Answers are taken in the order of their pulls, however the
  broker's threads order them, so messages reach the cache in offset order.
* Only a proven backlog: the last answer was a full batch with no units passed over, and its ``maxOffset``
  lies at least two batches past the pull ahead's offset, so the broker never parks the pull ahead at the tail.
* The flow control counts each pull in flight as if its batch were cached already.
* The committed offset a pull carries (sysFlag commitOffset) goes on a pull only when no earlier pull that
  carries one is unanswered: the broker serves pulls on a pool of threads, and two such pulls in flight
  together could be applied in the wrong order and move the broker's offset backwards.
"""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from rocketmq_py.client.consumer.pull import PullResult
    from rocketmq_py.common.filter import SubscriptionData


class PullAhead:
    """One queue's pull sent ahead of the answer to the pull before it, and what the last answer proved."""

    __slots__ = ("batch_size", "task", "offset", "subscription", "began", "backlog_end", "batch_bytes",
                 "commit_unanswered", "_let_go")

    def __init__(self, batch_size: int, let_go: Callable[[asyncio.Task[PullResult]], None]) -> None:
        self.batch_size = batch_size
        #: The pull ahead (None when there is none), the offset it pulls, under which subscription, sent when.
        self.task: asyncio.Task[PullResult] | None = None
        self.offset = -1
        self.subscription: SubscriptionData | None = None
        self.began = 0.0
        #: The queue's maxOffset in the last answer that was a full batch; -1 when the last answer was not.
        self.backlog_end = -1
        #: The bytes of the bodies of the last full batch: what a pull in flight is counted as by the flow control.
        self.batch_bytes = 0
        #: Whether a pull that carries the committed offset is sent and not answered.
        self.commit_unanswered = False
        self._let_go = let_go

    def may_pull_after(self, offset: int) -> bool:
        """Whether a pull for ``offset`` + the batch size may be sent before the pull for ``offset`` is answered."""
        return self.task is None and offset + 2 * self.batch_size <= self.backlog_end

    def sent(self, task: asyncio.Task[PullResult], offset: int, subscription: SubscriptionData, began: float) -> None:
        self.task, self.offset, self.subscription, self.began = task, offset, subscription, began

    def take(self, offset: int, subscription: SubscriptionData) -> asyncio.Task[PullResult] | None:
        """The pull ahead when it pulls ``offset`` under ``subscription`` (it is then the queue's next pull);
        otherwise it is discarded and None returned."""
        task = self.task
        if task is None:
            return None
        if self.offset == offset and self.subscription is subscription:
            self.task = None
            return task
        self.discard()
        return None

    def discard(self) -> None:
        """Forget the pull ahead: its answer, if one comes, is never read. It is not cancelled: the broker may be
        serving it already, and the committed offset it may carry stays unanswered until its answer comes."""
        task, self.task = self.task, None
        if task is not None:
            self._let_go(task)

    def learn(self, offset: int, result: PullResult, batch_bytes: int) -> None:
        """Take what the answer to the pull for ``offset`` proves about the queue's backlog."""
        if result.next_begin_offset - offset == self.batch_size and len(result.messages) == self.batch_size:
            self.backlog_end = result.max_offset
            self.batch_bytes = batch_bytes
        else:
            self.backlog_end = -1
