"""A front's own CPU per send, in process: from a client's bytes to its answers, in µs of the thread's CPU.

    .venv/bin/python benchmarks/broker/front_cost.py [--rounds 3000] [--clients 2] [--per-read 16]
                                                     [--size 1024] [--batch 1] [--repeats 5] [--cprofile]

No sockets and no broker process: one front's channel and ``--clients`` client connections, on transports that
only count what is written to them. Each round, every client's connection is handed ``--per-read`` SEND_MESSAGE_V2
frames of ``--size`` bytes (capacity.py's frames, or SEND_BATCH_MESSAGE bodies of ``--batch``) in one read, as
the socket would give them; the event loop runs its pass (the front builds the sends and writes its PLACE
messages); a stand-in for the broker process answers each PLACE message with a PLACED message, read by the
channel as it reads the socket; and the loop runs again (the front writes its answers). So the figure holds the
front's whole path but the system calls: cutting the frames, the fast path's build, the PLACE message, the
channel's reading of PLACED, the answers, and asyncio's callbacks.

``front_us_per_send`` is the thread's CPU over the rounds, less the stand-in's own (timed apart), per send; each
repeat gives one, and the median is printed with all of them. ``--cprofile`` prints the ``--top`` functions by own
time instead (cProfile's cost per Python call inflates Python functions against C ones: read the order).
Compare two builds by running this file with each one's Python (``other/.venv/bin/python``); the machine's load
moves the figure little, as it is CPU time, but a loaded machine's caches are colder.
"""
from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import os
import pstats
import statistics
import struct
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "compat-tests"))

from harness.pipelined import send_frames  # noqa: E402
from rocketmq_py.broker.front_sends import _PLACE_HEAD, _PLACED_HEAD  # noqa: E402  (the PLACE/PLACED heads)
from rocketmq_py.broker.place_messages import placed_payload, read_sends  # noqa: E402
from rocketmq_py.common.topic_config import TopicConfig  # noqa: E402
from rocketmq_py.remoting import front  # noqa: E402
from rocketmq_py.remoting.allocator import keep_freed_blocks  # noqa: E402
from rocketmq_py.remoting.relay import Relay, control  # noqa: E402

TOPIC = "FrontCost"
QUEUES = 8
_HEAD = struct.Struct(">BII")  # the channel's message head (rocketmq_py/remoting/relay.py)


class _Sink(asyncio.Transport):
    """A transport that keeps (channel) or counts (client) what is written to it."""

    def __init__(self, keep: bool) -> None:
        super().__init__()
        self.keep = keep
        self.kept: list[bytes] = []
        self.written = 0

    def write(self, data: Any) -> None:
        self.written += len(data)
        if self.keep:
            self.kept.append(bytes(data))

    def writelines(self, list_of_data: Any) -> None:
        for data in list_of_data:
            self.write(data)

    def is_closing(self) -> bool:
        return False

    def is_reading(self) -> bool:
        return True

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 40404), "sockname": ("127.0.0.1", 10911)}.get(name, default)


def _settings() -> dict[str, Any]:
    return {
        "module": "rocketmq_py.broker.front_sends", "version": 1,
        "topics": {TOPIC: TopicConfig(TOPIC, QUEUES, QUEUES).to_json()},
        "startAcceptSendRequestTimeStamp": 0, "brokerPermission": 6, "brokerClusterName": "DefaultCluster",
        "storeHost": "127.0.0.1:10911", "regionFields": {}, "waits": False, "refusing": False,
        "maxMessageSize": 4 * 1024 * 1024, "maxRecordsLength": 1024 * 1024 * 1024,
    }


class _Placer:
    """The broker process's part, as little of it as answers: each PLACE message's PLACED, at made-up offsets."""

    def __init__(self) -> None:
        self.offset = 0

    def answer(self, written: list[bytes]) -> bytes:
        out = []
        stream = b"".join(written)
        position = 0
        while position < len(stream):
            kind, _, length = _HEAD.unpack_from(stream, position)
            payload = stream[position + _HEAD.size:position + _HEAD.size + length]
            position += _HEAD.size + length
            if kind != Relay.PLACE:
                continue
            number, _, sends, _ = _PLACE_HEAD.unpack_from(payload, 0)
            _, counts, _ = read_sends(payload, _PLACE_HEAD.size, sends, {})
            records = sum(counts)
            offsets = list(range(self.offset, self.offset + records * 1200, 1200))
            self.offset += records * 1200
            body = placed_payload(_PLACED_HEAD.pack(number, 1), counts, offsets, list(range(records)))
            out.append(_HEAD.pack(Relay.PLACED, 0, len(body)) + body)
        return b"".join(out)


async def _run(args: argparse.Namespace, profile: cProfile.Profile | None) -> float:
    channel = front._FrontChannel()
    channel_sink = _Sink(keep=True)
    channel.connection_made(channel_sink)
    channel.on_control(Relay.SERVE_SETTINGS, 0, control(_settings()))
    clients = []
    for _ in range(args.clients):
        client = channel.new_client()
        client.connection_made(_Sink(keep=False))
        clients.append(client)
    frames = send_frames(TOPIC, args.size, args.batch, QUEUES)
    reads = [b"".join(frames[(i + k) % QUEUES] for k in range(args.per_read)) for i in range(QUEUES)]
    placer = _Placer()

    async def round_(number: int) -> float:
        read = reads[number % QUEUES]
        for client in clients:
            client.data_received(read)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        placer_started = time.thread_time_ns()
        written, channel_sink.kept = channel_sink.kept, []
        placed = placer.answer(written)
        placer_ns = time.thread_time_ns() - placer_started
        buffer = channel.get_buffer(len(placed))
        buffer[:len(placed)] = placed
        channel.buffer_updated(len(placed))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        return placer_ns

    for number in range(min(200, args.rounds)):  # warm-up: the fast path's caches, the allocator
        await round_(number)
    if profile is not None:
        profile.enable()
    started = time.thread_time_ns()
    placer_ns = 0
    for number in range(args.rounds):
        placer_ns += await round_(number)
    spent_ns = time.thread_time_ns() - started - placer_ns
    if profile is not None:
        profile.disable()
    answered = sum(client.transport.written for client in clients)  # type: ignore[union-attr]
    if answered == 0:
        raise SystemExit("the front answered nothing: the benchmark measures nothing")
    return spent_ns / 1000 / (args.rounds * args.clients * args.per_read)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3000)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--per-read", type=int, default=16, help="send frames per client read")
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=1, help="messages per send (a SEND_BATCH_MESSAGE above 1)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cprofile", action="store_true", help="print a cProfile of one repeat instead")
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    from rocketmq_py.broker import send_fast
    keep_freed_blocks()  # as the front process does (rocketmq_py/remoting/front.py)
    from rocketmq_py.remoting.loop import new_event_loop
    loop = new_event_loop()
    if args.cprofile:
        profile = cProfile.Profile()
        loop.run_until_complete(_run(args, profile))
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(args.top)
        print(text.getvalue())
        return 0
    figures = [loop.run_until_complete(_run(args, None)) for _ in range(args.repeats)]
    print(json.dumps({
        "implementation": send_fast.IMPLEMENTATION, "loop": type(loop).__module__,
        "clients": args.clients, "per_read": args.per_read, "size": args.size, "batch": args.batch,
        "front_us_per_send": round(statistics.median(figures), 3),
        "repeats_us_per_send": [round(figure, 3) for figure in figures],
        "loadavg": os.getloadavg(),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
