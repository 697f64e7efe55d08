"""Issue 31, phase 1: DLedger's file store on its own: placement and padding, follower truncation, recovery
after a crash (a torn entry, a lost or stale index), the checkpoint, the persisted term, and the deletion of
old data files."""
from __future__ import annotations

import os
import struct
import time

import pytest

from rocketmq_py.dledger import DLedgerConfig, DLedgerError, ResponseCode, Role
from rocketmq_py.dledger.clean import CleanSpaceService
from rocketmq_py.dledger.entry import BLANK_MAGIC_CODE, BODY_OFFSET, INDEX_UNIT_SIZE, decode_entry, encode_entry
from rocketmq_py.dledger.member_state import MemberState
from rocketmq_py.dledger.store import DLedgerFileStore
from rocketmq_py.errors import ConfigError, StoreError

DATA_FILE_SIZE = 4096
INDEX_FILE_SIZE = 32 * 64


def _config(root, member_id: str = "n0") -> DLedgerConfig:
    return DLedgerConfig(group="g", self_id=member_id, peers="n0-127.0.0.1:1;n1-127.0.0.1:2;n2-127.0.0.1:3",
                         store_base_dir=str(root), mapped_file_size_for_entry_data=DATA_FILE_SIZE,
                         mapped_file_size_for_entry_index=INDEX_FILE_SIZE)


def _store(root, role: Role = Role.LEADER, term: int = 1, member_id: str = "n0") -> DLedgerFileStore:
    state = MemberState(_config(root, member_id))
    state.current_term = term
    state.role = role
    state.leader_id = "n0" if role is Role.FOLLOWER else member_id
    store = DLedgerFileStore(state.config, state)
    store.startup()
    return store


def _data_dir(root, member_id: str = "n0"):
    return root / f"dledger-{member_id}" / "data"


def _index_dir(root, member_id: str = "n0"):
    return root / f"dledger-{member_id}" / "index"


def test_entries_fill_a_file_and_the_rest_is_padded(tmp_path):
    store = _store(tmp_path)
    body = bytes(range(256)) * 3  # 768 bytes: an entry of 816, five per 4096-byte file with 16 left
    entries = [store.append_as_leader(body) for _ in range(7)]
    assert [e.pos for e in entries] == [0, 816, 1632, 2448, 3264, 4096, 4912]
    first = (_data_dir(tmp_path) / f"{0:020d}").read_bytes()
    assert struct.unpack_from(">ii", first, 4080) == (BLANK_MAGIC_CODE, 16)
    assert first[4088:] == bytes(8)
    assert decode_entry(first, 816) == entries[1]
    assert store.get(6).body == body and store.get(6).pos == 4912
    assert store.entry_at(4912) == store.get(6)
    with pytest.raises(DLedgerError):
        store.entry_at(4913)
    store.shutdown()


def test_an_append_hook_sees_the_pos_and_may_rewrite_the_body(tmp_path):
    store = _store(tmp_path)

    def write_physical_offset(entry, encoded):
        struct.pack_into(">q", encoded, BODY_OFFSET, entry.pos + BODY_OFFSET)

    store.append_hooks.append(write_physical_offset)
    store.append_as_leader(bytes(16))
    second = store.append_as_leader(bytes(16))
    assert struct.unpack_from(">q", store.get(1).body) == (second.pos + BODY_OFFSET,)
    assert second.body == store.get(1).body
    store.shutdown()


def test_only_the_leader_appends_and_only_a_follower_takes_entries(tmp_path):
    follower = _store(tmp_path, Role.FOLLOWER)
    with pytest.raises(DLedgerError) as refused:
        follower.append_as_leader(b"x")
    assert refused.value.code is ResponseCode.NOT_LEADER
    leader = _store(tmp_path / "leader")
    entry = leader.append_as_leader(b"x")
    with pytest.raises(DLedgerError) as refused:
        leader.append_as_follower(entry, 1, "n0")
    assert refused.value.code is ResponseCode.NOT_FOLLOWER
    follower.append_as_follower(entry, 1, "n0")
    with pytest.raises(DLedgerError) as refused:
        follower.append_as_follower(entry, 1, "n0")
    assert refused.value.code is ResponseCode.INCONSISTENT_INDEX
    follower.shutdown()
    leader.shutdown()


