"""Issue 31, phase 1: DLedger's bodies refuse what fastjson refuses, and a member answers bad or misaddressed
requests as Java's DLedgerServer does (the frame code 200, the status in the body)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from support.dledger import DLedgerGroup
from rocketmq_py.dledger import ResponseCode
from rocketmq_py.dledger.codes import PushType, RequestCode, VoteResult
from rocketmq_py.dledger.entry import DLedgerEntry
from rocketmq_py.dledger.protocol import (
    MetadataRequest,
    MetadataResponse,
    PushEntryRequest,
    VoteRequest,
    VoteResponse,
    java_hash_map_order,
)
from rocketmq_py.dledger.rpc import build_request
from rocketmq_py.errors import BadRequestError
from rocketmq_py.remoting import RemotingClient, create_request


@pytest.mark.parametrize("body, field", [
    (b"{", "not JSON"),
    (b'{"term":"three"}', "term"),
    (b'{"ledgerEndIndex":1e3}', "ledgerEndIndex"),
    (b'{"code":9999999999}', "code"),
])
def test_a_vote_body_that_does_not_bind_is_refused(body, field):
    with pytest.raises(BadRequestError, match=field):
        VoteRequest.decode(body)


def test_bodies_read_enums_by_name_and_ordinal_and_bytes_as_base64():
    assert VoteResponse.decode(b'{"voteResult":"ACCEPT"}').vote_result is VoteResult.ACCEPT
    assert VoteResponse.decode(b'{"voteResult":1}').vote_result is VoteResult.ACCEPT
    push = PushEntryRequest.decode(b'{"type":"TRUNCATE","entry":{"index":3,"body":"AAE="}}')
    assert push.type is PushType.TRUNCATE and push.entry == DLedgerEntry(index=3, body=b"\0\1")
    with pytest.raises(BadRequestError, match="base64"):
        PushEntryRequest.decode(b'{"entry":{"body":"%%%"}}')
    with pytest.raises(BadRequestError, match="type"):
        PushEntryRequest.decode(b'{"type":"SHOVE"}')


def test_a_batch_takes_consecutive_entries_only():
    push = PushEntryRequest()
    push.add_entry(DLedgerEntry(index=5, size=50, body=b"x"))
    push.add_entry(DLedgerEntry(index=6, size=51, body=b"y"))
    assert (push.first_entry_index, push.last_entry_index, push.count, push.total_size) == (5, 6, 2, 101)
    with pytest.raises(ValueError, match="out of order"):
        push.add_entry(DLedgerEntry(index=8, body=b"z"))


def test_peer_maps_are_written_in_java_hash_map_order():
    # n0..n2 land in buckets 2, 3, 4 of 16; "a" (97) in bucket 1; keys of one bucket keep their put order.
    assert java_hash_map_order(["n2", "a", "n1", "n0"]) == ["a", "n0", "n1", "n2"]
    assert MetadataResponse(peers={"n2": "x:3", "n0": "x:1"}).encode() == \
        b'{"code":200,"peers":{"n0":"x:1","n2":"x:3"},"term":-1}'


async def test_a_member_answers_in_body_codes_and_refuses_bad_frames(tmp_path):
    async with DLedgerGroup(tmp_path) as group:
        await group.start("n0")
        address = f"127.0.0.1:{group.members['n0'].port}"
        async with RemotingClient() as client:
            async def ask(code, body):
                return await client.invoke(address, build_request(code, body), 3000)

            answer = await ask(RequestCode.METADATA, MetadataRequest(group="g", remote_id="n0"))
            assert answer.code == 200
            metadata = MetadataResponse.decode(answer.body)
            assert list(metadata.peers or {}) == ["n0", "n1", "n2"] and metadata.group == "g"
            answer = await ask(RequestCode.VOTE, VoteRequest(group="other", remote_id="n0", leader_id="n1", term=1))
            assert (answer.code, VoteResponse.decode(answer.body).code) == (200, ResponseCode.UNKNOWN_GROUP)
            answer = await ask(RequestCode.VOTE, VoteRequest(group="g", remote_id="n9", leader_id="n1", term=1))
            assert VoteResponse.decode(answer.body).code == ResponseCode.UNKNOWN_MEMBER
            answer = await ask(RequestCode.VOTE, VoteRequest(group="g", remote_id="n0", leader_id="x", term=1))
            assert VoteResponse.decode(answer.body).vote_result is VoteResult.REJECT_UNKNOWN_LEADER
            # PULL has no handler in DLedger 0.3.1.2, and a body that does not bind fails the frame.
            assert (await ask(RequestCode.PULL, MetadataRequest(group="g", remote_id="n0"))).code == 1
            bad = await client.invoke(address, create_request(int(RequestCode.VOTE), body=b'{"term":"x"}'), 3000)
            assert bad.code == 1 and "term" in (bad.remark or "")
        assert group.members["n0"].ledger_end_index == -1


def test_the_runnable_member_refuses_bad_peers_in_one_line(tmp_path):
    result = subprocess.run([sys.executable, "-m", "rocketmq_py.dledger", "--group", "g", "--id", "n0", "--peers",
                             "n0-nowhere", "--store", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "dLegerPeers" in lines[0] and "Traceback" not in result.stderr
