"""The follower's side of replication: it takes the leader's pushes in index order.

Ports the follower half of ``DLedgerEntryPusher.java`` (``EntryHandler``, dledger-all-0.3.1.2). APPEND
pushes wait by their first index until the log reaches them (the leader pipelines them, so they may come
ahead of their turn); COMPARE, TRUNCATE and COMMIT pushes go first, in the order they came. A COMPARE
or TRUNCATE drops the APPENDs still waiting (the leader starts over from the comparison; those pushes
are never answered, as in Java). Only a follower takes pushes; a member in another role answers
COMPARE, TRUNCATE and COMMIT with NOT_FOLLOWER.

Every answer carries the follower's ledger begin and end, which the leader's comparison walks by. An
APPEND that waited a second while the log did not reach it (the follower lost entries in a crash, or
an answer got lost) is answered INCONSISTENT_STATE, so that the leader compares again.
"""
from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Callable

from rocketmq_py.common.clock import monotonic_ms
from rocketmq_py.dledger.codes import PushType, ResponseCode
from rocketmq_py.dledger.errors import DLedgerError
from rocketmq_py.dledger.member_state import MemberState
from rocketmq_py.dledger.protocol import PushEntryRequest, PushEntryResponse
from rocketmq_py.dledger.store import DLedgerFileStore

__all__ = ["EntryHandler"]

_log = logging.getLogger(__name__)

#: How long an APPEND waits for its turn before the follower may answer INCONSISTENT_STATE.
APPEND_WAIT_MS = 1000
#: How often the APPENDs waiting out of turn are looked at.
ABNORMAL_CHECK_INTERVAL_S = 1.0
#: COMPARE, TRUNCATE and COMMIT pushes that may wait; more are answered PUSH_REQUEST_IS_FULL.
MAX_CONTROL_REQUESTS = 1024


class _Push:
    __slots__ = ("request", "future", "created_ms")

    def __init__(self, request: PushEntryRequest, future: asyncio.Future[PushEntryResponse | None]) -> None:
        self.request = request
        self.future = future
        self.created_ms = monotonic_ms()

    def answer(self, response: PushEntryResponse | None) -> None:
        if not self.future.done():
            self.future.set_result(response)


