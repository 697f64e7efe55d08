"""Differential runs of the send fast path: the same request frames through a broker with the fast path and
through one without it, on one fixed clock, from one peer address; what each stored and answered, byte for
byte.

No sockets: each broker's connection object is fed the frames as one read would deliver them and writes its
answers into a transport that keeps them, so both see the same requests in the same order.
"""
from __future__ import annotations

import asyncio
import itertools
import os
import random
from dataclasses import dataclass, field
from pathlib import Path

from rocketmq_py import codec
from rocketmq_py.broker import BrokerConfig, BrokerController
from rocketmq_py.common.codes import RequestCode
from rocketmq_py.common.topic_config import TopicConfig
from rocketmq_py.remoting import create_request
from rocketmq_py.remoting.protocol import RemotingConnection
from rocketmq_py.store import MessageStoreConfig

PEER = ("10.1.2.3", 40404)
FAST_CODES = (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE)
#: Small store files, so that a few hundred sends roll the CommitLog, the ConsumeQueues and the index.
SMALL_STORE = dict(mapped_file_size_commit_log=64 * 1024, mapped_file_size_consume_queue=20 * 40,
                   max_hash_slot_num=64, max_index_num=96, max_message_size=16 * 1024)


class KeepingTransport:
    """An asyncio transport that keeps what is written."""

    def __init__(self) -> None:
        self.written = bytearray()

    def write(self, data: bytes) -> None:
        self.written += data

    def writelines(self, buffers: list[bytes]) -> None:
        for data in buffers:
            self.written += data

    def is_closing(self) -> bool:
        return False

    def get_extra_info(self, name: str, default: object = None) -> object:
        return PEER if name in ("peername", "sockname") else default

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass


@dataclass
class RunResult:
    answers: bytes
    files: dict[str, bytes]
    fast_answers: int
    #: Fast answers whose put needed a file made first (its last file was full or missing).
    general_puts: int = 0
    #: What the store told its arrival listeners (long polling), one tuple a message.
    arrivals: list[tuple[object, ...]] = field(default_factory=list)
    #: Fast answers to batches (SEND_BATCH_MESSAGE, or a send with the batch flag), and how many of their puts
    #: needed a file made first.
    fast_batches: int = 0
    general_batch_puts: int = 0


def answers_by_opaque(stream: bytes) -> dict[int, bytes]:
    """Each answer frame in ``stream`` by its opaque (answers that wait for a flush come out of order)."""
    answers = {}
    position = 0
    while position < len(stream):
        end = position + 4 + int.from_bytes(stream[position:position + 4], "big")
        frame = stream[position:end]
        (command,) = codec.FrameDecoder().feed(frame)
        answers[command.opaque] = frame
        position = end
    return answers


def store_files(root: Path) -> dict[str, bytes]:
    """The CommitLog and ConsumeQueue files by relative path, and the index files by their order (their names
    are the wall-clock time they were made)."""
    files = {}
    for directory in ("commitlog", "consumequeue"):
        base = root / directory
        for path in sorted(p for p in base.rglob("*") if p.is_file()):
            files[str(path.relative_to(root))] = path.read_bytes()
    index = root / "index"
    if index.is_dir():
        for number, path in enumerate(sorted(p for p in index.iterdir() if p.is_file())):
            files[f"index/#{number}"] = path.read_bytes()
    return files


