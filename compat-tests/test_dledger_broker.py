"""Issue 31, phase 2: Java 4.9.x brokers and ours in one DLedger group (``enableDLegerCommitLog``), as
processes, with the Java name server. Counts and times go to stdout (``-s``).

* Must-show 1, two groups: two Java brokers and one of ours, and one Java broker and two of ours. In each, a
  master appears on the name server as brokerId 0 (the time it took is printed; the followers register as
  brokerId = their number + 1, and mqadmin clusterList shows them so); the Java producer (batches) and ours
  send 10,000 messages; every member's DLedger data files are byte-equal; the Java push consumer reads every
  message the master holds.
* Must-show 2, failover: the leader (ours, then Java's: ``preferredLeaderId`` makes it lead) is killed with
  ``kill -9`` while the Java producer sends; another member registers as brokerId 0 (the time is printed),
  the sends go on, and the Java consumer reads every acknowledged message (duplicates are counted); the
  killed member restarts and takes leadership back (it is the preferred one).
"""
from __future__ import annotations

import json
import time
import uuid

import pytest

from harness.admin_text import table
from harness.dledger_brokers import BROKER_NAME, DLedgerBrokerGroup
from harness.peers import mqadmin, run_peer, start_peer
from rocketmq_py import Message, Producer

PER_PRODUCER = 5000
BATCH = 50
DEADLINE_S = 180.0


def _files_equal(group: DLedgerBrokerGroup) -> bool:
    digests = [group.data_digests(member) for member in group.members]
    return bool(digests[0]) and all(d == digests[0] for d in digests)


@pytest.mark.parametrize("kinds", [("java", "java", "python"), ("java", "python", "python")],
                         ids=["two-java-one-ours", "one-java-two-ours"])
def test_a_mixed_group_elects_a_master_and_every_member_stores_every_message_alike(java_namesrv, tmp_path, kinds):
    members = dict(zip(("n0", "n1", "n2"), kinds))
    with DLedgerBrokerGroup(java_namesrv.addr, tmp_path, members) as group:
        began = time.monotonic()
        group.start()
        master, seconds = group.wait_for_master()
        leader = group.member_at(master)
        print(f"\n{members}: master {leader} ({members[leader]}) registered as brokerId 0 "
              f"{time.monotonic() - began:.1f} s after the members were started ({seconds:.1f} s after all were up)")
        topic = f"DLedger{uuid.uuid4().hex[:8]}"
        sent = run_peer("produce-bulk", namesrv=java_namesrv.addr, topic=topic, count=PER_PRODUCER, body_size=100,
                        batch=BATCH, timeout=DEADLINE_S)
        assert sent[-1]["sent"] == PER_PRODUCER
        producer = Producer(f"dledger_py_{uuid.uuid4().hex[:6]}", namesrv_addr=java_namesrv.addr)
        producer.start()
        try:
            for start in range(0, PER_PRODUCER, BATCH):
                producer.send([Message(topic, f"py-{i:05d}".encode()) for i in range(start, start + BATCH)])
        finally:
            producer.shutdown()
        total = 2 * PER_PRODUCER
        # A send answered with an error (no majority within 2.5 s, on a loaded machine) may be stored as well as
        # its retry: the consumer reads all the master holds, and the duplicates are counted.
        stored = group.stored(topic)
        consumed = run_peer("consume", namesrv=java_namesrv.addr, topic=topic, group=f"dledger_cg_{uuid.uuid4().hex[:6]}",
                            count=stored, timeout_ms=int(DEADLINE_S * 1000), timeout=DEADLINE_S + 60)
        done = consumed[-1]
        offsets = {(line["queueId"], line["queueOffset"]) for line in consumed[:-1]}
        python_bodies = [line["bodyBase64"] for line in consumed[:-1] if line["bodyBase64"].startswith("cHkt")]
        java_count = len(consumed) - 1 - len(python_bodies)
        print(f"sent {total} ({PER_PRODUCER} Java, {PER_PRODUCER} ours); stored {stored} ({stored - total} "
              f"duplicates of retried sends); the Java consumer read {done['count']}, {len(offsets)} distinct")
        assert done["count"] == stored >= total and not done["timedOut"]
        assert len(offsets) == stored
        assert len(set(python_bodies)) == PER_PRODUCER and java_count >= PER_PRODUCER
        registered = group.registered()
        assert sorted(registered) == [0] + sorted(int(m[1:]) + 1 for m in members if m != leader), registered
        # mqadmin clusterList shows the roles: the master as BID 0, each follower as its number + 1.
        printed = [row for row in table(mqadmin("clusterList", namesrv=java_namesrv.addr)) if row[1] == BROKER_NAME]
        assert sorted((int(row[2]), row[3]) for row in printed) == sorted(registered.items()), printed
        give_up = time.monotonic() + DEADLINE_S
        while not _files_equal(group):
            assert time.monotonic() < give_up, {m: group.data_digests(m) for m in members}
            time.sleep(0.5)
        print(f"data files of {list(members)} byte-equal: {len(group.data_digests('n0'))} files")


