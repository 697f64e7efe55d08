"""The client-side cache of one queue's pulled, not yet consumed messages (Java's impl/consumer/ProcessQueue).

Messages are kept by queue offset. The smallest offset still cached is the
offset that can be committed: everything below it was consumed. The counts
and sizes drive the flow control of the pull loop. The event loop puts pulled
messages in and the consume threads take them out and remove them when they
are consumed (as Java's consume threads do), so the maps, the counts and the
consuming flag change under one lock, as Java guards its tree map with a
read-write lock. A consume thread never waits for that lock after a message:
it records the removal, and the thread that holds the lock, or the next to
find it free, makes it (rocketmq_py/common/combining_lock.py says why); every
read takes the lock and so sees every removal recorded before it.
"""
from __future__ import annotations

import operator
from collections import deque
from typing import TYPE_CHECKING, Callable, Iterable

from rocketmq_py.common.clock import now_ms
from rocketmq_py.common.combining_lock import CombiningLock
from rocketmq_py.common.message import MessageConst

if TYPE_CHECKING:
    from rocketmq_py.common.consumer_body import ProcessQueueInfo
    from rocketmq_py.common.message import MessageExt

#: A queue with no pull for this long is dropped by the next rebalance (Java's rocketmq.client.pull.pullMaxIdleTime).
PULL_MAX_IDLE_TIME_MS = 120_000
#: A lock older than this is treated as lost (Java's rocketmq.client.rebalance.lockMaxLiveTime).
REBALANCE_LOCK_MAX_LIVE_TIME_MS = 30_000
#: Renew locks this often (Java's rocketmq.client.rebalance.lockInterval).
REBALANCE_LOCK_INTERVAL_MS = 20_000

MAX_OFFSET = MessageConst.MAX_OFFSET
_queue_offset = operator.attrgetter("queue_offset")
_body = operator.attrgetter("body")


class _OffsetMap:
    """Messages by offset, with the smallest and largest offsets at hand.

    Offsets almost always arrive in increasing order, so a deque of offsets
    with lazy removal keeps every operation O(1) amortized; an offset that
    lands in the middle (an orderly message put back) re-sorts the deque.
    """

    __slots__ = ("messages", "_order")

    def __init__(self) -> None:
        self.messages: dict[int, MessageExt] = {}
        self._order: deque[int] = deque()

    def __len__(self) -> int:
        return len(self.messages)

    def __bool__(self) -> bool:
        return bool(self.messages)

    def put(self, offset: int, message: MessageExt) -> bool:
        """Store ``message``; False when the offset was already there (the old message is replaced)."""
        messages = self.messages
        is_new = offset not in messages
        messages[offset] = message
        if is_new:
            order = self._order
            if not order or offset > order[-1]:
                order.append(offset)
            elif offset < self.first():
                order.appendleft(offset)
            else:
                self._order = deque(sorted(messages))
        return is_new

    def put_all(self, messages: list[MessageExt]) -> tuple[int, int, int]:
        """Store ``messages`` in their order; how many offsets were new, the bytes of their bodies, and the last new
        offset (-1 when none was new)."""
        offsets = list(map(_queue_offset, messages))
        order = self._order
        if offsets and (not order or offsets[0] > order[-1]) and all(map(operator.lt, offsets, offsets[1:])):
            # A pull's messages, ascending past every cached offset (``order`` is sorted and holds them all): every
            # offset is new, and the batch is stored without a Python call per message, as it is for every pull.
            self.messages.update(zip(offsets, messages))
            order.extend(offsets)
            return len(offsets), sum(map(len, map(_body, messages))), offsets[-1]
        added = size = 0
        last = -1
        for offset, message in zip(offsets, messages):
            if self.put(offset, message):
                added += 1
                size += len(message.body)
                last = offset
        return added, size, last

    def pop(self, offset: int) -> MessageExt | None:
        return self.messages.pop(offset, None)

    def first(self) -> int:
        order, messages = self._order, self.messages
        while order[0] not in messages:
            order.popleft()
        return order[0]

    def last(self) -> int:
        order, messages = self._order, self.messages
        while order[-1] not in messages:
            order.pop()
        return order[-1]

    def pop_firsts(self, count: int) -> list[MessageExt]:
        """Remove up to ``count`` messages of the smallest offsets; those messages, in offset order."""
        # runs for every batch of an orderly queue, so the loop stays in this one call
        order, messages = self._order, self.messages
        popped: list[MessageExt] = []
        while messages:
            message = messages.pop(order.popleft(), None)
            if message is not None:
                popped.append(message)
                if len(popped) == count:
                    break
        return popped

    def clear(self) -> None:
        self.messages.clear()
        self._order.clear()


