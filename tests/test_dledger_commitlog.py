"""Issue 31, phase 2: brokers whose CommitLog is a DLedger log (``enableDLegerCommitLog=true``), three of ours
with our name server in one process. A send is answered once a majority holds it; every member's data files
and ConsumeQueues are byte-equal; a consumer reads every acknowledged message, across a failover and a
restart; a plain CommitLog is kept and the DLedger data start after it."""
from __future__ import annotations

import struct
from collections import Counter

import pytest

from support.dledger_brokers import BROKER_NAME, DATA_FILE_SIZE, DLedgerBrokers
from rocketmq_py import codec
from rocketmq_py.broker.config import load_broker_config
from rocketmq_py.common.codes import ResponseCode
from rocketmq_py.common.config_file import config_to_properties
from rocketmq_py.dledger import BODY_OFFSET
from rocketmq_py.store import SLAVE

_ENTRY_HEAD = struct.Struct(">iiqqq")  # magic, size, index, term, pos


def _bodies(prefix: str, count: int) -> list[bytes]:
    return [f"{prefix}-{i:05d}".encode() + b"." * 200 for i in range(count)]


def _offset_of(msg_id: str) -> int:
    return int(msg_id[-16:], 16)


def _assert_stored_once_each(stored: list[bytes], sent: list[bytes], group: DLedgerBrokers) -> None:
    """Every sent body is stored, and only a body sent again after a SYSTEM_BUSY answer may be stored twice."""
    counts = Counter(stored)
    assert set(counts) == set(sent), (set(sent) - set(counts), set(counts) - set(sent))
    assert all(times == 1 or (times == 2 and body in group.resent) for body, times in counts.items())


def _assert_members_alike(group: DLedgerBrokers, why: str = "") -> dict[str, bytes]:
    """Every member's DLedger data files and ConsumeQueues are byte-equal; the first member's data files."""
    files = {m: group.data_files(m) for m in group.ids}
    assert files["n0"] == files["n1"] == files["n2"], why
    queues = {m: group.consume_queue_files(m) for m in group.ids}
    assert queues["n0"] and queues["n0"] == queues["n1"] == queues["n2"]
    return files["n0"]


def _without_resends(stored: list[bytes], group: DLedgerBrokers) -> list[bytes]:
    """``stored`` with the second copy of a body sent again dropped (sent one after another, the copies are
    neighbours: the entry that timed out is committed before the one sent again)."""
    kept: list[bytes] = []
    for body in stored:
        if not (kept and kept[-1] == body and body in group.resent):
            kept.append(body)
    return kept


def _entry_at(files: dict[str, bytes], pos: int) -> tuple[int, int, int, int, int]:
    name = f"{pos - pos % DATA_FILE_SIZE:020d}"
    return _ENTRY_HEAD.unpack_from(files[name], pos % DATA_FILE_SIZE)


async def test_the_brokers_store_every_acknowledged_message_alike(tmp_path):
    async with DLedgerBrokers(tmp_path) as group:
        await group.start()
        master = await group.wait_for_master()
        await group.create_topic("T")
        bodies = _bodies("m", 300)
        answers = await group.send_all(master, "T", bodies)
        assert [a.code for a in answers] == [ResponseCode.SUCCESS] * len(bodies)
        await group.wait_caught_up()
        data = _assert_members_alike(group)
        assert len(data) > 1, "the messages should fill several data files"
        # Each message id carries its record's offset: the body of the entry 48 bytes before.
        for answer in answers[:20]:
            offset = _offset_of(answer.ext_fields["msgId"])
            magic, _size, _index, _term, pos = _entry_at(data, offset - BODY_OFFSET)
            assert (magic, pos) == (1, offset - BODY_OFFSET)
        messages = await group.pull_all(master, "T")
        _assert_stored_once_each([m.body for m in messages], bodies, group)
        assert {m.commit_log_offset for m in messages} >= {_offset_of(a.ext_fields["msgId"]) for a in answers}
        # A follower serves the same messages (a consumer may read from a slave).
        follower = next(b for b in group.brokers.values() if b is not master)
        assert sorted(m.body for m in await group.pull_all(follower, "T")) == sorted(m.body for m in messages)
        # A lookup by offset and a query by key read the record out of the DLedger data files.
        record = master.store.lookup_message_by_offset(_offset_of(answers[7].ext_fields["msgId"]))
        assert record is not None and record.body == bodies[7]
        found = master.store.query_message("T", bodies[9].decode(), 32, 0, 2 ** 62)
        assert [codec.decode_store_records(b)[0].body for b in found.buffers] == [bodies[9]]


