"""Sends served by the front processes against the broker alone: the same frames give byte-identical store
files and answers (issue 30). The suite runs once with the compiled modules and once with the twins, so the
fronts build with both forms of the send fast path."""
from __future__ import annotations

import random

import pytest

from conftest_front_sends import differential, fixed_queues
from conftest_send_fast import mixed_sends

from rocketmq_py.common.topic_config import MULTI_TAG, TopicConfig

TOPICS = [TopicConfig(topic_name="Plain", read_queue_nums=8, write_queue_nums=8),
          TopicConfig(topic_name="Tagged", read_queue_nums=4, write_queue_nums=4, topic_filter_type=MULTI_TAG),
          TopicConfig(topic_name="FewerWriteQueues", read_queue_nums=8, write_queue_nums=2)]
TOPIC_NAMES = [topic.topic_name for topic in TOPICS]


@pytest.mark.parametrize(("seed", "workers"), [(1, 1), (2, 2)])
async def test_fronts_and_the_broker_alone_store_and_answer_the_same_bytes(tmp_path, seed, workers):
    frames = fixed_queues(mixed_sends(random.Random(seed), 300, TOPIC_NAMES))
    fronts, alone = await differential(tmp_path, frames, workers=workers, topics=TOPICS)
    # The fronts must have built most sends themselves (else this compares the broker with itself) ...
    assert fronts.placed_by_fronts > 150
    assert alone.placed_by_fronts == 0
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
