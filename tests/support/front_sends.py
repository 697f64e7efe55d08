"""Differential runs of sends and pulls served by front processes: the same frames to a broker with fronts and
to one without, on one fixed store clock, from one client address, to one store host; what each stored and
answered.

Each run is a real broker on loopback (its fronts are processes of their own), fed by one raw socket that sends
the frames one at a time and waits for each answer, so both brokers see the same requests in the same order.
The two brokers listen on the same port of two loopback addresses and register the same ``brokerIP1``, so
their records carry the same store host; the client binds the same local port for both, so the same born
host.
"""
from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from rocketmq_py import codec
from rocketmq_py.broker import BrokerConfig, BrokerController
from rocketmq_py.broker.processors import pull
from rocketmq_py.broker.front_sends import FrontSends
from rocketmq_py.common.codes import RequestCode
from rocketmq_py.common.headers.pull import FLAG_COMMIT_OFFSET, FLAG_SUBSCRIPTION
from rocketmq_py.common.topic_config import TopicConfig
from rocketmq_py.remoting import create_request
from rocketmq_py.remoting.front_pool import FrontTransport
from rocketmq_py.store import MessageStoreConfig

from .ports import free_broker_port, free_port
from .send_fast import SMALL_STORE, answers_by_opaque, send_frame, store_files

STORE_HOST_IP = "10.9.8.7"


@dataclass
class FrontRun:
    answers: dict[int, bytes]
    files: dict[str, bytes]
    #: Sends whose records a front built and the broker process placed.
    placed_by_fronts: int
    #: Answers whose body a front read from the CommitLog's files (pulls that found records).
    regions: int = 0


def pulls(rng: random.Random, count: int, topics: list[TopicConfig]) -> list[bytes]:
    """``count`` PULL_MESSAGE frames over the queues of ``topics``, at offsets in and out of what a few hundred
    sends stored, for up to 64 messages, all or by tags, in both serializations, some committing an offset."""
    frames = []
    for _ in range(count):
        topic = rng.choice(topics)
        sys_flag = FLAG_SUBSCRIPTION | (FLAG_COMMIT_OFFSET if rng.random() < 0.3 else 0)
        fields = {"consumerGroup": f"pg{rng.randrange(2)}", "topic": topic.topic_name,
                  "queueId": rng.randrange(topic.read_queue_nums), "queueOffset": rng.choice([0, 0, 3, 10, 40, 500]),
                  "maxMsgNums": rng.choice([1, 8, 32, 64]), "sysFlag": sys_flag, "commitOffset": rng.randrange(5),
                  "suspendTimeoutMillis": 0, "subscription": rng.choice(["*", "*", "TagA", "TagA || TagB"]),
                  "subVersion": 0, "expressionType": "TAG"}
        frames.append(send_frame(RequestCode.PULL_MESSAGE, fields, None,
                                 serialize_type=rng.choice([codec.SERIALIZE_JSON, codec.SERIALIZE_ROCKETMQ])))
    return frames


def fixed_queues(frames: list[bytes]) -> list[bytes]:
    """``frames`` with every ``queueId`` of -1 made 0..3: a front draws such a queue from its own process's
    random numbers, which the test cannot seed, and the queue a send lands in must be the same in both runs."""
    fixed = []
    for number, frame in enumerate(frames):
        (request,) = codec.FrameDecoder().feed(frame)
        fields = request.ext_fields or {}
        for name in ("queueId", "e"):
            if fields.get(name) == "-1":
                fields[name] = str(number % 4)
        fixed.append(codec.encode_command(request))
    return fixed