async def test_a_send_is_answered_only_once_a_majority_holds_it(tmp_path):
    async with DLedgerBrokers(tmp_path) as group:
        await group.start()
        master = await group.wait_for_master()
        await group.create_topic("T")
        first = await group.send(master, "T", b"with-a-majority", queue_id=0)
        assert first.code == ResponseCode.SUCCESS
        for member_id in [m for m, b in group.brokers.items() if b is not master]:
            await group.stop(member_id)
        alone = await group.send(master, "T", b"without-a-majority", queue_id=0, wait=False, resend_busy=False)
        # Java's answers: the quorum wait timed out (OS_PAGECACHE_BUSY -> SYSTEM_BUSY), or the member
        # stepped down meanwhile (a slave refuses puts; a waiting put fails with TERM_CHANGED, SYSTEM_ERROR).
        assert alone.code in (ResponseCode.SYSTEM_BUSY, ResponseCode.SERVICE_NOT_AVAILABLE,
                              ResponseCode.SYSTEM_ERROR), alone
        # Not committed, so not dispatched: a consumer does not see it.
        assert master.store.get_max_offset_in_queue("T", 0) == 1
        assert [m.body for m in await group.pull_all(master, "T")] == [b"with-a-majority"]


async def test_the_leader_stopped_another_leads_and_nothing_acknowledged_is_lost(tmp_path):
    async with DLedgerBrokers(tmp_path) as group:
        await group.start()
        master = await group.wait_for_master()
        await group.create_topic("T")
        before = _bodies("before", 120)
        assert {a.code for a in await group.send_all(master, "T", before)} == {ResponseCode.SUCCESS}
        old_id = next(m for m, b in group.brokers.items() if b is master)
        await group.stop(old_id)
        new_master = await group.wait_for_master()
        assert new_master is not master
        after = _bodies("after", 120)
        answers = await group.send_all(new_master, "T", after)
        assert {a.code for a in answers} == {ResponseCode.SUCCESS}
        messages = await group.pull_all(new_master, "T")
        _assert_stored_once_each([m.body for m in messages], before + after, group)
        # The queue offsets go on where the old master's stopped: each queue's offsets run from 0 without a gap,
        # and each acknowledged send's offset holds its own message (none was given twice).
        at = {(m.queue_id, m.queue_offset): m.body for m in messages}
        for queue_id in range(4):
            assert sorted(o for q, o in at if q == queue_id) == list(range(sum(q == queue_id for q, _ in at)))
        for body, answer in zip(after, answers):
            assert at[(int(answer.ext_fields["queueId"]), int(answer.ext_fields["queueOffset"]))] == body
        # The old master comes back as a follower and catches up; the files agree again.
        await group.start(old_id)
        await group.wait_caught_up()
        assert group.brokers[old_id].store_config.broker_role == SLAVE
        _assert_members_alike(group)


async def test_a_delayed_message_comes_due_through_the_master_only(tmp_path):
    """The schedule service runs on the master (its thread's puts hop onto the event loop); the followers get the
    message by replication, once."""
    async with DLedgerBrokers(tmp_path) as group:
        await group.start()
        master = await group.wait_for_master()
        await group.create_topic("T", queues=1)
        answer = await group.send(master, "T", b"later", queue_id=0, delay_level=1)
        assert answer.code == ResponseCode.SUCCESS
        await group.wait_for("the delayed message on its topic",
                             lambda: master.store.get_max_offset_in_queue("T", 0) == 1)
        await group.wait_caught_up()
        for broker in group.brokers.values():
            assert [m.body for m in await group.pull_all(broker, "T", queues=1)] == [b"later"]
            assert broker.store.get_max_offset_in_queue("T", 0) == 1


