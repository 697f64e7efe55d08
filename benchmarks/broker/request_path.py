"""The broker's request path in process, counted in CPU instructions: single sends, batch sends and pulls.

    .venv/bin/python benchmarks/broker/request_path.py --callgrind [--sends 2000] [--batches 100] [--pulls 500]
    .venv/bin/python benchmarks/broker/request_path.py --sends 2000 --batches 100 --pulls 500   # one run, timed

No sockets and no name server: a broker, not started, with its store in a temporary directory (under
``/dev/shm`` when there is one), and one server-side connection made as the broker's main server makes one
for an accepted socket. The connection is fed SEND_MESSAGE_V2 frames of ``--size`` bytes (one per queue of
an 8-queue topic, repeated, as ``capacity.py``'s sender does), then SEND_BATCH_MESSAGE frames of 32, then
PULL_MESSAGE frames of 32, 32 frames per read as a pipelined client's arrive; its answers go into a
transport that counts them. Each request takes a real one's path: decoding, the send or pull lane, the fast
path, the store, the answer's write.

``--callgrind`` runs the workload under ``valgrind --tool=callgrind`` four times (the counts given, and each
count doubled in turn) and prints the instructions of one single send, one batch message and one pull: the
difference of two runs' totals over the difference of their counts, so start-up and imports cancel out.
Only the main thread is counted (the store's flush thread wakes on a clock). An instruction count does not
move with the machine's load, so two builds can be compared on a busy machine; a timed run cannot. Repeats
differ by a few hundred instructions a request (where a garbage collection falls). Give both builds the same
bytecode caches (``python -m compileall rocketmq_py``): a tree without them, under PYTHONDONTWRITEBYTECODE,
compiles every module in every run, and in such a comparison a pull came out ~1 % dearer for no other cause.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "compat-tests"))

from harness.pipelined import send_frames  # noqa: E402

from pipelined_sender import pull_frames  # noqa: E402
from rocketmq_py import codec  # noqa: E402
from rocketmq_py.broker import BrokerConfig, BrokerController, send_fast  # noqa: E402
from rocketmq_py.common.topic_config import TopicConfig  # noqa: E402
from rocketmq_py.remoting import RemotingConnection  # noqa: E402
from rocketmq_py.store import MessageStoreConfig  # noqa: E402

TOPIC = "RequestPath"
QUEUES = 8
BATCH = 32
FRAMES_PER_READ = 32
#: Every pull asks for ``BATCH`` messages from an offset below this one less ``BATCH`` in its queue.
PULLED_BELOW = 2 * BATCH


class CountingTransport:
    """An asyncio transport that counts what is written and keeps nothing."""

    def __init__(self) -> None:
        self.written = 0

    def write(self, data: bytes) -> None:
        self.written += len(data)

    def writelines(self, buffers: list[bytes]) -> None:
        for data in buffers:
            self.written += len(data)

    def is_closing(self) -> bool:
        return False

    def get_extra_info(self, name: str, default: object = None) -> object:
        return ("127.0.0.1", 40404) if name in ("peername", "sockname") else default

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def close(self) -> None:
        pass


async def _feed(broker: BrokerController, connection: RemotingConnection, frames: list[bytes], count: int) -> None:
    """Feed ``count`` frames, cycling through ``frames``, and wait until every one is answered."""
    lanes = broker.server.processors.lanes
    for start in range(0, count, FRAMES_PER_READ):
        chunk = [frames[index % len(frames)] for index in range(start, min(start + FRAMES_PER_READ, count))]
        connection.data_received(b"".join(chunk))
        while any(lane.size for lane in lanes):
            await asyncio.sleep(0)
    for lane in lanes:
        assert await lane.drain(60)
    for _ in range(3):  # the answers' writes, at the end of the loop's pass
        await asyncio.sleep(0)


def server_connection(broker: BrokerController) -> RemotingConnection:
    """A connection served as the broker's main server serves an accepted socket."""
    return RemotingConnection(broker.server.dispatcher.serve, pause_reading_when_write_blocked=True)


