"""Leader election: terms, votes, heartbeats and the hand-over of leadership.

Ports ``DLedgerLeaderElector.java`` (dledger-all-0.3.1.2). One loop keeps the member's role, every 10 ms:

* a **candidate** asks every member for its vote (itself included) when its time comes, with its ledger's
  end; a majority of ACCEPT makes it leader. Otherwise it waits a random 300..1000 ms (longer when
  another member already leads or has a longer ledger) and tries again, in a new term when the votes said
  so. A voter refuses a candidate whose ledger ends before its own (by term, then index), a term below
  its own, and a second candidate in the same term.
* a **leader** sends heartbeats every ``heartBeatTimeIntervalMs`` (2 s) and waits up to that long for a
  majority; it steps down to candidate when a member knows a larger term, when another leader answers, or
  when no majority answered for ``maxHeartBeatLeak`` (3) intervals.
* a **follower** stands as candidate when ``maxHeartBeatLeak`` intervals passed without a heartbeat.

A member that hears of a larger term (in a vote or a heartbeat) first steps down to candidate, takes the
term at its next turn, and then follows the leader of that term when its heartbeat comes.

Leadership transfer: the leader, asked to hand over (by ``preferredLeaderIds`` or a LEADERSHIP_TRANSFER
request), stops taking appends and tells the transferee, which waits until its ledger caught up and then
stands in the next term with short vote intervals while the others refuse other candidates.
"""
from __future__ import annotations

import asyncio
import functools
import logging
import random
from typing import Callable

from rocketmq_py.common.clock import monotonic_ms
from rocketmq_py.dledger.codes import ResponseCode, Role, VoteResult
from rocketmq_py.dledger.config import DLedgerConfig
from rocketmq_py.dledger.member_state import MemberState
from rocketmq_py.dledger.protocol import (
    HeartBeatRequest,
    HeartBeatResponse,
    LeadershipTransferRequest,
    LeadershipTransferResponse,
    VoteRequest,
    VoteResponse,
)
from rocketmq_py.dledger.rpc import PeerTransport

__all__ = ["LeaderElector", "RoleChangeListener"]

_log = logging.getLogger(__name__)

#: Called on every role change with the term and the new role.
RoleChangeListener = Callable[[int, Role], None]

_MAINTAIN_INTERVAL_S = 0.01
#: The time of something that has not happened yet: any elapsed time since it is longer than any interval.
_NEVER = float("-inf")


class _ParseResult:
    """What a vote round decided (Java's ``VoteResponse.ParseResult``)."""

    WAIT_TO_REVOTE = "WAIT_TO_REVOTE"
    REVOTE_IMMEDIATELY = "REVOTE_IMMEDIATELY"
    PASSED = "PASSED"
    WAIT_TO_VOTE_NEXT = "WAIT_TO_VOTE_NEXT"