async def test_a_cut_off_master_steps_down_and_its_unacknowledged_tail_is_cut_when_it_returns(tmp_path):
    async with DLedgerBrokers(tmp_path) as group:
        await group.start()
        master = await group.wait_for_master()
        await group.create_topic("T", queues=1)
        before = _bodies("before", 40)
        assert {a.code for a in await group.send_all(master, "T", before, chunk=1)} == {ResponseCode.SUCCESS}
        old_id = next(m for m, b in group.brokers.items() if b is master)
        others = [m for m in group.ids if m != old_id]
        group.isolate(old_id)
        cut_off = await group.send(master, "T", b"cut-off", queue_id=0, resend_busy=False)
        assert cut_off.code != ResponseCode.SUCCESS, "no majority, no acknowledgement"
        new_master = await group.wait_for_master(among=others)
        await group.wait_for("the cut-off master to step down", lambda: master.store_config.broker_role == SLAVE)
        after = _bodies("after", 40)
        assert {a.code for a in await group.send_all(new_master, "T", after, chunk=1)} == {ResponseCode.SUCCESS}
        group.heal()
        await group.wait_caught_up()
        _assert_members_alike(group, "the old master's tail was cut to the new master's log")
        for broker in group.brokers.values():
            stored = [m.body for m in await group.pull_all(broker, "T", queues=1)]
            assert _without_resends(stored, group) == before + after


async def test_a_restarted_group_recovers_its_queues_and_goes_on(tmp_path):
    async with DLedgerBrokers(tmp_path) as group:
        await group.start()
        master = await group.wait_for_master()
        await group.create_topic("T", queues=1)
        first = _bodies("first", 80)
        await group.send_all(master, "T", first)
        await group.wait_caught_up()
        for member_id in list(group.brokers):
            await group.stop(member_id)
        await group.start()
        master = await group.wait_for_master()
        second = _bodies("second", 80)
        answers = await group.send_all(master, "T", second, chunk=1)
        messages = await group.pull_all(master, "T", queues=1)
        assert _without_resends([m.body for m in messages], group) == first + second
        assert [m.queue_offset for m in messages] == list(range(len(messages)))
        # The second round's offsets go on after the first's, each holding its own message.
        assert int(answers[0].ext_fields["queueOffset"]) >= len(first)
        assert [messages[int(a.ext_fields["queueOffset"])].body for a in answers] == second


async def test_a_plain_commit_log_is_kept_and_the_dledger_data_start_after_it(tmp_path):
    async with DLedgerBrokers(tmp_path, size=1) as group:
        plain = group.make("n0", enable_d_leger_commit_log=False)
        await plain.start()
        plain_answers = [await group.send(plain, "P", body, queue_id=0) for body in _bodies("plain", 30)]
        assert {a.code for a in plain_answers} == {ResponseCode.SUCCESS}
        await plain.shutdown()
        await group.start("n0")
        master = await group.wait_for_master()
        answers = [await group.send(master, "P", body, queue_id=0) for body in _bodies("raft", 30)]
        assert {a.code for a in answers} == {ResponseCode.SUCCESS}
        plain_end = max(_offset_of(a.ext_fields["msgId"]) for a in plain_answers)
        boundary = plain_end - plain_end % DATA_FILE_SIZE + DATA_FILE_SIZE
        assert list(group.data_files("n0"))[0] == f"{boundary:020d}"
        assert min(_offset_of(a.ext_fields["msgId"]) for a in answers) == boundary + BODY_OFFSET
        assert [int(a.ext_fields["queueOffset"]) for a in answers] == list(range(30, 60))
        messages = await group.pull_all(master, "P", queues=1)
        assert [m.body for m in messages] == _bodies("plain", 30) + _bodies("raft", 30)


