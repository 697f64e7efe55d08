"""Sends and pulls served by the front processes against the broker alone: the same frames give byte-identical
store files and answers (issue 30). The suite runs once with the compiled modules and once with the twins, so the
fronts build with both forms of the send fast path, and the broker process names the pulls' records with both
forms of the store's read path."""
from __future__ import annotations

import os
import random
import signal

import pytest

from support.broker import BrokerEnv
from support.cluster import wait_until
from support.front_sends import differential, fixed_queues, pulls
from support.send_fast import mixed_sends

from rocketmq_py import codec
from rocketmq_py.common.codes import ResponseCode
from rocketmq_py.common.topic_config import MULTI_TAG, TopicConfig
from rocketmq_py.errors import RocketMQError
from rocketmq_py.remoting.protocol import RemotingConnection

TOPICS = [TopicConfig(topic_name="Plain", read_queue_nums=8, write_queue_nums=8),
          TopicConfig(topic_name="Tagged", read_queue_nums=4, write_queue_nums=4, topic_filter_type=MULTI_TAG),
          TopicConfig(topic_name="FewerWriteQueues", read_queue_nums=8, write_queue_nums=2)]
TOPIC_NAMES = [topic.topic_name for topic in TOPICS]


@pytest.mark.parametrize(("seed", "workers"), [(1, 1), (2, 2)])
async def test_fronts_and_the_broker_alone_store_and_answer_the_same_bytes(tmp_path, seed, workers):
    rng = random.Random(seed)
    frames = fixed_queues(mixed_sends(rng, 300, TOPIC_NAMES))
    # Pulls between the sends and after them: a front writes what it reads from the CommitLog's files.
    frames = frames[:150] + pulls(rng, 40, TOPICS) + frames[150:] + pulls(rng, 120, TOPICS)
    fronts, alone = await differential(tmp_path, frames, workers=workers, topics=TOPICS)
    # The fronts must have built most sends themselves (else this compares the broker with itself): of the
    # ~200 they may take, all but those to a topic a send just created (the fronts learn it within 0.1 s) ...
    assert fronts.placed_by_fronts > 120
    assert alone.placed_by_fronts == 0
    # ... and read the records of most pulls from the files (those that found some).
    assert fronts.regions > 60
    assert alone.regions == 0
    # ... and the CommitLog rolled, so placements met a full file.
    assert sum(name.startswith("commitlog/") for name in fronts.files) > 3
    assert fronts.files.keys() == alone.files.keys()
    for name in alone.files:
        assert fronts.files[name] == alone.files[name], name
    assert fronts.answers.keys() == alone.answers.keys()
    for opaque in alone.answers:
        assert fronts.answers[opaque] == alone.answers[opaque], opaque


async def test_sync_flush_sends_that_wait_are_served_by_the_broker_process(tmp_path):
    """SYNC_FLUSH: a send with WAIT=true waits for its flush, so the fronts relay it; WAIT=false ones they serve."""
    frames = fixed_queues(mixed_sends(random.Random(7), 120, TOPIC_NAMES))
    fronts, alone = await differential(tmp_path, frames, workers=1, topics=TOPICS, flush_disk_type="SYNC_FLUSH")
    assert 0 < fronts.placed_by_fronts < 100
    assert fronts.files == alone.files
    assert fronts.answers == alone.answers


async def test_a_front_killed_between_placement_and_answer_loses_nothing_acknowledged(tmp_path):
    """``kill -9`` of a front after the broker process placed a send and before the front answered it: every
    acknowledged send is stored, the unanswered one is stored too (the client sends it again, as after any
    broken connection), and the front is started again and serves sends."""
    async with BrokerEnv(tmp_path, server_worker_processes=1) as env:
        broker = env.broker
        assert broker is not None
        await env.create_topic("TK", queues=1)
        [victim] = broker.server.front_pids
        placement = broker.server.front_service
        place = placement.place
        placed_sends = 0

        def place_then_kill(payload: bytes) -> bytes:
            nonlocal placed_sends
            answer = place(payload)
            if answer[4]:
                placed_sends += 1
                if placed_sends == 5:
                    os.kill(victim, signal.SIGKILL)  # the PLACED answer is written to a dead front
            return answer

        placement.place = place_then_kill
        acknowledged = []
        for number in range(1000):
            try:
                response = await env.send("TK", f"m{number}".encode(), queue_id=0, properties={"WAIT": "false"})
            except RocketMQError:
                break
            assert response.code == ResponseCode.SUCCESS
            acknowledged.append(f"m{number}".encode())
        assert placed_sends == 5
        await wait_until(lambda: len(broker.server.front_pids) == 1 and victim not in broker.server.front_pids,
                         timeout=30)
        after = await env.send("TK", b"after", queue_id=0, properties={"WAIT": "false"})
        assert after.code == ResponseCode.SUCCESS
        assert placed_sends >= 6  # the new front serves sends too
        stored: list[bytes] = []
        while True:
            pulled = await env.pull("TK", 0, len(stored))
            if pulled.code != ResponseCode.SUCCESS:
                break
            stored += [record.body for record in codec.decode_store_records(pulled.body or b"")]
        unanswered = f"m{len(acknowledged)}".encode()
        assert stored == [*acknowledged, unanswered, b"after"]


async def test_a_client_whose_sends_a_front_serves_is_not_idle_to_the_broker_process(tmp_path, monkeypatch):
    """The broker process closes a connection it hears nothing from (serverChannelMaxIdleTimeSeconds); the
    front tells it that a client whose sends it serves itself is active."""
    noted: list[str] = []
    original = RemotingConnection.note_activity

    def noting(connection: RemotingConnection) -> None:
        noted.append(connection.remote_address)
        original(connection)

    monkeypatch.setattr(RemotingConnection, "note_activity", noting)
    async with BrokerEnv(tmp_path, server_worker_processes=1) as env:
        assert env.broker is not None
        await env.create_topic("TA", queues=1)
        # The first sends may be relayed (the fronts learn of the topic within 0.1 s); the others are served.
        for number in range(1000):
            response = await env.send("TA", b"m", queue_id=0, properties={"WAIT": "false"})
            assert response.code == ResponseCode.SUCCESS
            if noted:
                break
        local = env.client.connection(env.addr)
        assert local is not None
        assert noted == [local.local_address]