FAILOVER_SENDS = 2000
KILL_AFTER = 400


@pytest.mark.parametrize("kinds, victim", [(("java", "java", "python"), "n2"), (("java", "python", "python"), "n0")],
                         ids=["ours-killed", "java-killed"])
def test_kill_9_of_the_leader_under_sends_loses_nothing_acknowledged(java_namesrv, tmp_path, kinds, victim):
    members = dict(zip(("n0", "n1", "n2"), kinds))
    with DLedgerBrokerGroup(java_namesrv.addr, tmp_path, members, preferredLeaderId=victim) as group:
        group.start()
        master, seconds = group.wait_for_master(member=victim)
        print(f"\n{members}: the preferred {victim} ({members[victim]}) is master after {seconds:.1f} s")
        topic = f"DLedgerFail{uuid.uuid4().hex[:8]}"
        # The Java producer learns the new master at its next route refresh (every 30 s): until then each attempt
        # fails at once against the dead master, so it may take many.
        producer = start_peer("produce-busy", namesrv=java_namesrv.addr, topic=topic, count=FAILOVER_SENDS,
                              keys="k-", body_size=64, timeout_ms=3000, max_attempts=1_000_000,
                              stderr=open(tmp_path / "producer.err", "w"))
        acked: set[str] = set()
        failed = 0
        killed_at = None
        assert producer.stdout is not None
        for raw in producer.stdout:
            line = json.loads(raw)
            assert "error" not in line, f"{line}: {(tmp_path / 'producer.err').read_text()[-2000:]}"
            if line.get("done"):
                break
            if "failed" in line:
                failed += 1
                continue
            acked.add(line["key"])
            if len(acked) == KILL_AFTER and killed_at is None:
                group.members[victim].kill()
                killed_at = time.monotonic()
                new_master, seconds = group.wait_for_master(other_than=master)
                print(f"kill -9 of {victim}: {group.member_at(new_master)} ({members[group.member_at(new_master)]}) "
                      f"registered as brokerId 0 after {seconds:.1f} s")
            elif killed_at is not None and len(acked) == KILL_AFTER + 1:
                print(f"the sends resumed {time.monotonic() - killed_at:.1f} s after the kill")
        assert producer.wait(timeout=DEADLINE_S) == 0
        # A failed attempt may be stored too (committed under the next leader): the consumer takes up to all of
        # them, and ends at its timeout when fewer were stored.
        consumed = run_peer("consume", namesrv=java_namesrv.addr, topic=topic, group=f"dledger_cg_{uuid.uuid4().hex[:6]}",
                            count=len(acked) + failed, timeout_ms=30_000, timeout=DEADLINE_S)
        keys = [line["keys"] for line in consumed[:-1]]
        print(f"acknowledged {len(acked)} of {FAILOVER_SENDS} ({failed} failed attempts retried); consumed "
              f"{len(keys)}, {len(keys) - len(set(keys))} duplicates")
        assert len(acked) == FAILOVER_SENDS
        assert acked <= set(keys), f"acknowledged but not consumed: {sorted(acked - set(keys))[:20]}"
        # The killed member comes back, catches up and, as the preferred leader, takes leadership back.
        group.members[victim].restart()
        group.wait_for_master(member=victim)
        print(f"{victim} ({members[victim]}) restarted and is master again (preferredLeaderId)")