async def run_broker(root: Path, frames: list[bytes], *, fast: bool, seed: int, topics: list[TopicConfig],
                     chunk: int = 7, fast_path: type | None = None, **options: object) -> RunResult:
    """Start a broker on ``root``, feed it ``frames`` (``chunk`` per read), and return what it answered and
    stored. ``random`` is seeded with ``seed`` (queue ids of ``queueId=-1`` sends) and the store's clock ticks
    one millisecond a message from a fixed start, so two runs are comparable byte for byte. ``fast_path`` is
    the SendFastPath class to run (the one ``send_fast`` selects when None)."""
    store_options = {key: options.pop(key) for key in list(options) if hasattr(MessageStoreConfig, key)}
    # Two decisions go by the wall clock: a lane refuses the sends that waited past waitTimeMillsInSendQueue
    # (200 ms) or came while the put lock was slow, and a SYNC_FLUSH send whose group commit took longer than
    # syncFlushTimeout (5 s) is answered FLUSH_DISK_TIMEOUT. Under load (group commits paced by a busy disk's
    # fsync) two runs then answer different sends differently. The comparison is of the send paths on the same
    # frames, so neither limit is met here (tests/test_broker_lanes.py and the store's tests hold them).
    options.setdefault("broker_fast_failure_enable", False)
    store_options.setdefault("sync_flush_timeout", 600_000)
    config = BrokerConfig(broker_name="fast-diff", namesrv_addr="127.0.0.1:1", listen_port=10911,
                          bind_address="127.0.0.1", broker_ip1="127.0.0.1", fast_channel_enable=False,
                          fast_send_enable=fast, **options)  # type: ignore[arg-type]
    store = MessageStoreConfig(store_path_root_dir=str(root), **{**SMALL_STORE, **store_options})
    broker = BrokerController(config, store)
    # Not started: no listening socket and no name server; the store and the processors are all it needs.
    broker.store.load()
    # The schedule thread re-puts delayed messages once they come due on the wall clock: a second after start,
    # and then at once, since this run's store times are in the past. Its records would land wherever the run
    # had got to, which differs between two runs under load; what is compared here is the send paths, so it
    # does not run (tests/test_store_schedule.py holds it).
    broker.store.schedule_service = None
    broker.store.start()
    broker.store.add_arrival_listener(broker.hold_service.on_arrivals)
    arrivals: list[tuple[object, ...]] = []
    broker.store.add_arrival_listener(arrivals.extend)
    try:
        for topic_config in topics:
            broker.topics.update(topic_config)
        ticks = itertools.count(1_700_000_000_000)
        broker.store.commit_log.clock = lambda: next(ticks)
        random.seed(seed)
        table = broker.server.processors
        counts = {"taken": 0, "batches": 0, "general": 0, "general_batches": 0, "rooms_made": 0}
        make_room = broker.store._make_room

        def counting_room(queues):
            counts["rooms_made"] += 1
            return make_room(queues)

        # The store's write path asks for files only when one a put needs is missing or full.
        broker.store._make_room = counting_room  # type: ignore[method-assign]
        if fast:
            answer = (broker.send_fast if fast_path is None else fast_path(broker.send_processor)).answer

            def counting(ctx, request):
                rooms_made = counts["rooms_made"]
                response = answer(ctx, request)
                if response is not None:
                    batch = "," in response.ext_fields["msgId"] or request.code == 320
                    counts["taken"] += 1
                    counts["batches"] += batch
                    if counts["rooms_made"] > rooms_made:
                        counts["general_batches" if batch else "general"] += 1
                return response

            for code in FAST_CODES:
                table.register_fast(code, counting)
        connection = RemotingConnection(broker.server.dispatcher.serve, pause_reading_when_write_blocked=True)
        transport = KeepingTransport()
        connection.connection_made(transport)  # type: ignore[arg-type]
        for start in range(0, len(frames), chunk):
            connection.data_received(b"".join(frames[start:start + chunk]))
            await asyncio.sleep(0)
        for lane in table.lanes:
            assert await lane.drain(10)
        for _ in range(3):
            await asyncio.sleep(0)
        return RunResult(bytes(transport.written), {}, counts["taken"], counts["general"], arrivals, counts["batches"],
                         counts["general_batches"])
    finally:
        broker.store.shutdown()


async def differential(tmp_path: Path, frames: list[bytes], *, seed: int, topics: list[TopicConfig],
                       **options: object) -> tuple[RunResult, RunResult]:
    """The same frames through the fast path and through the processor only: ``(fast, slow)``."""
    results = []
    for name, fast in (("fast", True), ("slow", False)):
        root = tmp_path / name
        result = await run_broker(root, frames, fast=fast, seed=seed, topics=topics, **dict(options))
        result.files = store_files(root)
        results.append(result)
    return results[0], results[1]


def send_frame(code: int, fields: dict[str, object], body: bytes | None, *, serialize_type: int,
               oneway: bool = False) -> bytes:
    request = create_request(code, {key: str(value) for key, value in fields.items() if value is not None}, body,
                             serialize_type=serialize_type)
    if oneway:
        request.flag |= codec.FLAG_ONEWAY
    return codec.encode_command(request)