async def test_the_name_server_knows_the_master_as_broker_0_and_each_follower_by_its_number(tmp_path):
    from rocketmq_py import AsyncProducer, Message

    async with DLedgerBrokers(tmp_path) as group:
        await group.start()
        master = await group.wait_for_master()

        def registered() -> dict[int, str]:
            data = group.namesrv.routes.get_all_cluster_info().broker_addr_table.get(BROKER_NAME)
            return dict(data.broker_addrs) if data is not None else {}

        def roles() -> dict[int, str]:
            return {broker.config.broker_id: broker.broker_addr for broker in group.brokers.values()}

        assert sorted(roles()) == [0] + sorted(int(m[1:]) + 1 for m, b in group.brokers.items() if b is not master)
        await group.wait_for("the registrations of the roles", lambda: registered() == roles())
        # Our producer finds the master through the name server, as any client does.
        await group.create_topic("T")
        await group.wait_for("the topic's route", lambda: group.namesrv.routes.pickup_topic_route_data("T") is not None)
        async with AsyncProducer("pg", namesrv_addr=group.namesrv.address, instance_name="dledger") as producer:
            sent = [await producer.send(Message("T", f"p{i}".encode())) for i in range(20)]
        assert {result.message_queue.broker_name for result in sent} == {BROKER_NAME}
        assert sorted(m.body for m in await group.pull_all(master, "T")) == sorted(f"p{i}".encode() for i in range(20))
        # The master goes: another registers as brokerId 0, at its own address.
        old_id = next(m for m, b in group.brokers.items() if b is master)
        await group.stop(old_id)
        new_master = await group.wait_for_master()
        await group.wait_for("the new master's registration", lambda: registered() == roles())
        assert registered()[0] == new_master.broker_addr != master.broker_addr


def test_a_java_dledger_broker_conf_starts_ours_unchanged(tmp_path):
    conf = tmp_path / "broker-n0.conf"
    conf.write_text("brokerClusterName = RaftCluster\nbrokerName=RaftNode00\nlistenPort=30911\n"
                    f"storePathRootDir={tmp_path}/node00\nstorePathCommitLog={tmp_path}/node00/commitlog\n"
                    "enableDLegerCommitLog=true\ndLegerGroup=RaftNode00\n"
                    "dLegerPeers=n0-127.0.0.1:40911;n1-127.0.0.1:40912;n2-127.0.0.1:40913\ndLegerSelfId=n0\n"
                    "preferredLeaderId=n1\nenableBatchPush=true\nsendMessageThreadPoolNums=16\n")
    broker, store = load_broker_config(conf)
    assert store.enable_d_leger_commit_log and store.d_leger_self_id == "n0" and store.preferred_leader_id == "n1"
    assert store.is_enable_batch_push
    assert broker.broker_id == -1


def test_batch_push_is_set_by_its_setters_name_as_in_java(tmp_path):
    """Java reports the key as isEnableBatchPush but reads enableBatchPush from a file (its setter's name)."""
    conf = tmp_path / "broker.conf"
    conf.write_text(f"storePathRootDir={tmp_path}\nisEnableBatchPush=true\n")
    assert not load_broker_config(conf)[1].is_enable_batch_push
    conf.write_text(f"storePathRootDir={tmp_path}\nenableBatchPush=true\n")
    broker, store = load_broker_config(conf)
    assert store.is_enable_batch_push
    assert config_to_properties(broker, store)["isEnableBatchPush"] is True


@pytest.mark.parametrize("lines, refusal", [
    ("dLegerPeers=n0-127.0.0.1:40911\ndLegerSelfId=n0\n", "needs dLegerGroup"),
    ("dLegerGroup=g\ndLegerPeers=n0-127.0.0.1:40911\ndLegerSelfId=n3\n", "is not one of the members"),
    ("dLegerGroup=g\ndLegerPeers=n0-127.0.0.1\ndLegerSelfId=n0\n", "is not a member as id-host:port"),
    ("dLegerGroup=g\ndLegerPeers=n0-127.0.0.1:1;n0-127.0.0.1:2\ndLegerSelfId=n0\n", "is listed twice"),
    ("dLegerGroup=g\ndLegerPeers=a-127.0.0.1:1;b-127.0.0.1:2\ndLegerSelfId=a\n", "is not a letter and a number"),
    ("dLegerGroup=g\ndLegerPeers=n0-127.0.0.1:1\ndLegerSelfId=n0\npreferredLeaderId=n9\n", "preferredLeaderId"),
])
def test_bad_dledger_keys_are_refused_in_one_line(tmp_path, lines, refusal):
    conf = tmp_path / "broker.conf"
    conf.write_text(f"storePathRootDir={tmp_path}\nenableDLegerCommitLog=true\n" + lines)
    with pytest.raises(ValueError, match=refusal) as raised:
        load_broker_config(conf)
    assert "\n" not in str(raised.value)
