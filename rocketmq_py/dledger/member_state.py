"""A member's view of its group: its role, the term, its vote, the leader, and the ledger's end.

Ports ``MemberState.java`` (dledger-all-0.3.1.2). The term and the vote outlive a restart in the
``currterm`` properties file of ``{storeBaseDir}/dledger-{selfId}`` (``currTerm=3``, ``voteLeader=n1``;
an empty ``voteLeader`` is no vote), written whenever either changes, before the node acts on it.

Every change happens on the node's event loop, which is what Java's ``synchronized (memberState)``
serialises; nothing here awaits.
"""
from __future__ import annotations

import logging
import os

from rocketmq_py.common.config_file import format_properties, parse_properties, read_file_with_backup
from rocketmq_py.common.config_file import write_file_safely
from rocketmq_py.dledger.codes import ResponseCode, Role
from rocketmq_py.dledger.config import DLedgerConfig
from rocketmq_py.dledger.errors import DLedgerError

__all__ = ["MemberState", "TERM_FILE"]

_log = logging.getLogger(__name__)

TERM_FILE = "currterm"
_KEY_TERM = "currTerm"
_KEY_VOTE = "voteLeader"


class MemberState:
    def __init__(self, config: DLedgerConfig) -> None:
        self.config = config
        self.group = config.group
        self.self_id = config.self_id
        #: Member id -> peer address, in the order of ``peers``.
        self.peer_map = config.peer_map
        self.role = Role.CANDIDATE
        self.leader_id: str | None = None
        self.current_term = 0
        self.vote_for: str | None = None
        self.ledger_end_index = -1
        self.ledger_end_term = -1
        #: The largest term heard of from the group (a candidate's next term is at least this).
        self.known_max_term_in_group = -1
        #: Member id -> whether it answered the leader's last heartbeat.
        self.peers_live: dict[str, bool] = {}
        #: The member the leader is handing leadership to; appends are refused meanwhile.
        self.transferee: str | None = None
        #: The term this member stands in to take leadership handed to it; -1 when none.
        self.term_to_take_leadership = -1
        self._term_path = os.path.join(config.default_path, TERM_FILE)
        self._load_term()

    # --- the persisted term and vote ------------------------------------------------------------

    def _load_term(self) -> None:
        text = read_file_with_backup(self._term_path)
        if text is None:
            return
        values = parse_properties(text)
        try:
            if _KEY_TERM in values:
                self.current_term = int(values[_KEY_TERM].strip())
        except ValueError:
            raise DLedgerError(ResponseCode.DISK_ERROR, f"{self._term_path}: currTerm {values[_KEY_TERM]!r} is "
                               f"not a number; restore the file or remove it to start from term 0") from None
        vote = values.get(_KEY_VOTE, "").strip()
        self.vote_for = vote or None
        _log.info("[%s] loaded term %d, vote %s from %s", self.self_id, self.current_term, self.vote_for,
                  self._term_path)

    def _persist_term(self) -> None:
        text = format_properties({_KEY_TERM: self.current_term, _KEY_VOTE: self.vote_for or ""})
        write_file_safely(self._term_path, text)

    def set_vote_for(self, member_id: str | None) -> None:
        self.vote_for = member_id
        self._persist_term()

    def next_term(self) -> int:
        """Move a candidate to its next term (at least the largest term heard of), voting for nobody yet."""
        self._require(self.role is Role.CANDIDATE, f"{self.role.name} != CANDIDATE")
        if self.known_max_term_in_group > self.current_term:
            self.current_term = self.known_max_term_in_group
        else:
            self.current_term += 1
        self.vote_for = None
        self._persist_term()
        return self.current_term

    # --- roles ----------------------------------------------------------------------------------

    def change_to_leader(self, term: int) -> None:
        self._require(self.current_term == term, f"{self.current_term} != {term}")
        self.role = Role.LEADER
        self.leader_id = self.self_id
        self.peers_live.clear()

    def change_to_follower(self, term: int, leader_id: str) -> None:
        self._require(self.current_term == term, f"{self.current_term} != {term}")
        self.role = Role.FOLLOWER
        self.leader_id = leader_id
        self.transferee = None

    def change_to_candidate(self, term: int) -> None:
        """Stand down to candidate; a larger ``term`` is remembered, not taken (the candidate takes it when it
        next moves to its next term)."""
        self._require(term >= self.current_term, f"should {term} >= {self.current_term}")
        if term > self.known_max_term_in_group:
            self.known_max_term_in_group = term
        self.role = Role.CANDIDATE
        self.leader_id = None
        self.transferee = None

    def set_transferee(self, member_id: str | None) -> None:
        self._require(self.role is Role.LEADER, f"{self.self_id} is not leader")
        self.transferee = member_id

    @staticmethod
    def _require(condition: bool, message: str) -> None:
        if not condition:
            raise DLedgerError(ResponseCode.ILLEGAL_MEMBER_STATE, message)

    # --- lookups --------------------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        return self.role is Role.LEADER

    @property
    def is_follower(self) -> bool:
        return self.role is Role.FOLLOWER

    @property
    def is_candidate(self) -> bool:
        return self.role is Role.CANDIDATE

    @property
    def peer_size(self) -> int:
        return len(self.peer_map)

    def is_quorum(self, count: int) -> bool:
        return count >= self.peer_size // 2 + 1

    def is_peer_member(self, member_id: str | None) -> bool:
        return member_id is not None and member_id in self.peer_map

    def update_ledger_end(self, index: int, term: int) -> None:
        self.ledger_end_index = index
        self.ledger_end_term = term
