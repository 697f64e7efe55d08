"""The send fast path against the send processor: the same frames give byte-identical store files and answers.

This suite runs once with the compiled modules and once with the pure-Python twins (ci/test.sh), so both
forms of the fast path are held to the processor's bytes.
"""
from __future__ import annotations

import random

import pytest

from rocketmq_py import codec
from rocketmq_py.broker import send_fast
from rocketmq_py.common.codes import RequestCode
from rocketmq_py.common.topic_config import MULTI_TAG, TopicConfig
from rocketmq_py.remoting import ProcessorTable, RemotingCommand, RequestContext, RequestRefusedError, create_request

from support.send_fast import answers_by_opaque, differential, mixed_sends, run_broker, send_frame, store_files

TOPICS = [TopicConfig(topic_name="Plain", read_queue_nums=8, write_queue_nums=8),
          TopicConfig(topic_name="Tagged", read_queue_nums=4, write_queue_nums=4, topic_filter_type=MULTI_TAG),
          TopicConfig(topic_name="FewerWriteQueues", read_queue_nums=8, write_queue_nums=2)]
TOPIC_NAMES = [topic.topic_name for topic in TOPICS]


def test_the_expected_implementation_runs(expected_implementation):
    assert send_fast.IMPLEMENTATION == expected_implementation("rocketmq_py.broker._send_fast")


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_fast_and_slow_paths_store_and_answer_the_same_bytes(tmp_path, seed):
    frames = mixed_sends(random.Random(seed), 400, TOPIC_NAMES)
    fast, slow = await differential(tmp_path, frames, seed=seed, topics=TOPICS)
    # The fast path must have answered most of them (else this compares the slow path with itself), most of
    # them into files that were ready and some after the store made a file ...
    assert fast.fast_answers > 200
    assert 0 < fast.general_puts < fast.fast_answers - 150
    assert fast.fast_batches > 40
    assert 0 < fast.general_batch_puts < fast.fast_batches - 20
    assert slow.fast_answers == 0
    # ... and the CommitLog rolled, so the path met a full file.
    assert sum(name.startswith("commitlog/") for name in fast.files) > 3
    assert fast.files.keys() == slow.files.keys()
    for name in slow.files:
        assert fast.files[name] == slow.files[name], name
    assert fast.answers == slow.answers
    assert fast.arrivals == slow.arrivals


@pytest.mark.parametrize("seed", [5, 6])
async def test_the_compiled_fast_path_and_its_twin_store_and_answer_the_same_bytes(tmp_path, twins, seed):
    """The two forms of the fast path side by side, each in its own broker (the store's write path and the
    codec are the same in both): the same requests taken and declined, the same answers and store files."""
    fast_paths = twins("rocketmq_py.broker._send_fast")
    frames = mixed_sends(random.Random(seed), 400, TOPIC_NAMES)
    runs = []
    for name, implementation in (("twin", fast_paths.twin), ("compiled", fast_paths.compiled)):
        result = await run_broker(tmp_path / name, frames, fast=True, seed=seed, topics=TOPICS,
                                  fast_path=implementation.SendFastPath)
        result.files = store_files(tmp_path / name)
        runs.append(result)
    twin, compiled_run = runs
    assert twin.fast_answers > 200 and twin.fast_batches > 40
    assert (compiled_run.fast_answers, compiled_run.fast_batches) == (twin.fast_answers, twin.fast_batches)
    assert compiled_run.answers == twin.answers
    assert compiled_run.arrivals == twin.arrivals
    assert compiled_run.files.keys() == twin.files.keys()
    for name in twin.files:
        assert compiled_run.files[name] == twin.files[name], name


async def test_sync_flush_sends_that_wait_take_the_processor_and_the_others_the_fast_path(tmp_path):
    rng = random.Random(9)
    frames = mixed_sends(rng, 120, ["Plain"])
    # One CommitLog file for all of them: a group commit gives a waiting send two flushes of one file each (as
    # Java's GroupCommitService does) and answers FLUSH_DISK_TIMEOUT when its record is further on, which with
    # small files happens when load lets the sends that do not wait roll several files before a group commit.
    fast, slow = await differential(tmp_path, frames, seed=9, topics=TOPICS, flush_disk_type="SYNC_FLUSH",
                                    mapped_file_size_commit_log=4 << 20)
    assert 0 < fast.fast_answers < 120
    assert fast.files == slow.files
    # The answers of sends that wait for the group commit come after those answered at once.
    assert answers_by_opaque(fast.answers) == answers_by_opaque(slow.answers)