def test_a_truncated_tail_is_zeroed_and_the_files_equal_the_leaders(tmp_path):
    leader = _store(tmp_path / "a", term=2)
    follower = _store(tmp_path / "b", Role.FOLLOWER, term=1)
    stale_leader = _store(tmp_path / "c", term=1)
    common = [leader.append_as_leader(b"common-%d" % i * 40) for i in range(6)]
    for entry in common:
        stale_leader.member_state.role = Role.FOLLOWER
        stale_leader.member_state.leader_id = "n0"
        stale_leader.append_as_follower(entry, 1, "n0")
    stale_leader.member_state.role = Role.LEADER
    for i in range(9):  # a divergent tail, into a second file
        stale_leader.append_as_leader(b"stale-%d" % i * 60)
    assert len(list(_data_dir(tmp_path / "c").iterdir())) == 2
    tail = [leader.append_as_leader(b"new-%d" % i * 30) for i in range(3)]
    state = stale_leader.member_state
    state.role, state.leader_id, state.current_term = Role.FOLLOWER, "n0", 2
    assert stale_leader.truncate(common[-1], 2, "n0") == 5
    for entry in tail:
        stale_leader.append_as_follower(entry, 2, "n0")
    for kind in (_data_dir, _index_dir):
        ours = {p.name: p.read_bytes() for p in kind(tmp_path / "c").iterdir()}
        theirs = {p.name: p.read_bytes() for p in kind(tmp_path / "a").iterdir()}
        assert ours == theirs
    for store in (leader, follower, stale_leader):
        store.shutdown()


def test_recovery_cuts_a_torn_entry_and_zeroes_it(tmp_path):
    # 0.3.1.2 has no CRC: a whole header with a torn body reads as an entry, in Java as here. A torn header
    # does not (its pos is not where it lies).
    store = _store(tmp_path)
    entries = [store.append_as_leader(b"e%d" % i * 50) for i in range(4)]
    end = store.data_files.max_wrote_position
    store.shutdown()
    torn = encode_entry(decode_entry(encode_entry(entries[-1])))
    struct.pack_into(">qqq", torn, 8, 4, 1, end)
    data_file = _data_dir(tmp_path) / f"{0:020d}"
    with open(data_file, "r+b") as f:
        f.seek(end)
        f.write(bytes(torn[:24]))  # the machine died with only the first part of the header on disk
    with open(_index_dir(tmp_path) / f"{0:020d}", "r+b") as f:
        f.seek(4 * INDEX_UNIT_SIZE)
        f.write(struct.pack(">iqiqq", 1, end, len(torn), 4, 1))
    recovered = _store(tmp_path)
    assert recovered.ledger_end_index == 3
    assert recovered.data_files.max_wrote_position == end
    assert data_file.read_bytes()[end:end + 200] == bytes(200)
    assert recovered.append_as_leader(b"after").pos == end
    assert recovered.get(4).body == b"after"
    recovered.shutdown()


def test_recovery_rebuilds_a_lost_or_stale_index(tmp_path):
    store = _store(tmp_path)
    for i in range(40):
        store.append_as_leader(b"i%d" % i * 100)
    store.shutdown()
    index_file = _index_dir(tmp_path) / f"{0:020d}"
    original = index_file.read_bytes()
    with open(index_file, "r+b") as f:
        f.seek(20 * INDEX_UNIT_SIZE)
        f.write(bytes(5 * INDEX_UNIT_SIZE))
    recovered = _store(tmp_path)
    assert recovered.ledger_end_index == 39
    recovered.shutdown()
    assert index_file.read_bytes() == original
    index_file.unlink()
    recovered = _store(tmp_path)
    assert [recovered.get(i).body for i in (0, 39)] == [b"i0" * 100, b"i39" * 100]
    recovered.shutdown()
    assert index_file.read_bytes() == original


def test_the_checkpoint_brings_back_the_committed_index(tmp_path):
    store = _store(tmp_path)
    for i in range(10):
        store.append_as_leader(b"c%d" % i)
    assert store.update_committed_index(1, 6)
    assert not store.update_committed_index(0, 9), "a leader of an older term does not move it"
    assert not store.update_committed_index(1, 5), "it never moves back"
    store.shutdown()
    assert (tmp_path / "dledger-n0" / "checkpoint").read_text().splitlines() == ["endIndex=9", "committedIndex=6"]
    recovered = _store(tmp_path)
    assert (recovered.committed_index, recovered.committed_pos) == (6, recovered.get(6).pos + recovered.get(6).size)
    recovered.shutdown()


def test_the_term_and_vote_outlive_a_restart(tmp_path):
    state = MemberState(_config(tmp_path))
    assert (state.current_term, state.vote_for) == (0, None)
    assert state.next_term() == 1
    state.set_vote_for("n2")
    again = MemberState(_config(tmp_path))
    assert (again.current_term, again.vote_for) == (1, "n2")
    assert (tmp_path / "dledger-n0" / "currterm").read_text() == "currTerm=1\nvoteLeader=n2\n"


def test_a_data_file_of_another_size_refuses_to_start(tmp_path):
    _data_dir(tmp_path).mkdir(parents=True)
    (_data_dir(tmp_path) / f"{0:020d}").write_bytes(bytes(100))
    with pytest.raises(StoreError, match="mappedFileSizeCommitLog"):
        _store(tmp_path)


