"""Issue 31, must-show 3: a DLedger group of Java 4.9.7 brokers and ours, as processes, partitioned.

Two groups: two Java brokers and ours (ours leads), and a Java broker and two of ours (Java leads). The members
reach each other only through relays of the harness (``harness.link_proxy``); the name server stays reachable
for all. The leader (``preferredLeaderId``) is cut off from both followers while the Java producer and ours
send:

* the cut leader steps down: it registers as a slave (its brokerId = its number + 1) instead of brokerId 0;
* the majority elects a new leader, which registers as brokerId 0, and the sends resume through it;
* the sends the cut leader took meanwhile reached no majority: they failed, and are its unacknowledged tail
  (entries of its old term that the new leader's log does not hold);
* on heal the old leader rejoins as a follower: its tail is truncated, and its data files end where the
  others' do and are byte-equal to theirs (being the preferred leader, it may then take leadership back);
* nothing acknowledged is lost: a Java consumer reads all the master holds, every acknowledged key among it;
  the duplicates (failed sends that were stored and then sent again) are counted.

Counts and the phases' durations go to stdout (``-s``).
"""
from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

from harness.dledger_brokers import DLedgerBrokerGroup
from harness.keyed_sends import KeyedSends
from harness.peers import start_peer
from harness.phases import Phases
from rocketmq_py import Producer
from rocketmq_py.codec import decode_store_records
from rocketmq_py.dledger import DLedgerEntry

SENDS = 400
CUT_AFTER = 100
#: Each producer's acknowledged sends before the cut, after the new leader took over, and (ours) after the heal, at
#: least. More than one after the cut: a send in flight at the cut may have been acknowledged by the old leader.
SENDS_AROUND_CUT = 50
#: The Java producer's and ours: they learn the new master at their next route refresh.
POLL_NAME_SERVER_MS = 1000
DEADLINE_S = 180.0


def _tail(old: list[DLedgerEntry], new: list[DLedgerEntry]) -> list[DLedgerEntry]:
    """The entries of ``old`` (the cut leader's log) from the first one that ``new`` (the new leader's) does not
    hold: its unacknowledged tail."""
    for index, entry in enumerate(old):
        if index >= len(new) or not entry.same_as(new[index]):
            return old[index:]
    return []


def _keys(entries: list[DLedgerEntry]) -> list[str]:
    """The keys of the messages in DLedger entries (each body is one CommitLog record)."""
    return [message.keys or "" for entry in entries for message in decode_store_records(entry.body or b"")]


def _wait(condition, what: str, interval_s: float = 0.1) -> float:
    """Poll ``condition`` (state in other processes: nothing to await) until it holds; the seconds it took. A
    name server that did not answer one poll (a loaded machine) is asked again."""
    began = time.monotonic()
    failed: Exception | None = None
    while True:
        try:
            if condition():
                return time.monotonic() - began
        except (OSError, RuntimeError) as error:
            failed = error
        assert time.monotonic() - began < DEADLINE_S, f"{what} not within {DEADLINE_S} s (last error {failed!r})"
        time.sleep(interval_s)


def _log_end(group: DLedgerBrokerGroup, member: str) -> tuple[int, int]:
    """The index of ``member``'s last entry and the position where its data end."""
    last = group.log_entries(member)[-1]
    return last.index, last.pos + last.size


@pytest.mark.parametrize("kinds, leader", [(("java", "java", "python"), "n2"), (("java", "python", "python"), "n0")],
                         ids=["two-java-one-ours-leads", "one-java-leads-two-ours"])