class ProcessQueue:
    """The pulled messages of one queue, waiting for or in consumption."""

    def __init__(self) -> None:
        self._changes = CombiningLock()
        self._cached = _OffsetMap()
        #: Orderly: messages handed to the listener and not yet committed, by offset, and the bytes of their bodies.
        #: A plain dict: a consume thread changes it for every batch, and only an admin's look needs its order.
        self._consuming: dict[int, MessageExt] = {}
        self._consuming_size = 0
        self._msg_count = 0
        self._msg_size = 0
        self.queue_offset_max = 0
        self.dropped = False
        self.locked = False
        self.consuming = False
        self.last_pull_timestamp = now_ms()
        self.last_consume_timestamp = now_ms()
        self.last_lock_timestamp = now_ms()
        self.try_unlock_times = 0
        self.msg_acc_cnt = 0
        #: Consume requests handed to the listener and not finished (to drain before a reset or drop).
        self._in_flight = 0

    # --- counts ----------------------------------------------------------------------------------

    @property
    def msg_count(self) -> int:
        """Messages cached, consuming ones included (flow control)."""
        with self._changes:
            return self._msg_count

    @property
    def msg_size(self) -> int:
        """Bytes of the bodies of the cached messages (flow control)."""
        with self._changes:
            return self._msg_size

    def cached_now(self) -> tuple[int, int]:
        """Messages and bytes cached, for the flow control before each pull: read at once rather than under the
        lock, as Java reads its atomic counters, so that the event loop never waits for a consume thread here. A
        removal recorded but not yet made (its thread holds the lock) still counts: the figures can be a moment
        high, never low, since the pull loop makes every put itself."""
        return self._msg_count, self._msg_size

    @property
    def in_flight(self) -> int:
        """Consume requests handed to the listener and not finished."""
        with self._changes:
            return self._in_flight

    def requests_submitted(self, count: int) -> None:
        with self._changes:
            self._in_flight += count

    def request_finished(self) -> None:
        self._changes.record(self._request_finished)

    def _request_finished(self) -> None:
        self._in_flight -= 1

    # --- state -------------------------------------------------------------------------------

    def is_lock_expired(self, now: int | None = None) -> bool:
        """Whether the broker lock is older than it may be (``now``: the wall clock in ms, if already read)."""
        return (now_ms() if now is None else now) - self.last_lock_timestamp > REBALANCE_LOCK_MAX_LIVE_TIME_MS

    def is_pull_expired(self) -> bool:
        return now_ms() - self.last_pull_timestamp > PULL_MAX_IDLE_TIME_MS

    @property
    def max_span(self) -> int:
        """The distance between the smallest and largest cached offsets (for consumeConcurrentlyMaxSpan)."""
        with self._changes:
            cached = self._cached
            if not cached:
                return 0
            return cached.last() - cached.first()

    @property
    def has_temp_message(self) -> bool:
        return bool(self._cached)

    def first_offset(self) -> int | None:
        with self._changes:
            return self._cached.first() if self._cached else None

    def last_offset(self) -> int | None:
        with self._changes:
            return self._cached.last() if self._cached else None

    # --- concurrently --------------------------------------------------------------------------

    def put_messages(self, messages: list[MessageExt]) -> bool:
        """Cache pulled messages; True when nothing was being consumed (orderly: start a consume task)."""
        with self._changes:
            added, size, last_new = self._cached.put_all(messages)
            if added:
                self.queue_offset_max = last_new
                self._msg_count += added
                self._msg_size += size
            dispatch = False
            if self._cached and not self.consuming:
                dispatch = True
                self.consuming = True
        if messages:
            last = messages[-1]
            max_offset = last.properties.get(MAX_OFFSET)
            if max_offset is not None:
                accumulated = int(max_offset) - last.queue_offset
                if accumulated > 0:
                    self.msg_acc_cnt = accumulated
        return dispatch

    def remove_messages(self, messages: Iterable[MessageExt]) -> int:
        """Forget consumed messages; the offset to commit next, or -1 when nothing is cached."""
        self.last_consume_timestamp = now_ms()
        with self._changes:
            return self._remove(messages)

    def remove_consumed(self, messages: Iterable[MessageExt], then: Callable[[int], None]) -> None:
        """``remove_messages`` for consume threads, which must not wait for one another: ``then(offset)`` gets
        its result, maybe a moment later and in another consume thread."""
        self.last_consume_timestamp = now_ms()
        self._changes.record(self._remove_then, messages, then)

    def _remove_then(self, messages: Iterable[MessageExt], then: Callable[[int], None]) -> None:
        then(self._remove(messages))

    def _remove(self, messages: Iterable[MessageExt]) -> int:
        cached = self._cached
        if not cached:
            return -1
        result = self.queue_offset_max + 1
        removed = 0
        size = 0
        for message in messages:
            if cached.pop(message.queue_offset) is not None:
                removed += 1
                size += len(message.body)
        self._msg_count -= removed
        self._msg_size = self._msg_size - size if self._msg_count else 0
        if cached:
            result = cached.first()
        return result

    def expired_first(self, timeout_ms: int, now: int) -> MessageExt | None:
        """The first cached message when its consumption started more than ``timeout_ms`` ago."""
        with self._changes:
            if not self._cached:
                return None
            message = self._cached.messages[self._cached.first()]
        started = message.properties.get(MessageConst.CONSUME_START_TIMESTAMP)
        if started and now - int(started) > timeout_ms:
            return message
        return None

    # --- orderly ---------------------------------------------------------------------------------

    def take_messages(self, batch_size: int) -> list[MessageExt]:
        """Move up to ``batch_size`` messages from the cache to the consuming set, smallest offsets first."""
        self.last_consume_timestamp = now_ms()
        with self._changes:
            return self._take(batch_size)

    def commit(self) -> int:
        """Orderly: the consuming messages are done; the offset to commit next, or -1."""
        with self._changes:
            return self._commit()

    def commit_and_take(self, batch_size: int, now: int) -> tuple[int, list[MessageExt]]:
        """Orderly: ``commit()`` then ``take_messages(batch_size)`` under one hold of the lock, as a consume thread
        does after each batch (``now``: the wall clock in ms, read once per batch); the offset to commit next (or -1)
        and the next batch."""
        self.last_consume_timestamp = now
        with self._changes:
            return self._commit(), self._take(batch_size)

    def _take(self, batch_size: int) -> list[MessageExt]:
        taken = self._cached.pop_firsts(batch_size) if batch_size > 0 else []
        if not taken:
            self.consuming = False
            return taken
        consuming = self._consuming
        size = 0
        for message in taken:
            consuming[message.queue_offset] = message
            size += len(message.body)
        self._consuming_size += size
        return taken

    def _commit(self) -> int:
        consuming = self._consuming
        if not consuming:
            return -1
        last = max(consuming)
        self._msg_count -= len(consuming)
        self._msg_size = self._msg_size - self._consuming_size if self._msg_count else 0
        self._consuming_size = 0
        consuming.clear()
        return last + 1

    def rollback(self) -> None:
        """Orderly: put every consuming message back in the cache."""
        with self._changes:
            for offset, message in sorted(self._consuming.items()):
                self._cached.put(offset, message)
            self._consuming.clear()
            self._consuming_size = 0

    def make_message_to_consume_again(self, messages: Iterable[MessageExt]) -> None:
        with self._changes:
            for message in messages:
                if self._consuming.pop(message.queue_offset, None) is not None:
                    self._consuming_size -= len(message.body)
                self._cached.put(message.queue_offset, message)

    def clear(self) -> None:
        with self._changes:
            self._cached.clear()
            self._consuming.clear()
            self._consuming_size = 0
            self._msg_count = 0
            self._msg_size = 0
            self.queue_offset_max = 0

    def fill_info(self, info: ProcessQueueInfo) -> None:
        with self._changes:
            self._fill_info(info)

    def _fill_info(self, info: ProcessQueueInfo) -> None:
        cached, consuming = self._cached, self._consuming
        if cached:
            info.cached_msg_min_offset = cached.first()
            info.cached_msg_max_offset = cached.last()
            info.cached_msg_count = len(cached)
        info.cached_msg_size_in_mib = self._msg_size // (1024 * 1024)
        if consuming:
            info.transaction_msg_min_offset = min(consuming)
            info.transaction_msg_max_offset = max(consuming)
            info.transaction_msg_count = len(consuming)
        info.locked = self.locked
        info.try_unlock_times = self.try_unlock_times
        info.last_lock_timestamp = self.last_lock_timestamp
        info.droped = self.dropped
        info.last_pull_timestamp = self.last_pull_timestamp
        info.last_consume_timestamp = self.last_consume_timestamp