class EntryHandler:
    def __init__(self, state: MemberState, store: DLedgerFileStore,
                 update_committed_index: Callable[[int, int], None]) -> None:
        self.state = state
        self.store = store
        #: Moves the committed index (and tells the state machine) after an entry was taken.
        self.update_committed_index = update_committed_index
        self._appends: dict[int, _Push] = {}
        self._controls: deque[_Push] = deque()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._watch_waiting_appends())

    async def shutdown(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
        for push in [*self._appends.values(), *self._controls]:
            push.answer(None)
        self._appends.clear()
        self._controls.clear()

    # --- taking pushes ------------------------------------------------------------------------

    def handle_push(self, request: PushEntryRequest) -> asyncio.Future[PushEntryResponse | None]:
        """The answer to ``request`` (None: it is dropped unanswered)."""
        future: asyncio.Future[PushEntryResponse | None] = asyncio.get_running_loop().create_future()
        push = _Push(request, future)
        if request.type is PushType.APPEND:
            if request.count == 0:
                raise DLedgerError(ResponseCode.UNEXPECTED_ARGUMENT, "an APPEND push without entries")
            index = request.first_entry_index
            if index in self._appends:
                _log.warning("[%s] a push of entry %d already waits (%s); this one (%s) is refused",
                             self.state.self_id, index, self._appends[index].request.base_info(),
                             request.base_info())
                push.answer(self._response(request, ResponseCode.REPEATED_PUSH))
            else:
                self._appends[index] = push
        elif request.type is PushType.COMMIT:
            self._queue_control(push)
        else:
            if request.entry is None:
                raise DLedgerError(ResponseCode.UNEXPECTED_ARGUMENT, f"a {request.type.name} push without an entry")
            for dropped in self._appends.values():
                dropped.answer(None)
            self._appends.clear()
            self._queue_control(push)
        self.drain()
        return future

    def _queue_control(self, push: _Push) -> None:
        if len(self._controls) >= MAX_CONTROL_REQUESTS:
            _log.warning("[%s] %d pushes already wait: %s refused", self.state.self_id, len(self._controls),
                         push.request.type.name)
            push.answer(self._response(push.request, ResponseCode.PUSH_REQUEST_IS_FULL))
        else:
            self._controls.append(push)

    def drain(self) -> None:
        """Take every push that can be taken now: the control pushes, then the APPENDs whose turn it is."""
        if not self.state.is_follower:
            while self._controls:
                push = self._controls.popleft()
                push.answer(self._response(push.request, ResponseCode.NOT_FOLLOWER))
            return
        while True:
            if self._controls:
                push = self._controls.popleft()
                push_type = push.request.type
                if push_type is PushType.TRUNCATE:
                    self._truncate(push)
                elif push_type is PushType.COMPARE:
                    self._compare(push)
                else:
                    self._commit(push)
                continue
            next_index = self.store.ledger_end_index + 1
            waiting = self._appends.pop(next_index, None)
            if waiting is None:
                return
            self._append(next_index, waiting)

    def _response(self, request: PushEntryRequest, code: ResponseCode) -> PushEntryResponse:
        response = PushEntryResponse(group=request.group, code=code, term=request.term,
                                     begin_index=self.store.ledger_begin_index, end_index=self.store.ledger_end_index)
        if request.type is not PushType.COMMIT:
            response.index = request.first_entry_index
            response.count = request.count
        return response

    def _failed(self, what: str, push: _Push, error: Exception) -> None:
        if isinstance(error, DLedgerError):
            _log.warning("[%s] %s of %s failed: %s", self.state.self_id, what, push.request.base_info(), error)
        else:
            _log.error("[%s] %s of %s failed", self.state.self_id, what, push.request.base_info(), exc_info=True)

    def _append(self, write_index: int, push: _Push) -> None:
        request = push.request
        try:
            if request.first_entry_index != write_index:
                raise DLedgerError(ResponseCode.INCONSISTENT_STATE, f"push of {request.first_entry_index} taken as "
                                   f"{write_index}")
            assert request.leader_id is not None
            for entry in (request.batch_entry if request.is_batch else [request.entry]):
                assert entry is not None
                self.store.append_as_follower(entry, request.term, request.leader_id)
        except Exception as error:
            self._failed("append", push, error)
            push.answer(self._response(request, ResponseCode.INCONSISTENT_STATE))
            return
        push.answer(self._response(request, ResponseCode.SUCCESS))
        self.update_committed_index(request.term, request.commit_index)

    def _compare(self, push: _Push) -> None:
        request = push.request
        assert request.entry is not None
        try:
            local = self.store.get(request.entry.index)
            code = ResponseCode.SUCCESS if request.entry.same_as(local) else ResponseCode.INCONSISTENT_STATE
        except DLedgerError as error:
            _log.info("[%s] compare of entry %d: %s", self.state.self_id, request.entry.index, error)
            code = ResponseCode.INCONSISTENT_STATE
        push.answer(self._response(request, code))

    def _commit(self, push: _Push) -> None:
        try:
            self.update_committed_index(push.request.term, push.request.commit_index)
        except Exception as error:
            self._failed("commit", push, error)
            push.answer(self._response(push.request, ResponseCode.UNKNOWN))
            return
        push.answer(self._response(push.request, ResponseCode.SUCCESS))

    def _truncate(self, push: _Push) -> None:
        request = push.request
        assert request.entry is not None and request.leader_id is not None
        _log.info("[%s] truncating after entry %d (pos %d) for leader %s", self.state.self_id, request.entry.index,
                  request.entry.pos, request.leader_id)
        try:
            index = self.store.truncate(request.entry, request.term, request.leader_id)
            if index != request.entry.index:
                raise DLedgerError(ResponseCode.INCONSISTENT_STATE, f"truncated at {index}")
        except Exception as error:
            self._failed("truncate", push, error)
            push.answer(self._response(request, ResponseCode.INCONSISTENT_STATE))
            return
        push.answer(self._response(request, ResponseCode.SUCCESS))
        self.update_committed_index(request.term, request.commit_index)

    # --- APPENDs that wait out of turn --------------------------------------------------------

    async def _watch_waiting_appends(self) -> None:
        while True:
            await asyncio.sleep(ABNORMAL_CHECK_INTERVAL_S)
            try:
                if self.state.is_follower and self._appends:
                    self._check_waiting_appends(self.store.ledger_end_index)
                self.drain()
            except Exception:
                _log.exception("[%s] checking the waiting pushes failed", self.state.self_id)

    def _check_waiting_appends(self, end_index: int) -> None:
        """Answer pushes the log already holds (a lost answer), and INCONSISTENT_STATE to the first push that
        waited too long for a gap before it (entries this member lost)."""
        fast_forward = None
        for first, push in list(self._appends.items()):
            request = push.request
            if request.last_entry_index <= end_index:
                entries = request.batch_entry if request.is_batch else [request.entry]
                try:
                    same = all(e is not None and e.same_as(self.store.get(e.index)) for e in entries)
                except DLedgerError:
                    same = False
                _log.warning("[%s] a push of entries up to %d came again after the log reached %d",
                             self.state.self_id, request.last_entry_index, end_index)
                push.answer(self._response(request, ResponseCode.SUCCESS if same else ResponseCode.INCONSISTENT_STATE))
                del self._appends[first]
                continue
            if first == end_index + 1:
                return
            if monotonic_ms() - push.created_ms >= APPEND_WAIT_MS and (fast_forward is None or first < fast_forward):
                fast_forward = first
        if fast_forward is not None:
            _log.warning("[%s] the push of entry %d waited for a gap after %d: asking the leader to compare",
                         self.state.self_id, fast_forward, end_index)
            self._appends[fast_forward].answer(
                self._response(self._appends[fast_forward].request, ResponseCode.INCONSISTENT_STATE))
