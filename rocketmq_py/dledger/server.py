"""A DLedger member: its log, its role in the group, and the API a state machine (the broker) uses.

Ports ``DLedgerServer.java`` (dledger-all-0.3.1.2): it wires the member state, the file store, the peer
port, the elector, the leader's pusher and the follower's handler, serves the peer RPCs with Java's
checks, and hands leadership to a ``preferredLeaderIds`` member when it can (checked every second).

For the state machine (see ``docs/design-dledger.md``):

* :meth:`DLedgerServer.append` writes bodies as the leader's next entries at once and returns a future
  completed with where they went once a majority holds them;
* :meth:`DLedgerServer.committed_entries` yields the committed entries in order, from any index, waiting
  for more; :meth:`DLedgerServer.add_commit_listener` is told each time the committed index moves;
* :meth:`DLedgerServer.add_role_listener` is told each role change with the term;
* :meth:`DLedgerServer.add_append_hook` may rewrite a leader's entry body once its ``pos`` is known.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import AsyncIterator, Callable, Sequence

from rocketmq_py.dledger.clean import CleanSpaceService
from rocketmq_py.dledger.codes import ResponseCode, Role
from rocketmq_py.dledger.config import DLedgerConfig
from rocketmq_py.dledger.elector import LeaderElector, RoleChangeListener
from rocketmq_py.dledger.entry import DLedgerEntry
from rocketmq_py.dledger.errors import DLedgerError
from rocketmq_py.dledger.follower import EntryHandler
from rocketmq_py.dledger.member_state import MemberState
from rocketmq_py.dledger.protocol import (
    AppendEntryRequest,
    AppendEntryResponse,
    GetEntriesRequest,
    GetEntriesResponse,
    HeartBeatRequest,
    HeartBeatResponse,
    LeadershipTransferRequest,
    LeadershipTransferResponse,
    MetadataRequest,
    MetadataResponse,
    PushEntryRequest,
    PushEntryResponse,
    RequestOrResponse,
    VoteRequest,
    VoteResponse,
)
from rocketmq_py.dledger.pusher import AppendedEntry, EntryPusher
from rocketmq_py.dledger.rpc import PeerTransport
from rocketmq_py.dledger.store import AppendHook, DLedgerFileStore

__all__ = ["DLedgerServer", "AppendedEntry", "CommitListener"]

_log = logging.getLogger(__name__)

#: Called with the new committed index each time it moves.
CommitListener = Callable[[int], None]

PREFERRED_LEADER_CHECK_INTERVAL_S = 1.0
_TRANSFEREE_CATCH_UP_POLL_S = 0.01


class DLedgerServer:
    """One member of a DLedger group."""

    def __init__(self, config: DLedgerConfig) -> None:
        config.validate()
        self.config = config
        self.state = MemberState(config)
        self.store = DLedgerFileStore(config, self.state)
        self.transport = PeerTransport(config, self)
        self.elector = LeaderElector(config, self.state, self.transport)
        self.pusher = EntryPusher(config, self.state, self.store, self.transport, self._committed)
        self.entry_handler = EntryHandler(self.state, self.store, self._update_committed_index)
        #: Deletes old data files; its ``deletable_before_expiry`` says which may go before they expire.
        self.clean = CleanSpaceService(config, self.store)
        self.elector.role_listeners.append(self._role_changed)
        self._commit_listeners: list[CommitListener] = []
        self._commit_moved = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._started = False

    def __repr__(self) -> str:
        return (f"DLedgerServer({self.config.group}/{self.config.self_id}, {self.role.name}, term={self.term}, "
                f"end={self.ledger_end_index}, committed={self.committed_index})")

    # --- lifecycle ----------------------------------------------------------------------------

    async def start(self, *, data_starts_at: int = 0) -> None:
        """Recover the log, open the peer port, and take part in the group. A member without data files yet
        starts them at ``data_starts_at`` (see :meth:`DLedgerFileStore.startup`)."""
        if self._started:
            raise RuntimeError(f"DLedger member {self.config.self_id} is already started")
        self._started = True
        self.store.startup(data_starts_at)
        await self.transport.start()
        self.entry_handler.start()
        self.pusher.start()
        self.elector.start()
        self.clean.start()
        self._tasks = [asyncio.ensure_future(self._flush_files()),
                       asyncio.ensure_future(self._keep_preferred_leader())]
        _log.info("[%s] DLedger member of group %s started: log %d..%d, committed %d, term %d", self.config.self_id,
                  self.config.group, self.ledger_begin_index, self.ledger_end_index, self.committed_index, self.term)

    async def shutdown(self) -> None:
        """Leave the group: stop the loops and the peer port, flush the files and write the checkpoint."""
        if not self._started:
            return
        self._started = False
        await self.elector.shutdown()
        await self.pusher.shutdown()
        await self.entry_handler.shutdown()
        await self.clean.shutdown()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            try:
                await task
            except asyncio.CancelledError:
                pass
        self._tasks = []
        self.transport.cancel_calls()
        await self.transport.shutdown()
        await asyncio.to_thread(self.store.shutdown)
        _log.info("[%s] DLedger member of group %s shut down", self.config.self_id, self.config.group)

    async def __aenter__(self) -> DLedgerServer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.shutdown()

    # --- what the state machine reads ---------------------------------------------------------

    @property
    def self_id(self) -> str:
        return self.config.self_id

    @property
    def role(self) -> Role:
        return self.state.role

    @property
    def is_leader(self) -> bool:
        return self.state.is_leader

    @property
    def term(self) -> int:
        return self.state.current_term

    @property
    def leader_id(self) -> str | None:
        return self.state.leader_id

    @property
    def port(self) -> int:
        return self.transport.server.port

    @property
    def ledger_begin_index(self) -> int:
        return self.store.ledger_begin_index

    @property
    def ledger_end_index(self) -> int:
        return self.store.ledger_end_index

    @property
    def ledger_end_term(self) -> int:
        return self.store.ledger_end_term

    @property
    def committed_index(self) -> int:
        return self.store.committed_index

    @property
    def committed_pos(self) -> int:
        """Where the last committed entry ends in the data files (-1 before anything is committed)."""
        return self.store.committed_pos

    def get(self, index: int) -> DLedgerEntry:
        """Entry ``index`` of the log (committed or not: see :attr:`committed_index`)."""
        return self.store.get(index)

    def entry_at(self, pos: int) -> DLedgerEntry:
        """The entry that starts at ``pos`` in the data files."""
        return self.store.entry_at(pos)

    def read(self, pos: int, size: int) -> bytes | None:
        """``size`` bytes of the data files at ``pos`` (None when they are not all written)."""
        return self.store.data_files.read(pos, size)

    def add_role_listener(self, listener: RoleChangeListener) -> None:
        self.elector.role_listeners.append(listener)

    def add_commit_listener(self, listener: CommitListener) -> None:
        self._commit_listeners.append(listener)

    def add_append_hook(self, hook: AppendHook) -> None:
        self.store.append_hooks.append(hook)

    async def committed_entries(self, start_index: int) -> AsyncIterator[DLedgerEntry]:
        """The committed entries from ``start_index`` on, in order, waiting for each to be committed."""
        index = start_index
        while True:
            while index <= self.store.committed_index:
                yield self.store.get(index)
                index += 1
            moved = self._commit_moved
            await moved.wait()

    # --- appending ----------------------------------------------------------------------------

    def append(self, bodies: Sequence[bytes]) -> asyncio.Future[list[AppendedEntry]]:
        """Write ``bodies`` as the next entries now; the future ends with where they went once a majority holds
        them, or with :class:`DLedgerError` (WAIT_QUORUM_ACK_TIMEOUT, TERM_CHANGED). Refusals (NOT_LEADER,
        LEADER_TRANSFERRING, LEADER_PENDING_FULL, DISK_FULL) raise at once and write nothing."""
        state = self.state
        if not bodies:
            raise DLedgerError(ResponseCode.REQUEST_WITH_EMPTY_BODYS, "nothing to append")
        if not state.is_leader:
            raise DLedgerError(ResponseCode.NOT_LEADER, f"{state.self_id} is {state.role.name}",
                               leader_id=state.leader_id)
        if state.transferee is not None:
            raise DLedgerError(ResponseCode.LEADER_TRANSFERRING, f"leadership is moving to {state.transferee}",
                               leader_id=state.leader_id)
        if self.pusher.is_pending_full(state.current_term):
            raise DLedgerError(ResponseCode.LEADER_PENDING_FULL, f"more than {self.config.max_pending_requests_num} "
                               f"appends wait for a majority", leader_id=state.self_id)
        entries = [self.store.append_as_leader(body) for body in bodies]
        return self.pusher.wait_ack(entries)

    async def transfer_leadership(self, transferee_id: str) -> LeadershipTransferResponse:
        """As the leader, hand leadership to ``transferee_id``; the answer says whether it took it."""
        request = LeadershipTransferRequest(group=self.config.group, remote_id=self.self_id, local_id=self.self_id,
                                            term=self.term, transfer_id=self.self_id, transferee_id=transferee_id)
        return await self.handle_leadership_transfer(request)

    # --- commit -------------------------------------------------------------------------------

    def _update_committed_index(self, term: int, committed_index: int) -> None:
        if self.store.update_committed_index(term, committed_index):
            self._committed()

    def _committed(self) -> None:
        moved, self._commit_moved = self._commit_moved, asyncio.Event()
        moved.set()
        committed = self.store.committed_index
        for listener in list(self._commit_listeners):
            try:
                listener(committed)
            except Exception:
                _log.exception("[%s] a commit listener failed at index %d", self.self_id, committed)

    def _role_changed(self, term: int, role: Role) -> None:
        self.pusher.wake()
        self.entry_handler.drain()

    # --- services -----------------------------------------------------------------------------

    async def _flush_files(self) -> None:
        last_checkpoint = time.monotonic()
        while True:
            await asyncio.sleep(self.config.flush_file_interval / 1000.0)
            try:
                if self.store.needs_flush:
                    await asyncio.to_thread(self.store.flush)
                if (time.monotonic() - last_checkpoint) * 1000.0 > self.config.check_point_interval:
                    await asyncio.to_thread(self.store.persist_checkpoint)
                    last_checkpoint = time.monotonic()
            except asyncio.CancelledError:
                raise
            except Exception:
                _log.exception("[%s] flushing the DLedger files failed", self.self_id)

    async def _keep_preferred_leader(self) -> None:
        while True:
            await asyncio.sleep(PREFERRED_LEADER_CHECK_INTERVAL_S)
            try:
                await self._check_preferred_leader()
            except asyncio.CancelledError:
                raise
            except Exception:
                _log.exception("[%s] handing leadership to a preferred member failed", self.self_id)

    async def _check_preferred_leader(self) -> None:
        state = self.state
        preferred = self.config.preferred_leaders
        if not state.is_leader or not preferred or state.transferee is not None or self.self_id in preferred:
            return
        max_behind = self.config.max_leadership_transfer_wait_index
        candidates = []
        for member_id in preferred:
            if not state.is_peer_member(member_id):
                _log.warning("[%s] preferred leader %s is not a member", self.self_id, member_id)
            elif not state.peers_live.get(member_id, False):
                _log.warning("[%s] preferred leader %s is not online", self.self_id, member_id)
            else:
                candidates.append(member_id)

        def behind(member_id: str) -> int:
            return self.store.ledger_end_index - self.pusher.peer_water_mark(state.current_term, member_id)

        if not candidates:
            return
        chosen = min(candidates, key=behind)
        if behind(chosen) >= max_behind:
            _log.warning("[%s] preferred leader %s is %d entries behind", self.self_id, chosen, behind(chosen))
            return
        _log.info("[%s] handing leadership to preferred leader %s (%d entries behind)", self.self_id, chosen,
                  behind(chosen))
        request = LeadershipTransferRequest(term=state.current_term, transferee_id=chosen)
        started = time.monotonic()
        response = await self.elector.handle_leadership_transfer(request)
        _log.info("[%s] handing leadership to %s ended with %s in %.0f ms", self.self_id, chosen,
                  response.response_code.name, (time.monotonic() - started) * 1000)

    # --- the peer RPCs ------------------------------------------------------------------------

    def _check_addressed(self, request: RequestOrResponse) -> None:
        if request.remote_id != self.self_id:
            raise DLedgerError(ResponseCode.UNKNOWN_MEMBER, f"{request.remote_id} != {self.self_id}")
        if request.group != self.config.group:
            raise DLedgerError(ResponseCode.UNKNOWN_GROUP, f"{request.group} != {self.config.group}")

    def _refused(self, request: RequestOrResponse, response: RequestOrResponse, error: DLedgerError,
                 what: str) -> None:
        _log.warning("[%s] %s refused: %s", self.self_id, what, error)
        response.copy_base_info(request)
        response.code = error.code
        response.leader_id = self.state.leader_id

    async def handle_heart_beat(self, request: HeartBeatRequest) -> HeartBeatResponse:
        try:
            self._check_addressed(request)
            return self.elector.handle_heart_beat(request)
        except DLedgerError as error:
            response = HeartBeatResponse()
            self._refused(request, response, error, "heartbeat")
            return response

    async def handle_vote(self, request: VoteRequest) -> VoteResponse:
        try:
            self._check_addressed(request)
            return self.elector.handle_vote(request, False)
        except DLedgerError as error:
            response = VoteResponse()
            self._refused(request, response, error, "vote")
            return response

    async def handle_append(self, request: AppendEntryRequest) -> AppendEntryResponse:
        try:
            self._check_addressed(request)
            if request.body is None:
                raise DLedgerError(ResponseCode.REQUEST_WITH_EMPTY_BODYS, "an append without a body")
            term = self.term
            appended = await self.append([request.body])
            last = appended[-1]
            return AppendEntryResponse(group=self.config.group, term=term, index=last.index, pos=last.pos,
                                       leader_id=self.self_id)
        except DLedgerError as error:
            response = AppendEntryResponse()
            self._refused(request, response, error, "append")
            return response

    async def handle_get(self, request: GetEntriesRequest) -> GetEntriesResponse:
        try:
            self._check_addressed(request)
            if not self.state.is_leader:
                raise DLedgerError(ResponseCode.NOT_LEADER, f"{self.self_id} is {self.role.name}")
            if request.begin_index is None:
                raise DLedgerError(ResponseCode.UNEXPECTED_ARGUMENT, "a get without beginIndex")
            return GetEntriesResponse(group=self.config.group, entries=[self.store.get(request.begin_index)])
        except DLedgerError as error:
            response = GetEntriesResponse()
            self._refused(request, response, error, "get")
            return response

    async def handle_metadata(self, request: MetadataRequest) -> MetadataResponse:
        try:
            self._check_addressed(request)
            return MetadataResponse(group=self.config.group, peers=dict(self.state.peer_map),
                                    leader_id=self.state.leader_id)
        except DLedgerError as error:
            response = MetadataResponse()
            self._refused(request, response, error, "metadata")
            return response

    async def handle_push(self, request: PushEntryRequest) -> PushEntryResponse | None:
        try:
            self._check_addressed(request)
            return await self.entry_handler.handle_push(request)
        except DLedgerError as error:
            response = PushEntryResponse()
            self._refused(request, response, error, "push")
            return response

    async def handle_leadership_transfer(self, request: LeadershipTransferRequest) -> LeadershipTransferResponse:
        state = self.state
        try:
            self._check_addressed(request)
            if request.transfer_id == self.self_id:
                # This member leads and is asked to hand over.
                if not state.is_peer_member(request.transferee_id):
                    raise DLedgerError(ResponseCode.UNKNOWN_MEMBER, f"{request.transferee_id} is not a member")
                if state.current_term != request.term:
                    raise DLedgerError(ResponseCode.INCONSISTENT_TERM, f"term {state.current_term} != {request.term}")
                if not state.is_leader:
                    raise DLedgerError(ResponseCode.NOT_LEADER, f"{self.self_id} is {state.role.name}")
                assert request.transferee_id is not None
                behind = self.store.ledger_end_index - self.pusher.peer_water_mark(request.term, request.transferee_id)
                if behind >= self.config.max_leadership_transfer_wait_index:
                    raise DLedgerError(ResponseCode.FALL_BEHIND_TOO_MUCH, f"{request.transferee_id} is {behind} "
                                       f"entries behind")
                return await self.elector.handle_leadership_transfer(request)
            if request.transferee_id == self.self_id:
                # The leader hands over to this member.
                if request.transfer_id != state.leader_id:
                    raise DLedgerError(ResponseCode.INCONSISTENT_LEADER, f"{request.transfer_id} is not the leader")
                deadline = time.monotonic() + self.config.leadership_transfer_wait_timeout / 1000.0
                while request.take_leadership_ledger_index > state.ledger_end_index:
                    if time.monotonic() > deadline:
                        raise DLedgerError(ResponseCode.TAKE_LEADERSHIP_FAILED, "the ledger did not catch up with "
                                           f"{request.take_leadership_ledger_index} in time")
                    await asyncio.sleep(_TRANSFEREE_CATCH_UP_POLL_S)
                return await self.elector.handle_take_leadership(request)
            return LeadershipTransferResponse(term=state.current_term, code=ResponseCode.UNEXPECTED_ARGUMENT)
        except DLedgerError as error:
            response = LeadershipTransferResponse()
            self._refused(request, response, error, "leadership transfer")
            return response