def test_a_leader_cut_off_steps_down_and_its_unacknowledged_tail_is_truncated_on_heal(
        java_namesrv, tmp_path: Path, kinds, leader):
    members = dict(zip(("n0", "n1", "n2"), kinds))
    namesrv = java_namesrv.addr
    phases = Phases()
    with DLedgerBrokerGroup(namesrv, tmp_path, members, partitionable=True, preferredLeaderId=leader) as group:
        assert group.links is not None
        with phases("start members"):
            group.start()
        with phases("preferred master"):
            old_master, _ = group.wait_for_master(member=leader)
        print(f"\n{members}: {leader} ({members[leader]}) is master")
        topic = f"DLedgerCut{uuid.uuid4().hex[:8]}"
        group.create_topic(topic)

        ours = Producer(f"dledger_py_{uuid.uuid4().hex[:6]}", namesrv_addr=namesrv,
                        poll_name_server_interval=POLL_NAME_SERVER_MS)
        ours.start()
        py_sends = KeyedSends(ours, topic, "py-")
        producer = None
        java_acked: set[str] = set()
        java_failed: dict[str, int] = {}
        try:
            py_sends.start()
            producer = start_peer("produce-busy", namesrv=namesrv, topic=topic, count=SENDS, keys="k-",
                                  body_size=64, timeout_ms=3000, max_attempts=1_000_000,
                                  poll_ns_ms=POLL_NAME_SERVER_MS, stderr=open(tmp_path / "producer.err", "w"))
            assert producer.stdout is not None
            lines = iter(producer.stdout)

            def java_line() -> dict | None:
                """The Java producer's next line (None once it is done), counted."""
                raw = next(lines, None)
                assert raw is not None, f"the Java producer ended: {(tmp_path / 'producer.err').read_text()[-2000:]}"
                line = json.loads(raw)
                assert "error" not in line, f"{line}: {(tmp_path / 'producer.err').read_text()[-2000:]}"
                if line.get("done"):
                    return None
                if "failed" in line:
                    java_failed[line["key"]] = java_failed.get(line["key"], 0) + 1
                else:
                    java_acked.add(line["key"])
                return line

            with phases("sends before the cut"):
                while len(java_acked) < CUT_AFTER:
                    assert java_line() is not None
                py_sends.wait_acked(SENDS_AROUND_CUT)

            group.links.cut(leader)
            cut_at = time.monotonic()
            java_before_cut, py_before_cut = len(java_acked), py_sends.acked_count()
            slave_id = int(leader[1:]) + 1
            with phases("step down, new master"):
                stepped_down = _wait(lambda: group.registered().get(slave_id) == old_master,
                                     f"{leader} registering as a slave (brokerId {slave_id})")
                print(f"cut {leader} off from both followers: it stepped down (registered as brokerId {slave_id}, "
                      f"no longer 0) after {stepped_down:.1f} s")
                new_master, _ = group.wait_for_master(other_than=old_master)
                new_leader = group.member_at(new_master)
                print(f"{new_leader} ({members[new_leader]}) registered as brokerId 0 "
                      f"{time.monotonic() - cut_at:.1f} s after the cut")
            with phases("sends resume"):
                while len(java_acked) < java_before_cut + SENDS_AROUND_CUT:
                    assert java_line() is not None
                py_sends.wait_acked(py_before_cut + SENDS_AROUND_CUT)
                print(f"sends resumed: both producers had {SENDS_AROUND_CUT} more acknowledged "
                      f"{time.monotonic() - cut_at:.1f} s after the cut")

            # The cut member's log against the new leader's: what it holds beyond the majority's.
            tail = _tail(group.log_entries(leader), group.log_entries(new_leader))
            tail_keys = _keys(tail)
            print(f"{leader}'s unacknowledged tail: {len(tail)} entries of term(s) "
                  f"{sorted({entry.term for entry in tail})}, keys {tail_keys}")
            assert tail, f"{leader} took no send while it was cut off"

            group.links.heal()
            healed_at = time.monotonic()
            with phases("sends across the heal"):
                py_sends.wait_acked(py_sends.acked_count() + SENDS_AROUND_CUT)
                while java_line() is not None:
                    pass
                assert producer.wait(timeout=DEADLINE_S) == 0
        finally:
            if producer is not None and producer.poll() is None:
                producer.kill()
            py_sends.stop()
            ours.shutdown()
        # Every copy of a Java key in the tail is an attempt that failed: the Java producer makes one request per
        # attempt (no retries of its own) and reports each that threw or was not SEND_OK. (Our Producer may retry within one send, so
        # its attempts are not counted; that its acknowledged keys are all consumed is checked below.)
        tail_copies = Counter(key for key in tail_keys if key.startswith("k-"))
        assert all(copies <= java_failed.get(key, 0) for key, copies in tail_copies.items()), (tail_copies,
                                                                                              java_failed)
        with phases("files equal"):
            _wait(group.data_files_equal, "the members' data files byte-equal", interval_s=0.5)
        ends = {member: _log_end(group, member) for member in members}
        print(f"healed: {leader}'s tail truncated, every member's data files byte-equal "
              f"{time.monotonic() - healed_at:.1f} s after the heal; (last index, data end) {ends}; "
              f"registered (brokerId: address) {group.registered()}")
        rejoined = group.log_entries(leader)
        assert not any(entry.same_as(rejoined[entry.index]) for entry in tail if entry.index < len(rejoined))

        # Nothing acknowledged is lost: the consumer reads all the master holds.
        group.wait_for_master()
        with phases("consume"):
            stored, consumed, done = group.consume_stored(topic, DEADLINE_S)
        keys = [line["keys"] for line in consumed]
        java_keys = [key for key in keys if key.startswith("k-")]
        py_keys = [key for key in keys if key.startswith("py-")]
        py_acked = set(py_sends.acked)
        print(f"Java producer: acknowledged {len(java_acked)} of {SENDS} ({java_before_cut} read before the cut; "
              f"{sum(java_failed.values())} failed attempts sent again); consumed {len(java_keys)}, "
              f"{len(java_keys) - len(set(java_keys))} duplicates")
        print(f"our producer: acknowledged {len(py_acked)} ({py_before_cut} before the cut; failed attempts sent "
              f"again: {dict(py_sends.failures)}); consumed {len(py_keys)}, "
              f"{len(py_keys) - len(set(py_keys))} duplicates")
        print(f"{len(tail)} unacknowledged entries truncated from {leader}; 0 acknowledged lost")
        assert done["count"] == stored == len(keys) and not done["timedOut"], done
        assert len(java_acked) == SENDS
        assert java_acked <= set(java_keys), f"acknowledged, not consumed: {sorted(java_acked - set(java_keys))[:20]}"
        assert py_acked <= set(py_keys), f"acknowledged, not consumed: {sorted(py_acked - set(py_keys))[:20]}"
        with phases("kill members"):
            group.kill()
    print(phases)