async def test_a_read_only_broker_answers_every_send_from_the_processor(tmp_path):
    frames = mixed_sends(random.Random(4), 40, ["Plain"])
    fast, slow = await differential(tmp_path, frames, seed=4, topics=TOPICS, broker_permission=4)
    assert fast.fast_answers == 0
    assert fast.files == slow.files
    assert fast.answers == slow.answers


def _send_request(topic: str = "Plain", **overrides: object) -> RemotingCommand:
    fields = {"a": "pg", "b": topic, "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1", "h": "0",
              "i": "", "j": "0", "k": "false", "m": "false"}
    fields.update({key: str(value) for key, value in overrides.items()})
    return create_request(RequestCode.SEND_MESSAGE_V2, fields, b"body")


class _Connection:
    remote_address = "10.1.2.3:40404"


async def test_a_fast_handler_is_skipped_while_the_table_has_hooks():
    table = ProcessorTable()
    answered = []

    def fast(ctx, request):
        answered.append(request)
        return RemotingCommand(code=0)

    table.register_fast(RequestCode.SEND_MESSAGE_V2, fast)
    ctx = RequestContext(_Connection())  # type: ignore[arg-type]
    request = _send_request()
    response = table.answer_fast(ctx, request)
    assert response is not None and response.opaque == request.opaque and response.flag & codec.FLAG_RESPONSE
    # As dispatch answers a processed request: in the request's serialization, whatever the handler built.
    binary = _send_request()
    binary.serialize_type = codec.SERIALIZE_ROCKETMQ
    assert table.answer_fast(ctx, binary).serialize_type == codec.SERIALIZE_ROCKETMQ  # type: ignore[union-attr]
    assert table.answer_fast(ctx, create_request(RequestCode.PULL_MESSAGE, {})) is None

    def refuse(ctx, request):
        raise RequestRefusedError(16, "no")

    table.add_hook(refuse)
    assert table.answer_fast(ctx, request) is None
    assert answered == [request, binary]


async def test_a_fast_handler_that_raises_answers_system_error(caplog):
    table = ProcessorTable()

    def broken(ctx, request):
        raise RuntimeError("a bug")

    table.register_fast(RequestCode.SEND_MESSAGE_V2, broken)
    response = table.answer_fast(RequestContext(_Connection()), _send_request())  # type: ignore[arg-type]
    assert response is not None and response.code == 1
    assert response.remark == "RuntimeError: a bug"
    binary = _send_request()
    binary.serialize_type = codec.SERIALIZE_ROCKETMQ
    # Java builds its error answers in the node's default serialization, not the request's.
    assert table.answer_fast(RequestContext(_Connection()), binary).serialize_type == codec.SERIALIZE_JSON  # type: ignore[arg-type,union-attr]
    assert "the fast path of" in caplog.text
    table.register_fast(RequestCode.SEND_MESSAGE_V2, None)
    assert table.answer_fast(RequestContext(_Connection()), _send_request()) is None  # type: ignore[arg-type]


async def test_oneway_plain_sends_are_stored_and_not_answered(tmp_path):
    frames = [send_frame(RequestCode.SEND_MESSAGE_V2,
                         {"a": "pg", "b": "Plain", "c": "TBW102", "d": 4, "e": 1, "f": 0, "g": 5, "h": 0,
                          "i": "WAIT\x01false", "k": "false"}, b"x", serialize_type=codec.SERIALIZE_JSON,
                         oneway=True) for _ in range(5)]
    fast, slow = await differential(tmp_path, frames, seed=0, topics=TOPICS)
    assert fast.fast_answers == 5
    assert fast.answers == slow.answers == b""
    assert fast.files == slow.files
    assert any(name.startswith("consumequeue/Plain/1/") for name in fast.files)
