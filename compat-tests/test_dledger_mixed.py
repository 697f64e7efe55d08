"""Issue 31, phase 1: Java's DLedger 0.3.1.2 members and ours in one group, as processes.

Two scenarios, each: a leader appears; leadership moves to the ``preferredLeaderId`` member when it joins
(Java hands over to ours, ours to Java); appends through the leader reach every member, and the data
files are byte-equal; ``kill -9`` of the leader elects another, appends resume, and nothing that was
acknowledged is lost. Counts go to stdout (``-s``).

* two Java members and ours (n2, preferred): Java leads, hands over to ours, ours leads the Java
  members; ours is killed and a Java member leads the other.
* Java (n0, preferred) and two of ours, pushing batches (``isEnableBatchPush``): ours leads, hands over to
  Java, Java leads ours; Java is killed and one of ours leads the other.
"""
from __future__ import annotations

import asyncio
import time

import pytest

from harness.dledger_nodes import MixedGroup

BATCH = 300
DEADLINE_S = 180.0


def _bodies(prefix: str, count: int) -> list[bytes]:
    return [f"{prefix}-{i:05d}|".encode().ljust(120 + i % 50, b"m") for i in range(count)]


async def _wait_replicated(group: MixedGroup, member_ids: list[str], acked: dict[int, bytes]) -> None:
    """Wait until every member's log holds every acknowledged entry and their data files are byte-equal."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + DEADLINE_S
    last = max(acked)
    while True:
        logs = {m: group.members[m].log_entries() for m in member_ids}
        if all(len(log) > last for log in logs.values()):
            lost = {m: [i for i, body in acked.items() if log[i].body != body] for m, log in logs.items()}
            assert not any(lost.values()), f"acknowledged entries missing or different: {lost}"
            files = {m: group.members[m].data_files() for m in member_ids}
            if all(f == files[member_ids[0]] for f in files.values()):
                return
        if loop.time() > give_up:
            raise AssertionError(f"the logs of {member_ids} did not reach entry {last} with equal files within "
                                 f"{DEADLINE_S} s: ends {[len(log) - 1 for log in logs.values()]}")
        await asyncio.sleep(0.5)


async def _append_all(group: MixedGroup, leader: str, bodies: list[bytes]) -> dict[int, bytes]:
    acked = await group.append(leader, bodies)
    assert len(acked) == len(bodies), f"{len(bodies) - len(acked)} appends through {leader} were refused"
    return acked


class _Appender:
    """Writers that keep appending through whichever member leads, each body once, while the test kills it."""

    def __init__(self, group: MixedGroup, leader: str, writers: int = 8) -> None:
        self.group = group
        self.leader = leader
        self.acked: dict[int, bytes] = {}
        self.failed = 0
        self._stop = asyncio.Event()
        self._attempts = 0
        self._tasks = [asyncio.ensure_future(self._write(w)) for w in range(writers)]

    async def _write(self, writer: int) -> None:
        while not self._stop.is_set():
            self._attempts += 1
            body = f"during-{writer}-{self._attempts:06d}|".encode().ljust(150, b"d")
            answer = await self.group.append_one(self.leader, body)
            if answer.response_code.name == "SUCCESS":
                self.acked[answer.index] = body
            else:
                self.failed += 1
                await asyncio.sleep(0.2)
                self.leader = await self.group.leader() or self.leader

    async def until_acked(self, count: int) -> None:
        give_up = asyncio.get_running_loop().time() + DEADLINE_S
        while len(self.acked) < count:
            assert asyncio.get_running_loop().time() < give_up, f"only {len(self.acked)} of {count} acknowledged"
            await asyncio.sleep(0.05)

    async def stop(self) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks)


@pytest.mark.parametrize("kinds, preferred, batch_push", [
    (["java", "java", "python"], "n2", False),
    (["java", "python", "python"], "n0", True),
], ids=["two-java-one-ours", "one-java-two-ours-batch-push"])
async def test_a_mixed_group_elects_replicates_and_fails_over(tmp_path, java_build, kinds, preferred, batch_push):
    started = time.monotonic()
    group = MixedGroup(tmp_path, kinds, preferred_leader=preferred, batch_push=batch_push)
    others = [m for m in group.members if m != preferred]
    try:
        group.start(*others)
        first_leader = await group.wait_for_leader()
        acked = await _append_all(group, first_leader, _bodies("first", BATCH))
        await _wait_replicated(group, others, acked)

        group.start(preferred)
        leader = await group.wait_for_leader(only=preferred)
        acked.update(await _append_all(group, leader, _bodies("second", BATCH)))
        everyone = list(group.members)
        await _wait_replicated(group, everyone, acked)

        appender = _Appender(group, leader)
        await appender.until_acked(BATCH // 2)
        group.members[leader].kill()
        acked_before_kill = len(appender.acked)
        survivors = [m for m in everyone if m != leader]
        new_leader = await group.wait_for_leader(not_=leader)
        assert new_leader in survivors
        await appender.until_acked(acked_before_kill + BATCH)
        await appender.stop()
        acked.update(appender.acked)
        await _wait_replicated(group, survivors, acked)
        log = group.members[new_leader].log_entries()
        print(f"\n{'+'.join(kinds)}: leaders {first_leader} -> {leader} ({group.members[leader].kind}) -> "
              f"{new_leader} ({group.members[new_leader].kind}); {len(acked)} acknowledged "
              f"({acked_before_kill} while writers were busy when the leader got kill -9), {appender.failed} failed "
              f"around it, {len(log)} entries in the log: {len(log) - len(acked)} unacknowledged kept, 0 lost; "
              f"{time.monotonic() - started:.1f} s")
    finally:
        group.stop_all()
        await group.close()