async def _read_frame(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readexactly(4)
    return head + await reader.readexactly(int.from_bytes(head, "big"))


async def run_broker(root: Path, frames: list[bytes], *, bind: str, port: int, client_port: int, workers: int,
                     topics: list[TopicConfig], **options: Any) -> FrontRun:
    """A broker on ``bind:port`` with ``workers`` fronts (0: none) fed ``frames`` one at a time."""
    store_options = {key: options.pop(key) for key in list(options) if hasattr(MessageStoreConfig, key)}
    # As in support.send_fast.run_broker: no decision here may go by the wall clock.
    options.setdefault("broker_fast_failure_enable", False)
    store_options.setdefault("sync_flush_timeout", 600_000)
    config = BrokerConfig(broker_name="front-diff", namesrv_addr="", listen_port=port, bind_address=bind,
                          broker_ip1=STORE_HOST_IP, fast_channel_enable=False, server_worker_processes=workers,
                          **options)
    store = MessageStoreConfig(store_path_root_dir=str(root), **{**SMALL_STORE, **store_options})
    broker = BrokerController(config, store)
    # The schedule thread re-puts delayed messages once they come due on the wall clock (level 1: a second),
    # wherever the run has got to: it does not run (see support.send_fast). The store makes it when it loads.
    load_store = broker.store.load

    def load_without_schedule() -> Any:
        loaded = load_store()
        broker.store.schedule_service = None
        return loaded

    broker.store.load = load_without_schedule  # type: ignore[method-assign]
    placed = 0
    placement = broker.server.front_service
    if placement is not None:
        place = placement.place

        def counting(payload: bytes) -> bytes:
            nonlocal placed
            answer = place(payload)
            if answer[4]:  # placed, not refused (the PLACED layout of rocketmq_py.broker.front_sends)
                placed += int.from_bytes(payload[4 + 4:4 + 4 + 2], "big")
            return answer

        placement.place = counting  # type: ignore[method-assign]
    for topic_config in topics:
        broker.topics.update(topic_config)
    regions = 0

    def counting_region(transport: FrontTransport, head: bytes, region: Any) -> None:
        nonlocal regions
        regions += 1
        write_region(transport, head, region)

    write_region = FrontTransport.write_region
    now_ms = pull.now_ms
    await broker.start()
    writer = None
    FrontTransport.write_region = counting_region  # type: ignore[method-assign]
    # A pull past a queue's end stores an offset-moved event, born now: on the store's fixed clock instead.
    pull.now_ms = lambda: 1_700_000_000_000
    try:
        ticks = itertools.count(1_700_000_000_000)
        broker.store.commit_log.clock = lambda: next(ticks)
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(("127.0.0.1", client_port))
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, (bind, port))
        reader, writer = await asyncio.open_connection(sock=sock)
        answers = bytearray()
        barrier = create_request(RequestCode.GET_MAX_OFFSET, {"topic": topics[0].topic_name, "queueId": "0"})
        for frame in frames:
            (request,) = codec.FrameDecoder().feed(frame)
            writer.write(frame)
            if request.is_oneway:
                # Nothing answers a oneway send: a request behind it is answered once it is stored.
                barrier.opaque = request.opaque
                writer.write(codec.encode_command(barrier))
            answers += await asyncio.wait_for(_read_frame(reader), 60)
        return FrontRun(answers_by_opaque(bytes(answers)), {}, placed, regions)
    finally:
        FrontTransport.write_region = write_region  # type: ignore[method-assign]
        pull.now_ms = now_ms
        if writer is not None:
            writer.close()
        await broker.shutdown()


async def differential(tmp_path: Path, frames: list[bytes], *, workers: int, topics: list[TopicConfig],
                       **options: Any) -> tuple[FrontRun, FrontRun]:
    """The same frames through a broker with ``workers`` fronts and one without: ``(fronts, alone)``."""
    port = free_broker_port()
    client_port = free_port()
    runs = []
    for name, bind, count in (("fronts", "127.0.0.1", workers), ("alone", "127.0.0.2", 0)):
        root = tmp_path / name
        run = await run_broker(root, frames, bind=bind, port=port, client_port=client_port, workers=count,
                               topics=topics, **dict(options))
        run.files = store_files(root)
        runs.append(run)
    return runs[0], runs[1]


@contextlib.contextmanager
def stored_broker(root: Path, topics: list[TopicConfig]) -> Iterator[BrokerController]:
    """A broker, not started, whose store runs (in ``root``, with the small files) on one fixed store time."""
    config = BrokerConfig(broker_name="front-place", namesrv_addr="", listen_port=10911, bind_address="127.0.0.1",
                          broker_ip1=STORE_HOST_IP, fast_channel_enable=False, broker_fast_failure_enable=False)
    broker = BrokerController(config, MessageStoreConfig(store_path_root_dir=str(root), **SMALL_STORE))
    broker.store.load()
    broker.store.schedule_service = None  # as in run_broker: nothing may go by the wall clock
    broker.store.start()
    try:
        broker.store.commit_log.clock = lambda: 1_700_000_000_000
        for topic_config in topics:
            broker.topics.update(topic_config)
        yield broker
    finally:
        broker.store.shutdown()


class PlaceClient:
    """A front's client that the placement tests feed: it keeps what the front relays and writes to it."""

    conn = 1
    remote_address = "127.0.0.1:40404"

    def __init__(self) -> None:
        self.relayed: list[bytes] = []
        self.written: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def relay(self, frames: bytes) -> None:
        self.relayed.append(frames)


def take(front: FrontSends, client: PlaceClient, frame: bytes) -> bool:
    """Whether ``front`` takes ``frame`` (one whole frame) to build it; False when it relays it."""
    relayed = len(client.relayed)
    assert front.take_frames(client, frame, 0) == len(frame), "a whole frame is consumed"
    return len(client.relayed) == relayed
