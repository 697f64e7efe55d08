"""Issue 31, phase 1: a DLedger group of our members in one process (election, replication, truncation,
leadership transfer, restart). Every wait is on the members' notices with a generous deadline."""
from __future__ import annotations

import asyncio

import pytest

from support.dledger import DLedgerGroup, append_all
from rocketmq_py.dledger import DLedgerError, ResponseCode, Role


def _bodies(prefix: str, count: int, size: int = 300) -> list[bytes]:
    return [f"{prefix}-{i:06d}-".encode().ljust(size, b"x") for i in range(count)]


async def _committed_bodies(server, count: int) -> list[bytes]:
    bodies = []
    async for entry in server.committed_entries(0):
        bodies.append(entry.body)
        if len(bodies) == count:
            return bodies
    raise AssertionError("unreachable")


async def test_three_members_elect_one_leader_that_the_others_follow(tmp_path):
    async with DLedgerGroup(tmp_path) as group:
        await group.start()
        leader = await group.wait_for_leader()
        followers = [s for s in group.members.values() if s is not leader]
        assert [s.role for s in followers] == [Role.FOLLOWER, Role.FOLLOWER]
        assert {s.leader_id for s in followers} == {leader.self_id}
        # the term and the vote are on disk, in Java's currterm form
        text = (tmp_path / f"dledger-{leader.self_id}" / "currterm").read_text()
        assert f"currTerm={leader.term}\n" in text


async def test_appends_reach_every_member_and_the_files_are_byte_equal(tmp_path):
    async with DLedgerGroup(tmp_path) as group:
        await group.start()
        leader = await group.wait_for_leader()
        bodies = _bodies("a", 400)
        indexes = await append_all(leader, bodies)
        assert indexes == list(range(400))
        await group.wait_committed_everywhere(399)
        data = {m: group.files(m, "data") for m in group.ids}
        assert len(data["n0"]) > 1, "the entries should span several data files"
        assert data["n0"] == data["n1"] == data["n2"]
        index = {m: group.files(m, "index") for m in group.ids}
        assert index["n0"] == index["n1"] == index["n2"]
        for server in group.members.values():
            assert await _committed_bodies(server, 400) == bodies
            assert server.get(123).body == bodies[123]


async def test_batch_push_replicates_the_same_files(tmp_path):
    async with DLedgerGroup(tmp_path, enable_batch_push=True) as group:
        await group.start()
        leader = await group.wait_for_leader()
        bodies = _bodies("b", 300, size=100)
        await append_all(leader, bodies, chunk=100)
        await group.wait_committed_everywhere(299)
        assert group.files("n0", "data") == group.files("n1", "data") == group.files("n2", "data")


async def test_a_follower_refuses_appends_and_names_the_leader(tmp_path):
    async with DLedgerGroup(tmp_path) as group:
        await group.start()
        leader = await group.wait_for_leader()
        follower = next(s for s in group.members.values() if s is not leader)
        with pytest.raises(DLedgerError) as refused:
            follower.append([b"nope"])
        assert refused.value.code is ResponseCode.NOT_LEADER
        assert refused.value.leader_id == leader.self_id
        assert follower.ledger_end_index == -1


async def test_when_the_leader_stops_another_is_elected_and_appends_resume(tmp_path):
    async with DLedgerGroup(tmp_path) as group:
        await group.start()
        leader = await group.wait_for_leader()
        first = _bodies("before", 100)
        await append_all(leader, first)
        await group.stop(leader.self_id)
        survivors = [m for m in group.ids if m != leader.self_id]
        new_leader = await group.wait_for_leader(survivors)
        assert new_leader.term > leader.term
        second = _bodies("after", 100)
        assert await append_all(new_leader, second) == list(range(100, 200))
        await group.wait_committed_everywhere(199, survivors)
        for member_id in survivors:
            assert await _committed_bodies(group.members[member_id], 200) == first + second
        assert group.files(survivors[0], "data") == group.files(survivors[1], "data")


async def test_a_cut_off_leaders_divergent_tail_is_truncated_when_it_rejoins(tmp_path):
    async with DLedgerGroup(tmp_path) as group:
        await group.start()
        old = await group.wait_for_leader()
        common = _bodies("common", 50)
        await append_all(old, common)
        await group.wait_committed_everywhere(49)
        group.isolate(old.self_id)
        # Entries the cut-off leader writes alone: no majority will ever hold them.
        lost = [old.append([body]) for body in _bodies("lost", 30, size=500)]
        others = [m for m in group.ids if m != old.self_id]
        new = await group.wait_for_leader(others)
        for future in lost:
            with pytest.raises(DLedgerError) as failed:
                await future
            assert failed.value.code in (ResponseCode.WAIT_QUORUM_ACK_TIMEOUT, ResponseCode.TERM_CHANGED)
        assert old.ledger_end_index == 79
        kept = _bodies("kept", 40)
        await append_all(new, kept)
        group.heal()
        await group.wait_for_leader()
        await group.wait_committed_everywhere(89)
        assert old.role is Role.FOLLOWER and old.ledger_end_index == 89
        assert await _committed_bodies(old, 90) == common + kept
        data = {m: group.files(m, "data") for m in group.ids}
        assert data[old.self_id] == data[others[0]] == data[others[1]]
        index = {m: group.files(m, "index") for m in group.ids}
        assert index[old.self_id] == index[others[0]] == index[others[1]]