@pytest.mark.parametrize("peers, self_id, message", [
    ("n0-127.0.0.1", "n0", "not a member as id-host:port"),
    ("n0-127.0.0.1:1;n0-127.0.0.1:2", "n0", "listed twice"),
    ("n0-127.0.0.1:1;n1-127.0.0.1:2", "n7", "not one of the members"),
    ("n0-127.0.0.1:99999", "n0", "not a member"),
])
def test_bad_peers_are_refused_with_what_to_write(tmp_path, peers, self_id, message):
    with pytest.raises(ConfigError, match=message):
        DLedgerConfig(group="g", self_id=self_id, peers=peers, store_base_dir=str(tmp_path)).validate()


def test_the_commit_log_settings_come_from_the_broker_keys_as_java_sets_them():
    config = DLedgerConfig.for_commit_log(
        group="broker-a", self_id="n1", peers="n0-127.0.0.1:40911;n1-127.0.0.1:40912", store_path_root_dir="/s",
        mapped_file_size_commit_log=64 * 1024 * 1024, file_reserved_time=48, preferred_leader_id="n0",
        enable_batch_push=True, disk_max_used_space_ratio=80)
    assert (config.data_path, config.index_path) == ("/s/dledger-n1/data", "/s/dledger-n1/index")
    assert config.mapped_file_size_for_entry_data == 64 * 1024 * 1024
    assert config.file_reserved_hours == 49
    assert config.preferred_leaders == ["n0"]
    assert config.enable_batch_push and config.disk_space_ratio_to_check_expired == 0.8
    assert DLedgerConfig.for_commit_log(group="g", self_id="n0", peers="n0-h:1", store_path_root_dir="/s",
                                        store_path_dledger_commit_log="/d").data_path == "/d"


def _filled(root, files: int = 4) -> DLedgerFileStore:
    """A leader's store of ``files`` full data files and a last one, every entry committed."""
    store = _store(root)
    while len(store.data_files.files) <= files:
        store.append_as_leader(bytes(700))
    store.update_committed_index(1, store.ledger_end_index)
    return store


def _age(store: DLedgerFileStore, hours: float) -> None:
    stamp = time.time() - hours * 3600
    for mapped in store.data_files.files:
        os.utime(mapped.path, (stamp, stamp))


def test_expired_data_files_go_at_the_delete_hour_and_the_log_begins_after_them(tmp_path):
    store = _filled(tmp_path)
    _age(store, 80)
    clean = CleanSpaceService(store.config, store, disk_usage=lambda path: 0.10)
    assert clean.clean_once(time.time() * 1000, hour=3) == 0, "not the deleteWhen hour, and the disk is not full"
    assert clean.clean_once(time.time() * 1000, hour=4) == 4, "every file but the last"
    assert [f.file_from_offset for f in store.data_files.files] == [4 * DATA_FILE_SIZE]
    assert store.ledger_begin_index == 20 and store.get(20).pos == 4 * DATA_FILE_SIZE
    with pytest.raises(DLedgerError) as gone:
        store.get(19)
    assert gone.value.code is ResponseCode.INDEX_LESS_THAN_LOCAL_BEGIN
    store.shutdown()
    assert _store(tmp_path).ledger_begin_index == 20, "recovery finds the same begin"


def test_files_that_have_not_expired_or_are_not_committed_stay(tmp_path):
    store = _filled(tmp_path)
    clean = CleanSpaceService(store.config, store, disk_usage=lambda path: 0.75)
    assert clean.clean_once(time.time() * 1000, hour=4) == 0
    _age(store, 80)
    store.committed_index, store.committed_pos = 9, store.get(9).pos + store.get(9).size
    assert clean.clean_once(time.time() * 1000, hour=4) == 1, "only the file wholly below the committed entries"
    store.shutdown()


def test_the_forced_clean_deletes_early_only_what_the_state_machine_lets_go(tmp_path):
    store = _filled(tmp_path)
    clean = CleanSpaceService(store.config, store, disk_usage=lambda path: 0.88)
    assert clean.clean_once(time.time() * 1000, hour=12) == 0, "nothing expired, and nothing may go early"
    clean.deletable_before_expiry = lambda mapped: mapped.file_from_offset < 2 * DATA_FILE_SIZE
    assert clean.clean_once(time.time() * 1000, hour=12) == 2
    clean.deletable_before_expiry = None
    store.config.clean_unconsumed_file_forcibly_enable = True
    assert clean.clean_once(time.time() * 1000, hour=12) == 2, "Java's rule: the oldest files, whatever they hold"
    assert len(store.data_files.files) == 1
    store.shutdown()


def test_a_full_disk_refuses_appends_until_it_has_room_again(tmp_path):
    store = _filled(tmp_path, files=1)
    usage = {"ratio": 0.91}
    clean = CleanSpaceService(store.config, store, disk_usage=lambda path: usage["ratio"])
    clean.clean_once(time.time() * 1000, hour=12)
    with pytest.raises(DLedgerError) as refused:
        store.append_as_leader(b"x")
    assert refused.value.code is ResponseCode.DISK_FULL
    usage["ratio"] = 0.5
    clean.clean_once(time.time() * 1000, hour=12)
    assert store.append_as_leader(b"x").index == store.ledger_end_index
    store.shutdown()