def batch_body(rng: random.Random, unique: codec.UniqueIdGenerator) -> bytes:
    """A SEND_BATCH_MESSAGE body of 1-12 items, each with its own unique key and maybe tags and keys."""
    items = []
    for _ in range(rng.randrange(1, 13)):
        properties = {"UNIQ_KEY": unique.next_id()}
        if rng.random() < 0.5:
            properties["TAGS"] = rng.choice(["TagA", "TagB"])
        if rng.random() < 0.5:
            properties["KEYS"] = " ".join(f"key{rng.randrange(50)}" for _ in range(rng.randrange(1, 3)))
        items.append((rng.choice([0, 1]), os.urandom(rng.choice([0, 10, 300, 1024])), properties))
    return codec.encode_batch(items)


def mixed_sends(rng: random.Random, count: int, topics: list[str]) -> list[bytes]:
    """``count`` send frames of every kind the fast path takes or declines: plain sends of both codes and both
    serializations, with and without WAIT, TAGS, KEYS, a cluster; batches (SEND_BATCH_MESSAGE, or V2 with
    the batch flag); and then delayed, transactional, retry, unknown-topic, bad-queue, oversized, bad-header,
    malformed-batch and oneway ones."""
    unique = codec.UniqueIdGenerator(b"\x7f\x00\x00\x01")
    frames = []
    for number in range(count):
        kind = rng.random()
        topic = rng.choice(topics)
        properties: dict[str, str] = {"UNIQ_KEY": unique.next_id()}
        if rng.random() < 0.8:
            properties["WAIT"] = rng.choice(["true", "false"])
        if rng.random() < 0.6:
            properties["TAGS"] = rng.choice(["TagA", "TagB", "a||b", "Ünïcode"])
        if rng.random() < 0.5:
            properties["KEYS"] = " ".join(f"key{rng.randrange(50)}" for _ in range(rng.randrange(1, 4)))
        if rng.random() < 0.05:
            properties["CLUSTER"] = "SomeOtherCluster"
        queue_id: int = rng.choice([-1, -1, 0, 1, 2, 3, 7])
        sys_flag = rng.choice([0, 0, 0, 1, 2])
        body = os.urandom(rng.choice([0, 1, 100, 1024, 4000]))
        code = rng.choice(FAST_CODES[:2])
        oneway = False
        batch = False
        if kind < 0.04:
            properties["DELAY"] = str(rng.randrange(0, 4))
        elif kind < 0.08:
            properties["TRAN_MSG"] = "true"
            sys_flag = 4
        elif kind < 0.11:
            topic = "%RETRY%group" + str(rng.randrange(2))
            queue_id = 0
        elif kind < 0.13:
            topic = "NotCreated" + str(rng.randrange(3))
        elif kind < 0.15:
            queue_id = 99
        elif kind < 0.17:
            body = os.urandom(20 * 1024)
        elif kind < 0.19:
            topic = "bad topic!"
        elif kind < 0.21:
            oneway = True
        elif kind < 0.45:
            batch = True
            # Mostly SEND_BATCH_MESSAGE; a V2 send with the batch flag takes the same path.
            code = rng.choice([RequestCode.SEND_BATCH_MESSAGE] * 2 + [RequestCode.SEND_MESSAGE_V2])
            body = batch_body(rng, unique)
            properties.pop("UNIQ_KEY")
        elif kind < 0.47:
            queue_id = "not a number"  # type: ignore[assignment]
        elif kind < 0.49:
            properties["TRAN_MSG"] = "false"
        elif kind < 0.51:
            batch = True
            code = RequestCode.SEND_BATCH_MESSAGE
            too_large = codec.encode_batch([(0, b"x" * 9000, {})] * 3)
            body = rng.choice([b"", b"\x00\x00\x00\x30 a truncated item", too_large])
        fields: dict[str, object]
        born = 1_690_000_000_000 + number
        if code != RequestCode.SEND_MESSAGE:
            fields = {"a": "pg", "b": topic, "c": "TBW102", "d": 4, "e": queue_id, "f": sys_flag, "g": born,
                      "h": rng.choice([0, 1]), "i": codec.properties_to_string(properties),
                      "j": rng.choice([None, 0, 1]), "k": "false", "m": "true" if batch else "false"}
        else:
            fields = {"producerGroup": "pg", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": 4,
                      "queueId": queue_id, "sysFlag": sys_flag, "bornTimestamp": born, "flag": 0,
                      "properties": codec.properties_to_string(properties), "reconsumeTimes": 0,
                      "unitMode": "false", "batch": "true" if batch else "false"}
        serialize_type = rng.choice([codec.SERIALIZE_JSON, codec.SERIALIZE_ROCKETMQ])
        frames.append(send_frame(code, fields, body, serialize_type=serialize_type, oneway=oneway))
    return frames