async def test_leadership_moves_to_the_preferred_member_once_it_caught_up(tmp_path):
    async with DLedgerGroup(tmp_path, preferred_leader_ids="n2") as group:
        await group.start("n0", "n1")
        first = await group.wait_for_leader(["n0", "n1"])
        first_term = first.term
        await append_all(first, _bodies("p", 120))
        await group.start("n2")
        await group.wait_for("n2 leading the group", lambda: group.settled_leader() is group.members["n2"])
        leader = group.members["n2"]
        assert leader.term > first_term
        assert leader.ledger_end_index == 119
        assert await append_all(leader, _bodies("q", 10)) == list(range(120, 130))


async def test_an_explicit_leadership_transfer(tmp_path):
    # Without preferredLeaderIds the transferee stands with the ordinary vote intervals, and another candidate
    # may win the new term first (TAKE_LEADERSHIP_FAILED, in Java as here): the caller asks again.
    async with DLedgerGroup(tmp_path) as group:
        await group.start()
        leader = await group.wait_for_leader()
        await append_all(leader, _bodies("t", 20))
        target = next(m for m in group.ids if m != leader.self_id)
        await group.wait_committed_everywhere(19)
        answers = []
        while leader.self_id != target:
            assert len(answers) < 10, answers
            answers.append((await leader.transfer_leadership(target)).response_code)
            leader = await group.wait_for_leader()
        assert ResponseCode.SUCCESS in answers
        assert set(answers) <= {ResponseCode.SUCCESS, ResponseCode.TAKE_LEADERSHIP_FAILED}


async def test_members_recover_their_logs_and_terms_after_a_restart(tmp_path):
    async with DLedgerGroup(tmp_path) as group:
        await group.start()
        leader = await group.wait_for_leader()
        bodies = _bodies("r", 250)
        await append_all(leader, bodies)
        await group.wait_committed_everywhere(249)
        terms = {m: s.term for m, s in group.members.items()}
        await group.stop_all()
        await group.start()
        for member_id, server in group.members.items():
            assert server.ledger_end_index == 249
            assert server.committed_index == 249, "the committed index comes back from the checkpoint"
            assert server.term >= terms[member_id]
        leader = await group.wait_for_leader()
        more = _bodies("s", 10)
        assert await append_all(leader, more) == list(range(250, 260))
        await group.wait_committed_everywhere(259)
        for server in group.members.values():
            assert await _committed_bodies(server, 260) == bodies + more
        assert group.files("n0", "data") == group.files("n1", "data") == group.files("n2", "data")


async def test_an_append_waits_for_a_majority(tmp_path):
    async with DLedgerGroup(tmp_path) as group:
        await group.start()
        leader = await group.wait_for_leader()
        await append_all(leader, _bodies("m", 5))
        for member_id in group.ids:
            if member_id != leader.self_id:
                group.isolate(member_id)
        waiting = leader.append([b"alone"])
        done, _ = await asyncio.wait([waiting], timeout=0)
        assert not done
        with pytest.raises(DLedgerError):
            await waiting
        assert leader.committed_index == 4


async def test_a_log_that_starts_after_a_plain_commit_log_starts_there_on_every_member(tmp_path):
    # The broker keeps its plain CommitLog and starts DLedger data at the next file boundary; only the member
    # that had the plain CommitLog knows that offset: the others make their first file where the leader's
    # first entry is.
    async with DLedgerGroup(tmp_path, preferred_leader_ids="n0") as group:
        start = 3 * group.settings["mapped_file_size_for_entry_data"]  # type: ignore[operator]
        await group.start("n0", data_starts_at=start)
        await group.start("n1", "n2")
        await group.wait_for("n0 leading", lambda: group.settled_leader() is group.members["n0"])
        appended = await group.members["n0"].append([b"first", b"second"])
        assert [a.pos for a in appended] == [start, start + 53]
        await group.wait_committed_everywhere(1)
        files = {m: group.files(m, "data") for m in group.ids}
        assert list(files["n1"]) == [f"{start:020d}"]
        assert files["n0"] == files["n1"] == files["n2"]
