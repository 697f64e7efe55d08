"""A DLedger group of our members in one process on loopback, and the waits its tests need (issue 31).

``DLedgerGroup(root, size)`` makes the members' configs on free ports; ``start()`` starts them. Every
wait is on the group's change notice (any member's role change or commit), with a generous deadline;
none compares times. ``isolate(member)`` cuts a member off from the others in both directions (its
requests and theirs are dropped, as lost packets), ``heal()`` joins it again.
"""
from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Callable

from rocketmq_py.dledger import DLedgerConfig, DLedgerServer, Role

from .ports import free_port

#: Small files, so a few hundred entries fill several of them and end some with padding.
DATA_FILE_SIZE = 64 * 1024
INDEX_FILE_SIZE = 32 * 1024
#: Long enough for an election on a loaded machine, many times over.
DEADLINE_S = 120.0
#: How often a wait looks again without a notice (a vote that ended without a role change).
RECHECK_S = 0.2


class WatchedPeers:
    """What the DLedger test groups share: a change notice to wait on (``_notice`` on any member's role change
    or commit), and the peers' network, which a test can cut (``isolate``) and join again (``heal``)."""

    def __init__(self) -> None:
        self._changed = asyncio.Event()
        self._isolated: set[str] = set()

    def describe(self) -> object:
        """The members' state, for a failed wait's message."""
        raise NotImplementedError

    # --- the network -------------------------------------------------------------------------

    def _link_from(self, member_id: str) -> Callable[[str], bool]:
        def reachable(other: str) -> bool:
            return member_id not in self._isolated and other not in self._isolated
        return reachable

    def isolate(self, member_id: str) -> None:
        """Cut the member's peer port off from the others both ways (requests dropped as lost packets)."""
        self._isolated.add(member_id)

    def heal(self) -> None:
        self._isolated.clear()
        self._notice()

    # --- waits -------------------------------------------------------------------------------

    def _notice(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def wait_for(self, what: str, condition: Callable[[], bool], deadline_s: float = DEADLINE_S) -> None:
        """Wait until ``condition()`` holds; fail naming ``what`` (and the members' state) after the deadline."""
        loop = asyncio.get_running_loop()
        give_up = loop.time() + deadline_s
        while not condition():
            if loop.time() > give_up:
                raise AssertionError(f"{what} did not happen within {deadline_s} s: {self.describe()}")
            changed = self._changed
            try:
                await asyncio.wait_for(changed.wait(), RECHECK_S)
            except asyncio.TimeoutError:
                pass


class DLedgerGroup(WatchedPeers):
    def __init__(self, root: Path, size: int = 3, group: str = "g", **settings: object) -> None:
        self.root = root
        self.group = group
        self.ids = [f"n{i}" for i in range(size)]
        self.peers = ";".join(f"{member}-127.0.0.1:{free_port()}" for member in self.ids)
        self.settings = {"mapped_file_size_for_entry_data": DATA_FILE_SIZE,
                         "mapped_file_size_for_entry_index": INDEX_FILE_SIZE, **settings}
        super().__init__()
        self.members: dict[str, DLedgerServer] = {}

    def config(self, member_id: str, **settings: object) -> DLedgerConfig:
        return DLedgerConfig(group=self.group, self_id=member_id, peers=self.peers, store_base_dir=str(self.root),
                             **{**self.settings, **settings})  # type: ignore[arg-type]

    async def start(self, *member_ids: str, data_starts_at: int = 0, **settings: object) -> None:
        """Start the given members (all of them by default) as new servers on their directories."""
        for member_id in member_ids or self.ids:
            server = DLedgerServer(self.config(member_id, **settings))
            server.add_role_listener(lambda term, role: self._notice())
            server.add_commit_listener(lambda index: self._notice())
            server.transport.reachable = self._link_from(member_id)
            self.members[member_id] = server
            await server.start(data_starts_at=data_starts_at)

    async def stop(self, member_id: str) -> None:
        server = self.members.pop(member_id)
        await server.shutdown()
        self._notice()

    async def stop_all(self) -> None:
        for member_id in list(self.members):
            await self.stop(member_id)

    async def __aenter__(self) -> DLedgerGroup:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop_all()

    def describe(self) -> object:
        return list(self.members.values())

    def leaders(self) -> list[DLedgerServer]:
        return [s for s in self.members.values() if s.is_leader]

    def settled_leader(self, among: list[str] | None = None) -> DLedgerServer | None:
        """The leader that every other member (of ``among``) follows in its term, if there is one."""
        members = [self.members[m] for m in (among or list(self.members))]
        leaders = [s for s in members if s.is_leader]
        if len(leaders) != 1:
            return None
        leader = leaders[0]
        if all(s is leader or (s.role is Role.FOLLOWER and s.leader_id == leader.self_id and s.term == leader.term)
               for s in members):
            return leader
        return None

    async def wait_for_leader(self, among: list[str] | None = None) -> DLedgerServer:
        await self.wait_for("a leader that all members follow", lambda: self.settled_leader(among) is not None)
        leader = self.settled_leader(among)
        assert leader is not None
        return leader

    async def wait_committed_everywhere(self, index: int, among: list[str] | None = None) -> None:
        members = [self.members[m] for m in (among or list(self.members))]
        await self.wait_for(f"entry {index} committed on {[s.self_id for s in members]}",
                            lambda: all(s.committed_index >= index and s.ledger_end_index >= index for s in members))

    # --- files -------------------------------------------------------------------------------

    def files(self, member_id: str, kind: str) -> dict[str, bytes]:
        """The bytes of each file of a member's ``data`` or ``index`` directory, by name."""
        directory = self.root / f"dledger-{member_id}" / kind
        return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.name.isdigit()}


async def append_all(server: DLedgerServer, bodies: list[bytes], chunk: int = 50) -> list[int]:
    """Append ``bodies`` through ``server`` in chunks, each acknowledged before the next; their indexes."""
    indexes: list[int] = []
    for start in range(0, len(bodies), chunk):
        futures = [server.append([body]) for body in bodies[start:start + chunk]]
        for appended in await asyncio.gather(*futures):
            indexes += [a.index for a in appended]
    return indexes