class LeaderElector:
    def __init__(self, config: DLedgerConfig, state: MemberState, transport: PeerTransport) -> None:
        self.config = config
        self.state = state
        self.transport = transport
        self.role_listeners: list[RoleChangeListener] = []
        self._random = random.Random()
        self._last_leader_heart_beat_ms = _NEVER
        self._last_send_heart_beat_ms = _NEVER
        self._last_succ_heart_beat_ms = _NEVER
        self._next_time_to_request_vote_ms = _NEVER
        self._need_increase_term_immediately = False
        self._last_parse_result = _ParseResult.WAIT_TO_REVOTE
        self._take_leadership_future: asyncio.Future[LeadershipTransferResponse] | None = None
        self._task: asyncio.Task[None] | None = None

    # --- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._maintain())

    async def shutdown(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None

    async def _maintain(self) -> None:
        while True:
            try:
                if self.config.enable_leader_elector:
                    if self.state.is_leader:
                        await self._maintain_as_leader()
                    elif self.state.is_follower:
                        self._maintain_as_follower()
                    else:
                        await self._maintain_as_candidate()
            except asyncio.CancelledError:
                raise
            except Exception:
                _log.exception("[%s] the election loop failed", self.state.self_id)
            await asyncio.sleep(_MAINTAIN_INTERVAL_S)

    # --- role changes -------------------------------------------------------------------------

    def change_role_to_leader(self, term: int) -> None:
        if self.state.current_term != term:
            _log.warning("[%s] not taking leadership of term %d: the term is now %d", self.state.self_id, term,
                         self.state.current_term)
            return
        self.state.change_to_leader(term)
        self._last_send_heart_beat_ms = _NEVER
        _log.info("[%s] leader of group %s in term %d", self.state.self_id, self.state.group, term)
        self._role_changed(term, Role.LEADER)

    def change_role_to_candidate(self, term: int) -> None:
        if term < self.state.current_term:
            _log.info("[%s] not standing as candidate in term %d: the term is now %d", self.state.self_id, term,
                      self.state.current_term)
            return
        self.state.change_to_candidate(term)
        _log.info("[%s] candidate (heard of term %d, term is %d)", self.state.self_id, term,
                  self.state.current_term)
        self._role_changed(term, Role.CANDIDATE)

    def change_role_to_follower(self, term: int, leader_id: str) -> None:
        self._last_parse_result = _ParseResult.WAIT_TO_REVOTE
        self.state.change_to_follower(term, leader_id)
        self._last_leader_heart_beat_ms = monotonic_ms()
        _log.info("[%s] follower of %s in term %d", self.state.self_id, leader_id, term)
        self._role_changed(term, Role.FOLLOWER)

    def _role_changed(self, term: int, role: Role) -> None:
        self._check_take_leadership(term, role)
        for listener in list(self.role_listeners):
            try:
                listener(term, role)
            except Exception:
                _log.exception("[%s] a role change listener failed (term %d, %s)", self.state.self_id, term,
                               role.name)

    # --- heartbeats ---------------------------------------------------------------------------

    def handle_heart_beat(self, request: HeartBeatRequest) -> HeartBeatResponse:
        state = self.state
        if not state.is_peer_member(request.leader_id):
            _log.warning("[%s] heartbeat from %s, who is not a member", state.self_id, request.leader_id)
            return HeartBeatResponse(term=state.current_term, code=ResponseCode.UNKNOWN_MEMBER)
        if request.leader_id == state.self_id:
            _log.warning("[%s] heartbeat from itself", state.self_id)
            return HeartBeatResponse(term=state.current_term, code=ResponseCode.UNEXPECTED_MEMBER)
        if request.term < state.current_term:
            return HeartBeatResponse(term=state.current_term, code=ResponseCode.EXPIRED_TERM)
        if request.term == state.current_term:
            if state.leader_id is None:
                assert request.leader_id is not None
                self.change_role_to_follower(request.term, request.leader_id)
                return HeartBeatResponse()
            if request.leader_id == state.leader_id:
                self._last_leader_heart_beat_ms = monotonic_ms()
                return HeartBeatResponse()
            _log.error("[%s][BUG] term %d has leader %s, but %s sent a heartbeat", state.self_id,
                       state.current_term, state.leader_id, request.leader_id)
            return HeartBeatResponse(code=ResponseCode.INCONSISTENT_LEADER)
        # A larger term: stand down first, take the term at the next turn, follow at the next heartbeat.
        self.change_role_to_candidate(request.term)
        self._need_increase_term_immediately = True
        return HeartBeatResponse(code=ResponseCode.TERM_NOT_READY)

    async def _send_heart_beats(self, term: int, leader_id: str) -> None:
        state = self.state
        succeeded = 1
        not_ready = 0
        max_term = -1
        inconsistent_leader = False
        started_ms = monotonic_ms()
        pending: set[asyncio.Task[object]] = set()
        for member_id in state.peer_map:
            if member_id == state.self_id:
                continue
            request = HeartBeatRequest(group=state.group, local_id=state.self_id, remote_id=member_id,
                                       leader_id=leader_id, term=term)
            call = self.transport.spawn(self.transport.heart_beat(request))
            # Every answer says whether its member is alive, also one that comes after the majority's: the
            # preferred leader's liveness is read from here, and a member that always answered second (a
            # restarted Java member beside a quicker one) would otherwise never count as back.
            call.add_done_callback(functools.partial(self._note_liveness, member_id))
            pending.add(call)
        deadline = started_ms + self.config.heart_beat_time_interval_ms
        while pending and not (state.is_quorum(succeeded) or state.is_quorum(succeeded + not_ready)):
            done, pending = await asyncio.wait(pending, timeout=max(deadline - monotonic_ms(), 0) / 1000.0,
                                               return_when=asyncio.FIRST_COMPLETED)
            if not done:
                break
            for task in done:
                if task.cancelled() or task.exception() is not None:
                    continue
                response = task.result()
                assert isinstance(response, HeartBeatResponse)
                code = response.response_code
                if code is ResponseCode.SUCCESS:
                    succeeded += 1
                elif code is ResponseCode.EXPIRED_TERM:
                    max_term = response.term
                elif code is ResponseCode.INCONSISTENT_LEADER:
                    inconsistent_leader = True
                elif code is ResponseCode.TERM_NOT_READY:
                    not_ready += 1
        if state.is_quorum(succeeded):
            self._last_succ_heart_beat_ms = monotonic_ms()
            return
        _log.info("[%s] heartbeats of term %d: %d succeeded, %d not ready, max term %d, inconsistent leader %s "
                  "(%d members)", state.self_id, term, succeeded, not_ready, max_term, inconsistent_leader,
                  state.peer_size)
        if state.is_quorum(succeeded + not_ready):
            self._last_send_heart_beat_ms = _NEVER
        elif max_term > term:
            self.change_role_to_candidate(max_term)
        elif inconsistent_leader:
            self.change_role_to_candidate(term)
        elif monotonic_ms() - self._last_succ_heart_beat_ms > \
                self.config.max_heart_beat_leak * self.config.heart_beat_time_interval_ms:
            self.change_role_to_candidate(term)

    def _note_liveness(self, member_id: str, call: asyncio.Task[object]) -> None:
        if call.cancelled() or call.exception() is not None:
            self.state.peers_live[member_id] = False
            return
        response = call.result()
        assert isinstance(response, HeartBeatResponse)
        self.state.peers_live[member_id] = response.response_code is not ResponseCode.NETWORK_ERROR

    async def _maintain_as_leader(self) -> None:
        if monotonic_ms() - self._last_send_heart_beat_ms <= self.config.heart_beat_time_interval_ms:
            return
        if not self.state.is_leader:
            return
        term = self.state.current_term
        leader_id = self.state.leader_id
        assert leader_id is not None
        self._last_send_heart_beat_ms = monotonic_ms()
        await self._send_heart_beats(term, leader_id)

    def _maintain_as_follower(self) -> None:
        elapsed = monotonic_ms() - self._last_leader_heart_beat_ms
        if elapsed > self.config.max_heart_beat_leak * self.config.heart_beat_time_interval_ms \
                and self.state.is_follower:
            _log.info("[%s] no heartbeat from leader %s for %.0f ms", self.state.self_id, self.state.leader_id,
                      elapsed)
            self.change_role_to_candidate(self.state.current_term)

    # --- votes --------------------------------------------------------------------------------

    def handle_vote(self, request: VoteRequest, from_self: bool) -> VoteResponse:
        state = self.state

        def answer(result: VoteResult, term: int | None = None) -> VoteResponse:
            response = VoteResponse().copy_base_info(request)
            response.term = state.current_term if term is None else term
            response.vote_result = result
            return response

        if not state.is_peer_member(request.leader_id):
            _log.warning("[%s] vote asked by %s, who is not a member", state.self_id, request.leader_id)
            return answer(VoteResult.REJECT_UNKNOWN_LEADER)
        if not from_self and request.leader_id == state.self_id:
            _log.warning("[%s] vote asked in its own name by another member", state.self_id)
            return answer(VoteResult.REJECT_UNEXPECTED_LEADER)
        if request.ledger_end_term < state.ledger_end_term:
            return answer(VoteResult.REJECT_EXPIRED_LEDGER_TERM)
        if request.ledger_end_term == state.ledger_end_term and request.ledger_end_index < state.ledger_end_index:
            return answer(VoteResult.REJECT_SMALL_LEDGER_END_INDEX)
        if request.term < state.current_term:
            return answer(VoteResult.REJECT_EXPIRED_VOTE_TERM)
        if request.term == state.current_term:
            if state.vote_for is not None and state.vote_for != request.leader_id:
                if state.leader_id is not None:
                    return answer(VoteResult.REJECT_ALREADY_HAS_LEADER)
                return answer(VoteResult.REJECT_ALREADY_VOTED)
        else:
            # A larger term: stand down first; the vote waits until this member has moved to that term.
            self.change_role_to_candidate(request.term)
            self._need_increase_term_immediately = True
            return answer(VoteResult.REJECT_TERM_NOT_READY)
        if request.term < state.ledger_end_term:
            return answer(VoteResult.REJECT_TERM_SMALL_THAN_LEDGER, state.ledger_end_term)
        if not from_self and self._is_taking_leadership() and request.ledger_end_term == state.ledger_end_term \
                and state.ledger_end_index >= request.ledger_end_index:
            return answer(VoteResult.REJECT_TAKING_LEADERSHIP)
        state.set_vote_for(request.leader_id)
        return answer(VoteResult.ACCEPT)

    def _is_taking_leadership(self) -> bool:
        return (bool(self.config.preferred_leader_ids)
                and self.state.term_to_take_leadership == self.state.current_term
                and self.state.self_id in self.config.preferred_leaders)

    def _next_time_to_request_vote(self) -> float:
        if self._is_taking_leadership():
            low = self.config.min_take_leadership_vote_interval_ms
            high = self.config.max_take_leadership_vote_interval_ms
        else:
            low, high = self.config.min_vote_interval_ms, self.config.max_vote_interval_ms
        return monotonic_ms() + low + self._random.randrange(high - low)

    async def _maintain_as_candidate(self) -> None:
        state = self.state
        if monotonic_ms() < self._next_time_to_request_vote_ms and not self._need_increase_term_immediately:
            return
        if not state.is_candidate:
            return
        if self._last_parse_result == _ParseResult.WAIT_TO_VOTE_NEXT or self._need_increase_term_immediately:
            previous = state.current_term
            term = state.next_term()
            _log.info("[%s] term %d -> %d", state.self_id, previous, term)
            self._last_parse_result = _ParseResult.WAIT_TO_REVOTE
        else:
            term = state.current_term
        ledger_end_index, ledger_end_term = state.ledger_end_index, state.ledger_end_term
        if self._need_increase_term_immediately:
            self._next_time_to_request_vote_ms = self._next_time_to_request_vote()
            self._need_increase_term_immediately = False
            return
        await self._vote_round(term, ledger_end_term, ledger_end_index)

    async def _vote_round(self, term: int, ledger_end_term: int, ledger_end_index: int) -> None:
        state = self.state
        started_ms = monotonic_ms()
        known_max_term = term
        valid = accepted = not_ready = bigger_ledger = 0
        already_has_leader = False
        answered = 0
        calls: set[asyncio.Future[object]] = set()
        for member_id in state.peer_map:
            request = VoteRequest(group=state.group, ledger_end_index=ledger_end_index,
                                  ledger_end_term=ledger_end_term, leader_id=state.self_id, term=term,
                                  remote_id=member_id, local_id=state.self_id)
            if member_id == state.self_id:
                own: asyncio.Future[object] = asyncio.get_running_loop().create_future()
                own.set_result(self.handle_vote(request, True))
                calls.add(own)
            else:
                calls.add(self.transport.spawn(self.transport.vote(request)))
        pending = calls
        deadline = started_ms + 2000 + self._random.randrange(self.config.max_vote_interval_ms)
        while pending and not (already_has_leader or state.is_quorum(accepted)
                               or state.is_quorum(accepted + not_ready)):
            done, pending = await asyncio.wait(pending, timeout=max(deadline - monotonic_ms(), 0) / 1000.0,
                                               return_when=asyncio.FIRST_COMPLETED)
            if not done:
                break
            for task in done:
                answered += 1
                if task.cancelled() or task.exception() is not None:
                    continue
                response = task.result()
                assert isinstance(response, VoteResponse)
                _log.info("[%s] vote of %s in term %d: %s (its term %d)", state.self_id, response.remote_id, term,
                          response.vote_result.name, response.term)
                result = response.vote_result
                if result is not VoteResult.UNKNOWN:
                    valid += 1
                if result is VoteResult.ACCEPT:
                    accepted += 1
                elif result is VoteResult.REJECT_ALREADY_HAS_LEADER:
                    already_has_leader = True
                elif result in (VoteResult.REJECT_TERM_SMALL_THAN_LEDGER, VoteResult.REJECT_EXPIRED_VOTE_TERM):
                    known_max_term = max(known_max_term, response.term)
                elif result in (VoteResult.REJECT_EXPIRED_LEDGER_TERM, VoteResult.REJECT_SMALL_LEDGER_END_INDEX):
                    bigger_ledger += 1
                elif result is VoteResult.REJECT_TERM_NOT_READY:
                    not_ready += 1
        heart_beat_ms = self.config.heart_beat_time_interval_ms
        if known_max_term > term:
            result_name = _ParseResult.WAIT_TO_VOTE_NEXT
            self._next_time_to_request_vote_ms = self._next_time_to_request_vote()
            self.change_role_to_candidate(known_max_term)
        elif already_has_leader:
            result_name = _ParseResult.WAIT_TO_REVOTE
            self._next_time_to_request_vote_ms = self._next_time_to_request_vote() + \
                heart_beat_ms * self.config.max_heart_beat_leak
        elif not state.is_quorum(valid):
            result_name = _ParseResult.WAIT_TO_REVOTE
            self._next_time_to_request_vote_ms = self._next_time_to_request_vote()
        elif not state.is_quorum(valid - bigger_ledger):
            result_name = _ParseResult.WAIT_TO_REVOTE
            self._next_time_to_request_vote_ms = self._next_time_to_request_vote() + \
                self.config.max_vote_interval_ms
        elif state.is_quorum(accepted):
            result_name = _ParseResult.PASSED
        elif state.is_quorum(accepted + not_ready):
            result_name = _ParseResult.REVOTE_IMMEDIATELY
        else:
            result_name = _ParseResult.WAIT_TO_VOTE_NEXT
            self._next_time_to_request_vote_ms = self._next_time_to_request_vote()
        self._last_parse_result = result_name
        _log.info("[%s] votes of term %d in %.0f ms: %d answered, %d accepted, %d not ready, %d with a longer "
                  "ledger, already has a leader %s, max term %d: %s", state.self_id, term, monotonic_ms() - started_ms,
                  answered, accepted, not_ready, bigger_ledger, already_has_leader, known_max_term, result_name)
        if result_name == _ParseResult.PASSED:
            self.change_role_to_leader(term)

    # --- leadership transfer ------------------------------------------------------------------

    async def handle_leadership_transfer(self, request: LeadershipTransferRequest) -> LeadershipTransferResponse:
        """As the leader: stop taking appends and ask ``request.transferee_id`` to take over."""
        state = self.state
        _log.info("[%s] asked to hand leadership of term %d to %s", state.self_id, request.term,
                  request.transferee_id)
        if state.current_term != request.term:
            return LeadershipTransferResponse(term=state.current_term, code=ResponseCode.INCONSISTENT_TERM)
        if not state.is_leader:
            return LeadershipTransferResponse(term=state.current_term, code=ResponseCode.NOT_LEADER)
        if state.transferee is not None:
            return LeadershipTransferResponse(term=state.current_term, code=ResponseCode.LEADER_TRANSFERRING)
        state.set_transferee(request.transferee_id)
        take = LeadershipTransferRequest(
            group=state.group, leader_id=state.leader_id, local_id=state.self_id, remote_id=request.transferee_id,
            term=request.term, take_leadership_ledger_index=state.ledger_end_index, transfer_id=state.self_id,
            transferee_id=request.transferee_id,
        )
        response = await self.transport.leadership_transfer(take)
        if response.response_code is not ResponseCode.SUCCESS or \
                (state.current_term == request.term and state.transferee is not None):
            _log.warning("[%s] handing leadership to %s failed (%s)", state.self_id, request.transferee_id,
                         response.response_code.name)
            if state.is_leader:
                state.set_transferee(None)
        return response

    def handle_take_leadership(self, request: LeadershipTransferRequest) -> asyncio.Future[LeadershipTransferResponse]:
        """As the transferee: stand in the next term; the answer comes when that term's election ended."""
        state = self.state
        future: asyncio.Future[LeadershipTransferResponse] = asyncio.get_running_loop().create_future()
        if state.current_term != request.term:
            future.set_result(LeadershipTransferResponse(term=state.current_term,
                                                         code=ResponseCode.INCONSISTENT_TERM))
            return future
        state.term_to_take_leadership = request.term + 1
        self._take_leadership_future = future
        self.change_role_to_candidate(request.term + 1)
        self._need_increase_term_immediately = True
        return future

    def _check_take_leadership(self, term: int, role: Role) -> None:
        future = self._take_leadership_future
        target = self.state.term_to_take_leadership
        if target == -1 or future is None:
            return
        if term > target:
            code = ResponseCode.EXPIRED_TERM
        elif term == target:
            if role is Role.LEADER:
                code = ResponseCode.SUCCESS
            elif role is Role.FOLLOWER:
                code = ResponseCode.TAKE_LEADERSHIP_FAILED
            else:
                return
        else:
            # A heartbeat of the old term may make it follower before it moved to the new term.
            code = ResponseCode.TAKE_LEADERSHIP_FAILED if role is Role.FOLLOWER else ResponseCode.INTERNAL_ERROR
        if not future.done():
            future.set_result(LeadershipTransferResponse(term=term, code=code))
        _log.info("[%s] taking leadership of term %d ended: %s (term %d, %s)", self.state.self_id, target,
                  code.name, term, role.name)
        self.state.term_to_take_leadership = -1
        self._take_leadership_future = None
