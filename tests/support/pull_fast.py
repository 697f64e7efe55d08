"""Differential runs of the pulls answered at once: the same frames through a broker that answers them on the
pull lane's fast handler and through one that serves every pull with the processor; what each answered,
committed and stored.

As in ``support.send_fast``: no sockets, one fixed clock, the frames fed to one connection as reads deliver
them. The store is filled by sends first, then a consumer's heartbeat registers its subscription, then the
pulls come.
"""
from __future__ import annotations

import asyncio
import itertools
import random
from dataclasses import dataclass
from pathlib import Path

from rocketmq_py import codec
from rocketmq_py.broker import BrokerConfig, BrokerController
from rocketmq_py.common.codes import RequestCode
from rocketmq_py.common.headers.pull import FLAG_COMMIT_OFFSET, FLAG_SUBSCRIPTION, FLAG_SUSPEND
from rocketmq_py.common.topic_config import MULTI_TAG, TopicConfig
from rocketmq_py.remoting.protocol import RemotingConnection
from rocketmq_py.store import MessageStoreConfig
from rocketmq_py.store.config import SLAVE

from .broker import heartbeat
from .send_fast import KeepingTransport, answers_by_opaque, send_frame, store_files

TOPICS = [TopicConfig(topic_name="Plain", read_queue_nums=4, write_queue_nums=4),
          TopicConfig(topic_name="Tagged", read_queue_nums=2, write_queue_nums=2, topic_filter_type=MULTI_TAG),
          TopicConfig(topic_name="NoReading", read_queue_nums=2, write_queue_nums=2, perm=2)]
#: The consumer group whose heartbeat registers a subscription to Plain (pulls without the SUBSCRIPTION flag).
REGISTERED_GROUP = "cg"
#: Messages stored per queue of each readable topic before the pulls.
PER_QUEUE = 40
HOLD_MS = 40


@dataclass
class PullRun:
    answers: dict[int, bytes]
    committed: dict[str, dict[int, int]]
    #: CommitLog bytes the pulls stored (offset-moved events).
    stored_by_pulls: int
    #: Pulls the fast handler answered, and pulls it declined (left to the processor).
    fast_answers: int
    declined: int


def filling_sends(rng: random.Random) -> list[bytes]:
    """Sends that put ``PER_QUEUE`` messages into every queue of every topic, some with tags."""
    frames = []
    unique = codec.UniqueIdGenerator(b"\x7f\x00\x00\x01")
    for topic in TOPICS:
        for queue_id in range(topic.write_queue_nums):
            for number in range(PER_QUEUE):
                properties = {"UNIQ_KEY": unique.next_id(), "WAIT": "false"}
                if rng.random() < 0.7:
                    properties["TAGS"] = rng.choice(["TagA", "TagB", "TagC"])
                fields = {"a": "pg", "b": topic.topic_name, "c": "TBW102", "d": 4, "e": queue_id, "f": 0,
                          "g": 1_690_000_000_000 + number, "h": 0, "i": codec.properties_to_string(properties),
                          "j": 0, "k": "false", "m": "false"}
                frames.append(send_frame(RequestCode.SEND_MESSAGE_V2, fields, rng.randbytes(rng.choice([0, 50, 700])),
                                         serialize_type=codec.SERIALIZE_ROCKETMQ))
    return frames


def mixed_pulls(rng: random.Random, count: int) -> list[bytes]:
    """``count`` PULL_MESSAGE frames of every kind: found, filtered by tags, past the end with and without
    SUSPEND (long polling parks those), too small or too large an offset, with and without COMMIT_OFFSET and
    SUBSCRIPTION, for the registered group and an unregistered one, and refused ones (unknown topic, a topic
    without read permission, a bad queue id, a SQL92 subscription the broker does not filter by, a subscription
    that does not parse, a header missing a field), in both serializations."""
    frames = []
    for _ in range(count):
        topic = rng.choice(["Plain"] * 6 + ["Tagged"] * 3 + ["NoReading", "NotThere"])
        group = rng.choice([REGISTERED_GROUP] * 3 + ["other"])
        offset = rng.choice([0, rng.randrange(PER_QUEUE), rng.randrange(PER_QUEUE), PER_QUEUE, PER_QUEUE + 5, -3])
        sys_flag = 0
        if rng.random() < 0.5:
            sys_flag |= FLAG_COMMIT_OFFSET
        if rng.random() < 0.5:
            sys_flag |= FLAG_SUSPEND
        if group != REGISTERED_GROUP or rng.random() < 0.5:
            sys_flag |= FLAG_SUBSCRIPTION
        fields: dict[str, object] = {
            "consumerGroup": group, "topic": topic, "queueId": rng.choice([0, 1, 1, 0, 3, 99]),
            "queueOffset": offset, "maxMsgNums": rng.choice([1, 8, 32]), "sysFlag": sys_flag,
            "commitOffset": rng.randrange(PER_QUEUE), "suspendTimeoutMillis": HOLD_MS,
            "subVersion": rng.choice([0, 1, 2]),
            "subscription": rng.choice(["*", "*", "TagA", "TagA || TagB", "TagC||"]), "expressionType": "TAG",
        }
        kind = rng.random()
        if kind < 0.04:
            fields["expressionType"] = "SQL92"
            fields["subscription"] = "a > 1"
        elif kind < 0.06:
            fields["expressionType"] = "NOT_A_TYPE"
        elif kind < 0.08:
            del fields["queueOffset"]
        elif kind < 0.10:
            fields["maxMsgNums"] = "many"
        serialize_type = rng.choice([codec.SERIALIZE_JSON, codec.SERIALIZE_ROCKETMQ])
        frames.append(send_frame(RequestCode.PULL_MESSAGE, fields, None, serialize_type=serialize_type))
    return frames


