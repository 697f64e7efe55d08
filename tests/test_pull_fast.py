"""Pulls answered at once on the pull lane's fast handler against the pull processor: the same frames give
the same answers, committed offsets and store files (the offset-moved events are stored messages).

The suite runs once with the compiled modules and once with the pure-Python twins (ci/test.sh).
"""
from __future__ import annotations

import random
import time

import pytest

from rocketmq_py.broker import BrokerConfig, BrokerController
from rocketmq_py.common.codes import RequestCode
from rocketmq_py.common.headers.pull import FLAG_COMMIT_OFFSET, FLAG_SUBSCRIPTION, FLAG_SUSPEND
from rocketmq_py.remoting import RequestContext, create_request
from rocketmq_py.store import MessageStoreConfig

from support.pull_fast import TOPICS, filling_sends, mixed_pulls, run_pulls
from support.send_fast import store_files


@pytest.mark.parametrize("seed", [1, 2])
async def test_pulls_answered_at_once_answer_commit_and_store_as_the_processor(tmp_path, monkeypatch, seed):
    # An offset-moved event is born at the wall-clock time: one fixed time for both runs.
    monkeypatch.setattr(time, "time_ns", lambda: 1_700_000_000_000_000_000)
    rng = random.Random(seed)
    sends = filling_sends(rng)
    pulls = mixed_pulls(rng, 300)
    fast = await run_pulls(tmp_path / "fast", sends, pulls, fast=True)
    slow = await run_pulls(tmp_path / "slow", sends, pulls, fast=False)
    # Most pulls took the fast handler; the ones long polling parks were declined and parked by the processor.
    assert fast.fast_answers > 200
    assert fast.declined > 5
    assert fast.fast_answers + fast.declined == len(pulls)
    assert slow.fast_answers == slow.declined == 0
    # Every pull was answered (the parked ones when their hold ended), alike.
    assert len(slow.answers) == len(pulls)
    assert fast.answers == slow.answers
    assert fast.committed == slow.committed and slow.committed
    fast_files, slow_files = store_files(tmp_path / "fast"), store_files(tmp_path / "slow")
    assert fast_files == slow_files


async def test_a_slaves_pulls_answered_at_once_answer_as_the_processor(tmp_path):
    rng = random.Random(3)
    sends = filling_sends(rng)
    pulls = mixed_pulls(rng, 300)
    fast = await run_pulls(tmp_path / "fast", sends, pulls, fast=True, slave=True)
    slow = await run_pulls(tmp_path / "slow", sends, pulls, fast=False, slave=True)
    assert fast.fast_answers > 200 and fast.declined > 5
    assert len(slow.answers) == len(pulls)
    assert fast.answers == slow.answers
    # A slave commits nothing and stores nothing (no offset-moved event).
    assert fast.committed == slow.committed == {}
    assert fast.stored_by_pulls == slow.stored_by_pulls == 0


async def test_a_pull_that_would_park_is_declined_before_anything_changes(tmp_path):
    broker = BrokerController(BrokerConfig(broker_name="b", namesrv_addr="127.0.0.1:1", broker_ip1="127.0.0.1"),
                              MessageStoreConfig(store_path_root_dir=str(tmp_path)))
    broker.topics.update(TOPICS[0])

    class Connection:
        remote_address = "10.0.0.1:5000"
        shares_files = False

    request = create_request(RequestCode.PULL_MESSAGE, {
        "consumerGroup": "g", "topic": "Plain", "queueId": "0", "queueOffset": "0", "maxMsgNums": "32",
        "sysFlag": str(FLAG_SUSPEND | FLAG_COMMIT_OFFSET | FLAG_SUBSCRIPTION), "commitOffset": "7",
        "suspendTimeoutMillis": "1000", "subscription": "*", "expressionType": "TAG", "subVersion": "0"}, None)
    assert broker.pull_processor.answer_at_once(RequestContext(Connection()), request) is None  # type: ignore[arg-type]
    assert not broker.hold_service.table
    assert broker.offsets.query_offset("g", "Plain", 0) == -1

