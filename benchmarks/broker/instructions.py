"""Instructions per message of our broker's send path, counted by callgrind on a fixed in-process workload.

    .venv/bin/python benchmarks/broker/instructions.py [--python PY ...] [--modes single,batch]
                                                       [--counts 1000,3000]

The machine's load moves the capacity benchmark's CPU figures by tens of percent; an instruction count does
not move with it. For each interpreter given (a build of this repository: ``.venv/bin/python`` of a checkout,
with that checkout's package installed in it; by default this one), the workload below runs under
``valgrind --tool=callgrind`` twice, with two message counts. Callgrind counts only inside the send fast
path's ``answer`` (everything a send costs from its decoded request to its encoded answer: the checks, the
records, the store's write path, the notices; not the frame decoding, nor the store's threads, whose work
follows the wall clock), and the difference of the two counts divided by the difference of the messages is
what one message costs, the first puts' file creation excluded. The compiled modules must keep their symbols
for callgrind to find ``answer``: build with ``ROCKETMQ_PY_KEEP_SYMBOLS=1 pip install -e .``. Prints one
JSON object.

The workload (``--workload MODE COUNT``): a broker in this process (no sockets, no name server; its store on
/dev/shm, ASYNC_FLUSH, 64 MiB CommitLog files) is fed the capacity benchmark's frames (harness/pipelined.py:
SEND_MESSAGE_V2 of 1 KiB, or SEND_BATCH_MESSAGE of 32 such messages, over 8 queues) through one connection,
a few frames per read as a socket would deliver them; every answer is written to a transport that drops it.
It uses only the package's public names, so that it runs on older builds too.
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "compat-tests"))

QUEUES = 8
BATCH = 32
SIZE = 1024
FRAMES_PER_READ = 8
TOPIC = "Instructions"


class _DroppingTransport:
    """An asyncio transport that drops what is written (the answers)."""

    def write(self, data: bytes) -> None:
        pass

    def writelines(self, buffers: list[bytes]) -> None:
        pass

    def is_closing(self) -> bool:
        return False

    def get_extra_info(self, name: str, default: object = None) -> object:
        return ("10.1.2.3", 40404) if name in ("peername", "sockname") else default

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


async def run_workload(mode: str, messages: int) -> None:
    from harness.pipelined import send_frames
    from rocketmq_py.broker import BrokerConfig, BrokerController
    from rocketmq_py.common.topic_config import TopicConfig
    from rocketmq_py.remoting.protocol import RemotingConnection
    from rocketmq_py.store import MessageStoreConfig

    batch = BATCH if mode == "batch" else 1
    root = Path(tempfile.mkdtemp(prefix="broker-instructions-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None))
    config = BrokerConfig(broker_name="instructions", namesrv_addr="127.0.0.1:1", listen_port=10911,
                          bind_address="127.0.0.1", broker_ip1="127.0.0.1", fast_channel_enable=False,
                          wait_time_mills_in_send_queue=60_000)
    broker = BrokerController(config, MessageStoreConfig(store_path_root_dir=str(root),
                                                         mapped_file_size_commit_log=64 * 1024 * 1024))
    broker.store.load()
    broker.store.start()
    # Long polling's listener as the broker registers it (builds before the per-put listeners had on_arrival).
    hold = broker.hold_service
    broker.store.add_arrival_listener(getattr(hold, "on_arrivals", None) or hold.on_arrival)
    try:
        broker.topics.update(TopicConfig(topic_name=TOPIC, read_queue_nums=QUEUES, write_queue_nums=QUEUES))
        frames = send_frames(TOPIC, SIZE, batch, QUEUES)
        table = broker.server.processors
        connection = RemotingConnection(table, pause_reading_when_write_blocked=True)
        connection.connection_made(_DroppingTransport())  # type: ignore[arg-type]
        # Without the cyclic collector: its runs land wherever the allocations of everything else put them,
        # inside a send in one run and outside in the next, and one run costs as much as hundreds of sends.
        gc.disable()
        sent = 0
        while sent < messages:
            reads = [frames[(sent // batch + i) % len(frames)] for i in range(FRAMES_PER_READ)]
            connection.data_received(b"".join(reads))
            sent += FRAMES_PER_READ * batch
            await asyncio.sleep(0)
        for lane in table.lanes:
            await lane.drain(60)
        stored = sum(broker.store.get_max_offset_in_queue(TOPIC, queue_id) for queue_id in range(QUEUES))
        if stored != sent:
            raise RuntimeError(f"{sent} messages sent, {stored} stored: the workload did not run as meant")
    finally:
        broker.store.shutdown()
        shutil.rmtree(root, ignore_errors=True)


_TOTALS = re.compile(rb"^(?:summary|totals):\s*(\d+)", re.M)


#: The compiled send fast path's ``SendFastPath.answer`` (Cython's name for its Python wrapper).
ANSWER = "*SendFastPath_3answer"


def count_instructions(python: str, mode: str, messages: int) -> int:
    """Instructions (Ir) spent inside the fast path's ``answer`` in one workload run under callgrind."""
    with tempfile.TemporaryDirectory(prefix="callgrind-") as work:
        out = Path(work) / "callgrind.out"
        subprocess.run(["valgrind", "--tool=callgrind", f"--toggle-collect={ANSWER}", f"--callgrind-out-file={out}",
                        python, str(Path(__file__)), "--workload", mode, str(messages)], check=True,
                       capture_output=True, env=dict(os.environ, PYTHONMALLOC="malloc", PYTHONHASHSEED="0"))
        found = _TOTALS.search(out.read_bytes())
        if found is None or int(found.group(1)) == 0:
            raise RuntimeError(f"callgrind counted nothing in {ANSWER} (a build without symbols? see the docstring)")
        return int(found.group(1))


def implementation_of(python: str) -> str:
    done = subprocess.run([python, "-c", "from rocketmq_py.broker import send_fast; print(send_fast.IMPLEMENTATION)"],
                          capture_output=True, text=True, check=True)
    return done.stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", action="append", help="an interpreter with a build installed (repeatable)")
    parser.add_argument("--modes", default="single,batch")
    parser.add_argument("--counts", default="1024,3072", help="the two message counts whose totals are compared")
    parser.add_argument("--workload", nargs=2, metavar=("MODE", "COUNT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.workload:
        asyncio.run(run_workload(args.workload[0], int(args.workload[1])))
        return 0
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is needed (apt-get install valgrind)")
    low, high = (int(count) for count in args.counts.split(","))
    results = []
    for python in args.python or [sys.executable]:
        row: dict[str, object] = {"python": python, "send_fast": implementation_of(python)}
        for mode in args.modes.split(","):
            started = time.monotonic()
            totals = [count_instructions(python, mode, count) for count in (low, high)]
            row[f"{mode}_instructions_per_message"] = round((totals[1] - totals[0]) / (high - low))
            row[f"{mode}_totals"] = totals
            print(f"[instructions] {python} {mode}: {row[f'{mode}_instructions_per_message']} "
                  f"({time.monotonic() - started:.0f} s)", file=sys.stderr, flush=True)
        results.append(row)
    print(json.dumps({"benchmark": "broker send path: callgrind instructions per message, in process",
                      "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": platform.platform(),
                      "counts": [low, high], "message_size": SIZE, "batch": BATCH, "queues": QUEUES,
                      "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
