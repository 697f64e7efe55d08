"""The leader's side of replication: a dispatcher per follower, and the quorum acknowledgement of appends.

Ports the leader half of ``DLedgerEntryPusher.java`` (``EntryDispatcher`` and ``QuorumAckChecker``,
dledger-all-0.3.1.2). Each follower's dispatcher goes through the states::

    COMPARE ──> TRUNCATE ──> APPEND (──> COMMIT when idle)
       ^                        │
       └────────────────────────┘  (a follower answers INCONSISTENT_STATE, or a push fails)

* COMPARE pushes the leader's entry at ``compareIndex`` (its last, at first) and walks back until the
  follower holds the same entry (or the follower's log does not meet the leader's at all);
* TRUNCATE pushes that entry for the follower to make it its last (cutting a divergent tail);
* APPEND pushes the following entries, pipelined (up to 1000 unanswered; one per request, or batches of
  up to ``maxBatchPushSize`` bytes with ``isEnableBatchPush``); an entry unanswered for
  ``maxPushTimeOutMs`` is pushed again; when there is nothing to push, a COMMIT push tells the committed
  index every second.

Each follower's answers raise its water mark (the last index it holds in this term). The committed index
is the water mark a majority reached (the leader counts with its ledger's end); an append completes once
the committed index reaches it, and fails with WAIT_QUORUM_ACK_TIMEOUT after ``maxWaitAckTimeMs``, or
TERM_CHANGED when this member stops leading before that (Java lets those wait for its RPC timeout).
"""
from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Callable

from rocketmq_py.common.clock import monotonic_ms
from rocketmq_py.dledger.codes import PushType, ResponseCode
from rocketmq_py.dledger.config import DLedgerConfig
from rocketmq_py.dledger.entry import DLedgerEntry
from rocketmq_py.dledger.errors import DLedgerError
from rocketmq_py.dledger.member_state import MemberState
from rocketmq_py.dledger.protocol import PushEntryRequest, PushEntryResponse
from rocketmq_py.dledger.rpc import PeerTransport
from rocketmq_py.dledger.store import DLedgerFileStore

__all__ = ["EntryPusher", "AppendedEntry"]

_log = logging.getLogger(__name__)

#: How many pushes a dispatcher leaves unanswered before it waits (Java's maxPendingSize).
MAX_PENDING_PUSHES = 1000
#: How often an idle dispatcher pushes the committed index.
COMMIT_PUSH_INTERVAL_MS = 1000
#: How often a dispatcher forgets pushes its follower has answered meanwhile.
LEAK_CHECK_INTERVAL_MS = 1000
#: A dispatcher whose push failed waits this long before it compares again.
ERROR_PAUSE_S = 0.5
#: The shortest sleep of a dispatcher or of the acknowledgement check (Java's loops wait 1 ms).
MIN_WAIT_MS = 1.0


@dataclass(frozen=True)
class AppendedEntry:
    """Where an appended entry went."""

    index: int
    term: int
    pos: int
    size: int


@dataclass
class _PendingAppend:
    """An append waiting for a majority; a batch waits on its last entry."""

    future: asyncio.Future[list[AppendedEntry]]
    entries: list[AppendedEntry]
    created_ms: float = field(default_factory=monotonic_ms)


