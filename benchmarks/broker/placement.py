"""The broker process's part of a send served by a front, in process: ``SendPlacement.place``, in µs CPU per send.

    .venv/bin/python benchmarks/broker/placement.py [--places 2000] [--sends 1,8,32,64] [--size 1024] [--repeats 5]
    .venv/bin/python benchmarks/broker/placement.py --batch 32     # each send a SEND_BATCH_MESSAGE of 32

No sockets and no front processes: a broker, not started, with its store in a temporary directory (under
``/dev/shm`` when there is one). The PLACE messages are made by the front's own code (``FrontSends.take`` and
``flush``) from SEND_MESSAGE_V2 frames of ``--size`` bytes (or batches of ``--batch``), one per queue of an
8-queue topic in turn, ``k`` sends per PLACE for each ``k`` of ``--sends``; the broker's ``SendPlacement.place``
then places ``--places`` of them. The figure is the CPU time of the calling thread (``main_us_per_send``) and of
the whole process (``process_us_per_send``, with the store's flush thread) over the sends placed; each ``k`` runs
``--repeats`` times and the median is given. One JSON object is printed. Compare two builds by running this file
with each one's Python (``--python``-style: ``other/.venv/bin/python benchmarks/broker/placement.py``).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "compat-tests"))

from harness.pipelined import send_frames  # noqa: E402
from rocketmq_py.broker import BrokerConfig, BrokerController  # noqa: E402
from rocketmq_py.broker.front_sends import FrontSends, SendPlacement  # noqa: E402
from rocketmq_py.common.topic_config import TopicConfig  # noqa: E402
from rocketmq_py.store import MessageStoreConfig  # noqa: E402

TOPIC = "Placement"
QUEUES = 8


class _Client:
    conn = 1
    remote_address = "127.0.0.1:40404"

    def write(self, data: bytes) -> None:
        pass

    def relay(self, frame: bytes) -> None:
        raise RuntimeError("the front declined a send the benchmark makes: it would not measure placement")


async def _place_messages(placement: SendPlacement, frames: list[bytes], sends: int) -> list[bytes]:
    """One PLACE message of ``sends`` sends per queue's start, as a front would send them."""
    messages: list[bytes] = []
    front = FrontSends(lambda parts: messages.append(b"".join(parts)), json.loads(placement.settings()))
    client = _Client()
    for first in range(QUEUES):
        for index in range(first, first + sends):
            front.take_frames(client, frames[index % len(frames)], 0)
        front.flush()
    return messages


def _measure(placement: SendPlacement, messages: list[bytes], places: int) -> tuple[float, float]:
    main, process = time.thread_time(), time.process_time()
    place = placement.place
    for number in range(places):
        placed = place(messages[number % len(messages)])
        if not placed[4]:
            raise RuntimeError("the broker process refused a buffer")
    return time.thread_time() - main, time.process_time() - process


def run(root: Path, places: int, sends_list: list[int], size: int, batch: int, repeats: int) -> dict[str, object]:
    config = BrokerConfig(broker_name="placement", namesrv_addr="127.0.0.1:1", listen_port=10911,
                          bind_address="127.0.0.1", broker_ip1="127.0.0.1", fast_channel_enable=False,
                          broker_fast_failure_enable=False)
    broker = BrokerController(config, MessageStoreConfig(store_path_root_dir=str(root)))
    broker.store.load()
    broker.store.start()
    try:
        broker.topics.update(TopicConfig(topic_name=TOPIC, read_queue_nums=QUEUES, write_queue_nums=QUEUES))
        placement = SendPlacement(broker)
        frames = send_frames(TOPIC, size, batch, QUEUES)
        results = {}
        for sends in sends_list:
            messages = asyncio.run(_place_messages(placement, frames, sends))
            _measure(placement, messages, min(places, 200))  # warm: the first files' pages, the caches
            runs = [_measure(placement, messages, places) for _ in range(repeats)]
            placed = places * sends
            results[str(sends)] = {
                "main_us_per_send": round(statistics.median(main for main, _ in runs) / placed * 1e6, 3),
                "process_us_per_send": round(statistics.median(process for _, process in runs) / placed * 1e6, 3),
                "main_us_per_send_runs": [round(main / placed * 1e6, 3) for main, _ in runs],
            }
        return {"places": places, "size": size, "batch": batch, "repeats": repeats,
                "compiled": os.environ.get("ROCKETMQ_PY_NO_EXTENSIONS") != "1",
                "loadavg": os.getloadavg(), "sends_per_place": results}
    finally:
        broker.store.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--places", type=int, default=2000, help="PLACE messages per run")
    parser.add_argument("--sends", default="1,8,32,64", help="sends per PLACE message, comma-separated")
    parser.add_argument("--size", type=int, default=1024, help="message body bytes")
    parser.add_argument("--batch", type=int, default=1, help="messages per send (1: single sends)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    shm = Path("/dev/shm")
    root = Path(tempfile.mkdtemp(prefix="placement-", dir=shm if shm.is_dir() else None))
    try:
        result = run(root, args.places, [int(k) for k in args.sends.split(",")], args.size, args.batch,
                     args.repeats)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