async def run_pulls(root: Path, sends: list[bytes], pulls: list[bytes], *, fast: bool,
                    slave: bool = False) -> PullRun:
    """Start a broker on ``root``, store ``sends``, register the consumer, feed ``pulls`` and wait for the parked
    ones' hold to end; what it answered to the pulls, the offsets it committed and its store files.

    ``slave``: the broker turns slave (with the defaults) once the sends are stored: a slave takes no sends,
    and what a pull reads is the same whoever wrote it."""
    config = BrokerConfig(broker_name="pull-diff", namesrv_addr="127.0.0.1:1", listen_port=10911,
                          bind_address="127.0.0.1", broker_ip1="127.0.0.1", fast_channel_enable=False,
                          fast_pull_enable=fast,
                          # All the sends are fed at once: on a busy machine the last of them could wait in
                          # the send lane past the default 200 ms and be refused, and the runs would differ.
                          wait_time_mills_in_send_queue=60_000)
    # Small files: each store file gets its blocks when created, and this test stores a few hundred KiB.
    store_config = MessageStoreConfig(store_path_root_dir=str(root), mapped_file_size_commit_log=8 * 1024 * 1024,
                                      mapped_file_size_consume_queue=6_000 * 20, max_hash_slot_num=1_000,
                                      max_index_num=4_000)
    broker = BrokerController(config, store_config)
    broker.store.load()
    broker.store.start()
    broker.store.add_arrival_listener(broker.hold_service.on_arrivals)
    try:
        for topic_config in TOPICS:
            broker.topics.update(topic_config)
        ticks = itertools.count(1_700_000_000_000)
        broker.store.commit_log.clock = lambda: next(ticks)
        table = broker.server.processors
        counts = {"fast": 0, "declined": 0}
        if fast:
            answer = broker.pull_processor.answer_at_once

            def counting(ctx, request):
                response = answer(ctx, request)
                counts["fast" if response is not None else "declined"] += 1
                return response

            table.register_fast(RequestCode.PULL_MESSAGE, counting)
        connection = RemotingConnection(broker.server.dispatcher.serve, pause_reading_when_write_blocked=True)
        transport = KeepingTransport()
        connection.connection_made(transport)  # type: ignore[arg-type]
        registration = send_frame(RequestCode.HEART_BEAT, {}, heartbeat("client-1", REGISTERED_GROUP, "Plain"),
                                  serialize_type=codec.SERIALIZE_JSON)
        for frames in (sends, [registration]):
            connection.data_received(b"".join(frames))
            for lane in table.lanes:
                assert await lane.drain(10)
            for _ in range(3):  # the answers' writes
                await asyncio.sleep(0)
        # Every send was stored, in every queue, before the first pull.
        for topic_config in TOPICS:
            for queue_id in range(topic_config.write_queue_nums):
                assert broker.store.get_max_offset_in_queue(topic_config.topic_name, queue_id) == PER_QUEUE
        if slave:
            broker.store_config.broker_role = SLAVE
        filled_end = broker.store.commit_log.max_offset
        transport.written.clear()
        for start in range(0, len(pulls), 5):
            connection.data_received(b"".join(pulls[start:start + 5]))
            await asyncio.sleep(0)
        for lane in table.lanes:
            assert await lane.drain(10)
        # Parked pulls answer when their hold ends (nothing new arrives).
        await asyncio.sleep(HOLD_MS / 1000 * 5)
        assert not broker.hold_service.table
        committed = {key: dict(offsets) for key, offsets in broker.offsets.table.items()}
        return PullRun(answers_by_opaque(bytes(transport.written)), committed,
                       broker.store.commit_log.max_offset - filled_end, counts["fast"], counts["declined"])
    finally:
        broker.store.shutdown()