async def workload(root: Path, sends: int, batches: int, pulls: int, size: int) -> dict[str, object]:
    # The broker's defaults but for BrokerFastFailure: its sweep of the lanes runs every 10 ms of wall-clock time,
    # so its share of the instructions would grow with the machine's load (and a run under callgrind is ~50
    # times slower); and a send it refused would not take the path measured here.
    config = BrokerConfig(broker_name="request-path", namesrv_addr="127.0.0.1:1", listen_port=10911,
                          bind_address="127.0.0.1", broker_ip1="127.0.0.1", fast_channel_enable=False,
                          broker_fast_failure_enable=False)
    broker = BrokerController(config, MessageStoreConfig(store_path_root_dir=str(root)))
    broker.store.load()
    broker.store.start()
    try:
        broker.topics.update(TopicConfig(topic_name=TOPIC, read_queue_nums=QUEUES, write_queue_nums=QUEUES))
        connection = server_connection(broker)
        transport = CountingTransport()
        connection.connection_made(transport)  # type: ignore[arg-type]
        timings = {}
        for name, frames, count in (
            ("single", send_frames(TOPIC, size, 1, QUEUES), sends),
            ("batch", send_frames(TOPIC, size, BATCH, QUEUES), batches),
            # The pulls read what the single sends stored, the same frames whatever the counts.
            ("pull", pull_frames(TOPIC, QUEUES, PULLED_BELOW), pulls),
        ):
            started = time.perf_counter()
            await _feed(broker, connection, frames, count)
            timings[name] = time.perf_counter() - started
        stored = sum(broker.store.get_max_offset_in_queue(TOPIC, queue) for queue in range(QUEUES))
        if stored != sends + batches * BATCH:
            raise RuntimeError(f"{stored} messages stored, not {sends + batches * BATCH}: some sends were refused")
        return {"sends": sends, "batches": batches, "pulls": pulls, "size": size, "answer_bytes": transport.written,
                "seconds": timings}
    finally:
        broker.store.shutdown()


def _store_parent() -> str | None:
    return "/dev/shm" if os.path.isdir("/dev/shm") else None


def run_once(sends: int, batches: int, pulls: int, size: int) -> dict[str, object]:
    root = Path(tempfile.mkdtemp(prefix="request-path-", dir=_store_parent()))
    try:
        return asyncio.run(workload(root / "store", sends, batches, pulls, size))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _main_thread_instructions(out_dir: Path) -> int:
    """The instruction total of the main thread's callgrind file (``--separate-threads=yes`` names it ``-01``)."""
    (main,) = out_dir.glob("callgrind.out-01")
    for line in main.read_text(errors="replace").splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise RuntimeError(f"no instruction total in {main}")


def callgrind_instructions(sends: int, batches: int, pulls: int, size: int) -> int:
    with tempfile.TemporaryDirectory(prefix="request-path-cg-") as out:
        command = ["valgrind", "--tool=callgrind", "--separate-threads=yes",
                   f"--callgrind-out-file={out}/callgrind.out", sys.executable, __file__,
                   "--sends", str(sends), "--batches", str(batches), "--pulls", str(pulls), "--size", str(size)]
        # A fixed hash seed: the order of sets and dicts of strings, and so the work, is the same in every run.
        env = dict(os.environ, PYTHONHASHSEED="0")
        subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return _main_thread_instructions(Path(out))


def callgrind_report(sends: int, batches: int, pulls: int, size: int) -> dict[str, object]:
    base = callgrind_instructions(sends, batches, pulls, size)
    more_sends = callgrind_instructions(2 * sends, batches, pulls, size)
    more_batches = callgrind_instructions(sends, 2 * batches, pulls, size)
    more_pulls = callgrind_instructions(sends, batches, 2 * pulls, size)
    return {
        "python": sys.version.split()[0],
        "codec": codec.IMPLEMENTATION,
        "send_fast_path": send_fast.IMPLEMENTATION,
        "runs": {"base": base, "sends_doubled": more_sends, "batches_doubled": more_batches,
                 "pulls_doubled": more_pulls},
        "instructions_per_single_send": round((more_sends - base) / sends),
        "instructions_per_batch_message": round((more_batches - base) / (batches * BATCH)),
        "instructions_per_pull_of_32": round((more_pulls - base) / pulls),
        "counts": {"sends": sends, "batches": batches, "pulls": pulls, "size": size},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sends", type=int, default=2000, help="single sends")
    parser.add_argument("--batches", type=int, default=100, help="batch sends of 32 messages")
    parser.add_argument("--pulls", type=int, default=500, help="pulls of up to 32 messages")
    parser.add_argument("--size", type=int, default=1024, help="bytes of each message's body")
    parser.add_argument("--callgrind", action="store_true", help="count instructions under valgrind (4 runs)")
    args = parser.parse_args()
    if args.sends < QUEUES * PULLED_BELOW:
        parser.error(f"--sends must be at least {QUEUES * PULLED_BELOW}, so that every pull finds {BATCH} messages")
    if args.callgrind:
        if shutil.which("valgrind") is None:
            print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
            return 1
        print(json.dumps(callgrind_report(args.sends, args.batches, args.pulls, args.size), indent=2))
    else:
        print(json.dumps(run_once(args.sends, args.batches, args.pulls, args.size), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