class _Quota:
    """At most ``max_bytes`` pushed per second to a follower far behind (Java's ``Quota``)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._second = -1
        self._bytes = 0

    def take(self, size: int) -> float:
        """Count ``size`` bytes; the seconds to wait before pushing more (0 while within the quota)."""
        now = time.monotonic()
        second = int(now)
        if second != self._second:
            self._second, self._bytes = second, 0
        self._bytes += size
        return (second + 1 - now) if self._bytes >= self.max_bytes else 0.0


class _Waker:
    """A wake-up that a sleeper may miss without losing it (Java's ``waitForRunning``/``wakeup``).

    The sleeper awaits a plain future that :meth:`wake` or a timer ends: unlike ``asyncio.wait_for`` on
    Python 3.10 and 3.11, a cancellation that comes as the wake-up does is never swallowed, so shutdown
    always ends the sleeper.
    """

    def __init__(self) -> None:
        self._woken = False
        self._future: asyncio.Future[None] | None = None

    def wake(self) -> None:
        self._woken = True
        if self._future is not None and not self._future.done():
            self._future.set_result(None)

    async def wait(self, timeout_s: float | None) -> None:
        if not self._woken:
            loop = asyncio.get_running_loop()
            future = self._future = loop.create_future()
            timer = None if timeout_s is None else loop.call_later(timeout_s, _end, future)
            try:
                await future
            finally:
                if timer is not None:
                    timer.cancel()
                self._future = None
        self._woken = False


def _end(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class EntryPusher:
    """The leader's replication: dispatchers, water marks, and the appends waiting for a majority."""

    def __init__(self, config: DLedgerConfig, state: MemberState, store: DLedgerFileStore,
                 transport: PeerTransport, on_committed: Callable[[], None]) -> None:
        self.config = config
        self.state = state
        self.store = store
        self.transport = transport
        #: Called when the committed index moved.
        self.on_committed = on_committed
        self._water_marks: dict[int, dict[str, int]] = {}
        self._pending: dict[int, dict[int, _PendingAppend]] = {}
        self.dispatchers = {member_id: _EntryDispatcher(self, member_id)
                            for member_id in state.peer_map if member_id != state.self_id}
        self._ack_waker = _Waker()
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self._tasks = [asyncio.ensure_future(self._check_quorum_acks())]
        self._tasks += [asyncio.ensure_future(d.run()) for d in self.dispatchers.values()]

    async def shutdown(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            try:
                await task
            except asyncio.CancelledError:
                pass
        self._tasks = []
        self._fail_pending(None, ResponseCode.TERM_CHANGED)

    def wake(self) -> None:
        """New entries, or the role changed: the dispatchers and the acknowledgement check look again."""
        self._ack_waker.wake()
        for dispatcher in self.dispatchers.values():
            dispatcher.waker.wake()

    # --- water marks ------------------------------------------------------------------------

    def _marks(self, term: int) -> dict[str, int]:
        marks = self._water_marks.get(term)
        if marks is None:
            _log.info("[%s] water marks of term %d start", self.state.self_id, term)
            marks = self._water_marks[term] = {member_id: -1 for member_id in self.state.peer_map}
        return marks

    def update_peer_water_mark(self, term: int, member_id: str, index: int) -> None:
        marks = self._marks(term)
        if marks.get(member_id, -1) < index:
            marks[member_id] = index
            self._ack_waker.wake()

    def peer_water_mark(self, term: int, member_id: str) -> int:
        return self._marks(term).get(member_id, -1)

    # --- appends waiting for a majority --------------------------------------------------------

    def is_pending_full(self, term: int) -> bool:
        return len(self._pending.get(term, {})) > self.config.max_pending_requests_num

    def wait_ack(self, entries: list[DLedgerEntry]) -> asyncio.Future[list[AppendedEntry]]:
        """A future completed with where ``entries`` went once a majority holds the last of them."""
        last = entries[-1]
        self.update_peer_water_mark(last.term, self.state.self_id, last.index)
        future: asyncio.Future[list[AppendedEntry]] = asyncio.get_running_loop().create_future()
        appended = [AppendedEntry(e.index, e.term, e.pos, e.size) for e in entries]
        pending = self._pending.setdefault(last.term, {})
        if last.index in pending:
            _log.warning("[%s] an append already waits at index %d", self.state.self_id, last.index)
        pending[last.index] = _PendingAppend(future, appended)
        self.wake()
        return future

    def _fail_pending(self, keep_term: int | None, code: ResponseCode) -> None:
        for term in [t for t in self._pending if t != keep_term]:
            for index, waiting in self._pending.pop(term).items():
                if not waiting.future.done():
                    _log.info("[%s] the append at index %d of term %d fails: %s", self.state.self_id, index, term,
                              code.name)
                    waiting.future.set_exception(DLedgerError(code, f"append at index {index} of term {term}",
                                                              leader_id=self.state.leader_id))

    async def _check_quorum_acks(self) -> None:
        while True:
            try:
                await self._ack_waker.wait(self._next_ack_deadline_s())
                self._ack_once()
            except asyncio.CancelledError:
                raise
            except Exception:
                _log.exception("[%s] checking the acknowledgements failed", self.state.self_id)
                await asyncio.sleep(0.1)

    def _next_ack_deadline_s(self) -> float | None:
        pending = self._pending.get(self.state.current_term)
        if not pending or not self.state.is_leader:
            return None
        oldest = next(iter(pending.values()))
        return max(oldest.created_ms + self.config.max_wait_ack_time_ms - monotonic_ms(), MIN_WAIT_MS) / 1000.0

    def _ack_once(self) -> None:
        state = self.state
        if not state.is_leader:
            self._fail_pending(None, ResponseCode.TERM_CHANGED)
            self._water_marks.clear()
            return
        term = state.current_term
        self._fail_pending(term, ResponseCode.TERM_CHANGED)
        for old in [t for t in self._water_marks if t != term]:
            del self._water_marks[old]
        self.update_peer_water_mark(term, state.self_id, self.store.ledger_end_index)
        marks = sorted(self._marks(term).values(), reverse=True)
        quorum_index = marks[len(marks) // 2]
        if self.store.update_committed_index(term, quorum_index):
            self.on_committed()
        pending = self._pending.get(term, {})
        now = monotonic_ms()
        for index in list(pending):
            waiting = pending[index]
            if index <= quorum_index:
                del pending[index]
                if not waiting.future.done():
                    waiting.future.set_result(waiting.entries)
            elif now - waiting.created_ms >= self.config.max_wait_ack_time_ms:
                del pending[index]
                if not waiting.future.done():
                    waiting.future.set_exception(DLedgerError(
                        ResponseCode.WAIT_QUORUM_ACK_TIMEOUT,
                        f"no majority for index {index} within {self.config.max_wait_ack_time_ms} ms",
                        leader_id=state.self_id))
            else:
                break


class _EntryDispatcher:
    """Replicates the leader's log to one follower (Java's ``EntryDispatcher``)."""

    def __init__(self, pusher: EntryPusher, peer_id: str) -> None:
        self.pusher = pusher
        self.config = pusher.config
        self.state = pusher.state
        self.store = pusher.store
        self.peer_id = peer_id
        self.type = PushType.COMPARE
        self.term = -1
        self.leader_id: str | None = None
        self.compare_index = -1
        self.write_index = -1
        self.waker = _Waker()
        self._last_push_commit_ms = float("-inf")
        self._last_check_leak_ms = monotonic_ms()
        #: Index -> when it was pushed (one entry per push).
        self._pending: dict[int, float] = {}
        #: First index -> (when it was pushed, how many entries) (batch pushes).
        self._batch_pending: dict[int, tuple[float, int]] = {}
        self._batch = PushEntryRequest()
        self._quota = _Quota(self.config.peer_push_quota)

    # --- the loop ----------------------------------------------------------------------------

    async def run(self) -> None:
        while True:
            try:
                if self._fresh_state():
                    if self.type is PushType.APPEND:
                        if self.config.enable_batch_push:
                            await self._do_batch_append()
                        else:
                            await self._do_append()
                    else:
                        await self._do_compare()
                await self.waker.wait(self._idle_timeout_s())
            except asyncio.CancelledError:
                raise
            except Exception as error:
                level = logging.WARNING if isinstance(error, DLedgerError) else logging.ERROR
                _log.log(level, "[%s] pushing to %s failed (write index %d, compare index %d): %s",
                         self.state.self_id, self.peer_id, self.write_index, self.compare_index, error,
                         exc_info=not isinstance(error, DLedgerError))
                self._change_state(-1, PushType.COMPARE)
                await asyncio.sleep(ERROR_PAUSE_S)

    def _idle_timeout_s(self) -> float | None:
        if not self.state.is_leader:
            return None
        if self.type is not PushType.APPEND:
            return COMMIT_PUSH_INTERVAL_MS / 1000.0
        deadline = self._last_push_commit_ms + COMMIT_PUSH_INTERVAL_MS
        # Only the push after the follower's water mark is pushed again when it goes unanswered.
        next_index = self.pusher.peer_water_mark(self.term, self.peer_id) + 1
        if self.config.enable_batch_push:
            batch = self._batch_pending.get(next_index)
            sent_ms = batch[0] if batch is not None else None
        else:
            sent_ms = self._pending.get(next_index)
        if sent_ms is not None:
            deadline = min(deadline, sent_ms + self.config.max_push_time_out_ms)
        return max(deadline - monotonic_ms(), MIN_WAIT_MS) / 1000.0

    def _fresh_state(self) -> bool:
        """False when this member is not the leader; a new term (or leader) starts over with COMPARE."""
        state = self.state
        if not state.is_leader:
            return False
        if self.term != state.current_term or self.leader_id != state.leader_id:
            self.term = state.current_term
            self.leader_id = state.self_id
            self._change_state(-1, PushType.COMPARE)
        return True

    def _change_state(self, index: int, target: PushType) -> None:
        _log.info("[%s] push to %s: %s -> %s at %d", self.state.self_id, self.peer_id, self.type.name,
                  target.name, index)
        if target is PushType.APPEND:
            self.compare_index = -1
            self.pusher.update_peer_water_mark(self.term, self.peer_id, index)
            self.write_index = index + 1
            if self.config.enable_batch_push:
                self._reset_batch()
        elif target is PushType.COMPARE:
            if self.type is PushType.APPEND:
                self.compare_index = -1
                self._pending.clear()
                self._batch_pending.clear()
        elif target is PushType.TRUNCATE:
            self.compare_index = -1
        self.type = target

    def _request(self, entry: DLedgerEntry | None, push_type: PushType) -> PushEntryRequest:
        return PushEntryRequest(group=self.state.group, remote_id=self.peer_id, leader_id=self.leader_id,
                                local_id=self.state.self_id, term=self.term, entry=entry, type=push_type,
                                commit_index=self.store.committed_index)

    def _entry_for_append(self, index: int) -> DLedgerEntry | None:
        try:
            return self.store.get(index)
        except DLedgerError as error:
            if error.code is ResponseCode.INDEX_LESS_THAN_LOCAL_BEGIN:
                _log.info("[%s] entry %d for %s is no longer in the log: comparing again", self.state.self_id,
                          index, self.peer_id)
                self._change_state(-1, PushType.COMPARE)
                return None
            raise

    async def _throttle(self, entry: DLedgerEntry) -> None:
        """Push at most peerPushQuota bytes a second to a follower far behind, so it does not drown."""
        if self.store.ledger_end_index - entry.index <= MAX_PENDING_PUSHES:
            return
        if self.store.data_files.max_wrote_position - entry.pos < self.config.peer_push_throttle_point:
            return
        pause_s = self._quota.take(entry.size)
        if pause_s > 0:
            _log.warning("[%s] push quota to %s used up: waiting %.0f ms", self.state.self_id, self.peer_id,
                         pause_s * 1000)
            await asyncio.sleep(pause_s)

    # --- COMMIT ----------------------------------------------------------------------------

    def _do_commit(self) -> None:
        if monotonic_ms() - self._last_push_commit_ms > COMMIT_PUSH_INTERVAL_MS:
            self.pusher.transport.spawn(self.pusher.transport.push(self._request(None, PushType.COMMIT)))
            self._last_push_commit_ms = monotonic_ms()

    # --- APPEND, one entry per push ------------------------------------------------------------

    async def _append_one(self, index: int) -> None:
        entry = self._entry_for_append(index)
        if entry is None:
            return
        await self._throttle(entry)
        request = self._request(entry, PushType.APPEND)
        self._pending[index] = monotonic_ms()
        self.pusher.transport.spawn(self._push_and_take(request, batch=False))
        self._last_push_commit_ms = monotonic_ms()

    async def _push_and_take(self, request: PushEntryRequest, *, batch: bool) -> None:
        response = await self.pusher.transport.push(request)
        self._take_append_answer(response, batch=batch)

    def _take_append_answer(self, response: PushEntryResponse, *, batch: bool) -> None:
        code = response.response_code
        if code is ResponseCode.SUCCESS and response.index is not None:
            if batch:
                self._batch_pending.pop(response.index, None)
                last = response.index + response.count - 1 if response.count else response.index
            else:
                self._pending.pop(response.index, None)
                last = response.index
            self.pusher.update_peer_water_mark(response.term, self.peer_id, last)
            self.waker.wake()
        elif code is ResponseCode.INCONSISTENT_STATE:
            _log.info("[%s] %s answered INCONSISTENT_STATE to the push of %s (term %d): comparing again",
                      self.state.self_id, self.peer_id, response.index, response.term)
            self._change_state(-1, PushType.COMPARE)
            self.waker.wake()
        elif code is ResponseCode.REPEATED_PUSH and response.term == self.term and \
                response.end_index < self.pusher.peer_water_mark(self.term, self.peer_id):
            # The follower holds this push already, waiting for entries below it that it acknowledged once and has
            # lost (a restart): its one INCONSISTENT_STATE for that gap may have come after the call's timeout, and
            # it never sends another, so without a comparison no push would ever fill the gap.
            _log.warning("[%s] %s ends at %d, below the %d it acknowledged, and holds the push of %s: comparing "
                         "again", self.state.self_id, self.peer_id, response.end_index,
                         self.pusher.peer_water_mark(self.term, self.peer_id), response.index)
            self._change_state(-1, PushType.COMPARE)
            self.waker.wake()
        else:
            _log.warning("[%s] %s answered %s to a push: %s", self.state.self_id, self.peer_id, code.name,
                         response.base_info())

    async def _resend_unanswered(self) -> None:
        water_mark = self.pusher.peer_water_mark(self.term, self.peer_id)
        sent_ms = self._pending.get(water_mark + 1)
        if sent_ms is not None and monotonic_ms() - sent_ms > self.config.max_push_time_out_ms:
            _log.warning("[%s] no answer from %s to the push of %d: pushing it again", self.state.self_id,
                         self.peer_id, water_mark + 1)
            await self._append_one(water_mark + 1)

    def _forget_answered(self) -> None:
        water_mark = self.pusher.peer_water_mark(self.term, self.peer_id)
        for index in [i for i in self._pending if i < water_mark]:
            del self._pending[index]
        for first in [f for f, (_, count) in self._batch_pending.items() if f + count - 1 <= water_mark]:
            del self._batch_pending[first]
        self._last_check_leak_ms = monotonic_ms()

    async def _do_append(self) -> None:
        pushed = 0
        while self._fresh_state() and self.type is PushType.APPEND:
            if self.write_index > self.store.ledger_end_index:
                self._do_commit()
                await self._resend_unanswered()
                return
            if len(self._pending) >= MAX_PENDING_PUSHES or \
                    monotonic_ms() - self._last_check_leak_ms > LEAK_CHECK_INTERVAL_MS:
                self._forget_answered()
            if len(self._pending) >= MAX_PENDING_PUSHES:
                await self._resend_unanswered()
                return
            await self._append_one(self.write_index)
            self.write_index += 1
            pushed += 1
            if pushed % 64 == 0:
                await asyncio.sleep(0)  # let the pushes go out and other members' requests in

    # --- APPEND, batches -----------------------------------------------------------------------

    def _reset_batch(self) -> None:
        self._batch = PushEntryRequest(group=self.state.group, remote_id=self.peer_id, leader_id=self.leader_id,
                                       local_id=self.state.self_id, term=self.term, type=PushType.APPEND)

    def _send_batch(self) -> None:
        request = self._batch
        request.commit_index = self.store.committed_index
        self._batch_pending[request.first_entry_index] = (monotonic_ms(), request.count)
        self.pusher.transport.spawn(self._push_and_take(request, batch=True))
        self._last_push_commit_ms = monotonic_ms()
        self._reset_batch()

    async def _add_to_batch(self, index: int) -> None:
        entry = self._entry_for_append(index)
        if entry is None:
            return
        self._batch.add_entry(entry)
        if self._batch.total_size >= self.config.max_batch_push_size:
            self._send_batch()

    async def _resend_unanswered_batch(self) -> None:
        water_mark = self.pusher.peer_water_mark(self.term, self.peer_id)
        sent = self._batch_pending.get(water_mark + 1)
        if sent is not None and monotonic_ms() - sent[0] > self.config.max_push_time_out_ms:
            first, last = water_mark + 1, water_mark + sent[1]
            _log.warning("[%s] no answer from %s to the push of %d..%d: pushing them again", self.state.self_id,
                         self.peer_id, first, last)
            self._reset_batch()
            for index in range(first, last + 1):
                self._batch.add_entry(self.store.get(index))
            self._send_batch()

    async def _do_batch_append(self) -> None:
        added = 0
        while self._fresh_state() and self.type is PushType.APPEND:
            if self.write_index > self.store.ledger_end_index:
                if self._batch.count > 0:
                    self._send_batch()
                self._do_commit()
                await self._resend_unanswered_batch()
                return
            if len(self._batch_pending) >= MAX_PENDING_PUSHES or \
                    monotonic_ms() - self._last_check_leak_ms > LEAK_CHECK_INTERVAL_MS:
                self._forget_answered()
            if len(self._batch_pending) >= MAX_PENDING_PUSHES:
                await self._resend_unanswered_batch()
                return
            await self._add_to_batch(self.write_index)
            self.write_index += 1
            added += 1
            if added % 256 == 0:
                await asyncio.sleep(0)

    # --- COMPARE and TRUNCATE ------------------------------------------------------------------

    async def _do_truncate(self, truncate_index: int) -> None:
        entry = self.store.get(truncate_index)
        _log.info("[%s] %s truncates its log after entry %d (pos %d)", self.state.self_id, self.peer_id,
                  truncate_index, entry.pos)
        response = await self.pusher.transport.push(self._request(entry, PushType.TRUNCATE))
        if response.response_code is not ResponseCode.SUCCESS:
            raise DLedgerError(response.response_code, f"{self.peer_id} did not truncate at {truncate_index}")
        self._last_push_commit_ms = monotonic_ms()
        self._change_state(truncate_index, PushType.APPEND)

    async def _do_compare(self) -> None:
        store = self.store
        while self._fresh_state() and self.type in (PushType.COMPARE, PushType.TRUNCATE):
            if self.compare_index == -1 and store.ledger_end_index == -1:
                return
            if self.compare_index == -1:
                self.compare_index = store.ledger_end_index
                _log.info("[%s] comparing with %s from entry %d", self.state.self_id, self.peer_id,
                          self.compare_index)
            elif not store.ledger_begin_index <= self.compare_index <= store.ledger_end_index:
                self.compare_index = store.ledger_end_index
            entry = store.get(self.compare_index)
            response = await self.pusher.transport.push(self._request(entry, PushType.COMPARE))
            code = response.response_code
            if code not in (ResponseCode.SUCCESS, ResponseCode.INCONSISTENT_STATE):
                raise DLedgerError(code, f"{self.peer_id} could not compare entry {self.compare_index}")
            truncate_index = -1
            if code is ResponseCode.SUCCESS:
                if self.compare_index == response.end_index:
                    self._change_state(self.compare_index, PushType.APPEND)
                    return
                truncate_index = self.compare_index
            elif response.end_index < store.ledger_begin_index or response.begin_index > store.ledger_end_index:
                # The follower's log does not meet the leader's at all: it starts over at the leader's first entry.
                truncate_index = store.ledger_begin_index
            elif self.compare_index < response.begin_index:
                truncate_index = store.ledger_begin_index
            elif self.compare_index > response.end_index:
                self.compare_index = response.end_index
            else:
                self.compare_index -= 1
            if self.compare_index < store.ledger_begin_index:
                truncate_index = store.ledger_begin_index
            if truncate_index != -1:
                self._change_state(truncate_index, PushType.TRUNCATE)
                await self._do_truncate(truncate_index)
                return
