"""CPU per message of the push consumer's event loop thread (pulls, decoding, the process queue, the dispatch to the
consume threads), against a fake broker in another process rather than a real one.

The consumer is the one users run: ``AsyncPushConsumer`` on an event loop in a thread of its own, as
``PushConsumer`` runs it, with its default settings (20 consume threads, batches of one, pulls of 32, Java's
flow-control thresholds) and a listener that only counts. The broker is the fake of the hermetic consumer
tests (``tests/support/consumer_broker.py``) in a child process, preloaded with N messages of 1 KiB over 8
queues: it answers a pull at once with the stored records, so its own cost and a real broker's pace stay out
of the figures, while every step of the consumer's side is the real one (the request's encoding, the socket,
the frame and header decoding, the records' decoding, ``process_messages``, ``ProcessQueue.put_messages``, the
flow-control checks, the hand-over to the consume service).

Each run is a new consumer group reading all N from the first offset; the figures cover the time from the end
of ``start()`` to the N-th message. Prints one JSON object: per listener kind (``orderly``, ``concurrent``) and
run, ``loopCpuMicrosPerMessage`` (``time.thread_time()`` in the event loop thread), ``consumeCpuMicrosPerMessage``
(the consume threads' CPU clocks), the flow-control pauses, and their medians; with ``/proc/loadavg`` before and
after. Runs of the kinds alternate. ``--profile`` runs each kind once more under cProfile, enabled in the event
loop thread, and prints the functions that cost most to stderr (on Python 3.11 the profile covers that thread
alone; from 3.12 on cProfile sees every thread, the consume threads too).

Usage: ``python benchmarks/consumer/loop_cpu.py [--count N] [--runs R] [--listeners orderly,concurrent]
[--profile] [--probe]``

``--probe`` adds, per run, where the queues waited (``probe.py``: pull round trips, answers that found a queue
dry, the orderly tasks' start and dry times, the loop's lag, the threads' CPU and run-queue waits).
"""
from __future__ import annotations

import argparse
import asyncio
import cProfile
import itertools
import json
import multiprocessing
import os
import pstats
import statistics
import sys
import threading
import time
import uuid
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from support.consumer_broker import FakeBroker  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe import Probe  # noqa: E402

from rocketmq_py import codec  # noqa: E402
from rocketmq_py.client.consumer import AsyncPushConsumer, ConsumeConcurrentlyStatus, ConsumeOrderlyStatus  # noqa: E402
from rocketmq_py.remoting.loop import new_event_loop, uvloop_enabled  # noqa: E402

TOPIC = "LoopCpuTopic"
QUEUES = 8
TIMEOUT_S = 600.0
STATUS = {"orderly": ConsumeOrderlyStatus.SUCCESS, "concurrent": ConsumeConcurrentlyStatus.CONSUME_SUCCESS}


# --- the fake broker, in a child process ------------------------------------------------------------


def serve(conn: Connection, count: int, body_size: int) -> None:
    """The child process: a fake name server and broker holding ``count`` messages; sends the name server's
    address through ``conn`` and serves until ``conn`` is closed."""
    asyncio.run(_serve(conn, count, body_size))


async def _serve(conn: Connection, count: int, body_size: int) -> None:
    body = b"x" * body_size
    async with FakeBroker({TOPIC: QUEUES}) as broker:
        for index in range(count):
            broker.put(TOPIC, index % QUEUES, body, tags="Bench",
                       properties={"UNIQ_KEY": uuid.uuid4().hex.upper(), "WAIT": "true"})
        conn.send(broker.namesrv.address)
        try:
            await asyncio.get_running_loop().run_in_executor(None, conn.recv)
        except EOFError:
            pass


# --- the consumer, in this process -------------------------------------------------------------------


def _consume_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name.startswith("ConsumeMessageThread_")]


def _cpu_s(threads: list[threading.Thread]) -> dict[int, float]:
    """The CPU seconds of each thread so far, by ident (each thread's own CPU clock)."""
    spent = {}
    for thread in threads:
        assert thread.ident is not None
        try:
            spent[thread.ident] = time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
        except OSError:
            pass  # the thread ended meanwhile
    return spent


async def _consume_all(namesrv: str, count: int, kind: str, profile: cProfile.Profile | None,
                       probe: Probe | None) -> dict[str, Any]:
    """Runs on the consumer's event loop: consume ``count`` messages with a new group; the CPU it took."""
    loop = asyncio.get_running_loop()
    done = asyncio.Event()
    counter = itertools.count(1)
    status = STATUS[kind]

    probe_threads: dict[str, Any] = {}

    def listener(messages: list[Any], context: object) -> Any:
        for _ in messages:
            if next(counter) == count:
                if probe is not None:
                    probe_threads.update(probe.stop())
                loop.call_soon_threadsafe(done.set)
        return status

    consumer = AsyncPushConsumer(f"bench_loop_cpu_{uuid.uuid4().hex[:8]}", namesrv_addr=namesrv,
                                 consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe(TOPIC, "*")
    consumer.register_message_listener(listener, orderly=kind == "orderly")
    await consumer.start()
    try:
        threads = _consume_threads()
        consume_before = _cpu_s(threads)
        began = time.perf_counter()
        loop_began = time.thread_time()
        if profile is not None:
            profile.enable()
        await asyncio.wait_for(done.wait(), TIMEOUT_S)
        if profile is not None:
            profile.disable()
        loop_cpu_s = time.thread_time() - loop_began
        seconds = time.perf_counter() - began
        consume_after = _cpu_s(threads)
        flow = consumer.flow_control
    finally:
        await consumer.shutdown()
    consume_cpu_s = sum(consume_after[ident] - consume_before.get(ident, 0.0) for ident in consume_after)
    probed = {} if probe is None else {"probe": probe.report(probe_threads)}
    return {
        "loopCpuMicrosPerMessage": round(loop_cpu_s / count * 1e6, 3),
        "consumeCpuMicrosPerMessage": round(consume_cpu_s / count * 1e6, 3),
        "seconds": round(seconds, 3),
        "flowControlPauses": flow.total,
        **probed,
    }


def one_run(namesrv: str, count: int, kind: str, profile: cProfile.Profile | None = None,
            probe: bool = False) -> dict[str, Any]:
    """A consumer on an event loop in its own thread, as ``PushConsumer`` runs it."""
    loop = new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="loop_cpu event loop", daemon=True)
    thread.start()
    try:
        if not probe:
            return asyncio.run_coroutine_threadsafe(_consume_all(namesrv, count, kind, profile, None), loop).result()
        with Probe() as probing:
            return asyncio.run_coroutine_threadsafe(_consume_all(namesrv, count, kind, profile, probing),
                                                    loop).result()
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--body-size", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--listeners", default="orderly", help="orderly, concurrent or both, comma-separated")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--probe", action="store_true", help="where the queues waited (probe.py), per run")
    args = parser.parse_args()
    kinds = args.listeners.split(",")
    if set(kinds) - set(STATUS):
        parser.error(f"--listeners takes {' and '.join(STATUS)}, not {args.listeners}")
    report: dict[str, Any] = {
        "benchmark": "loop_cpu", "messages": args.count, "bodySize": args.body_size, "queues": QUEUES,
        "python": sys.version.split()[0], "codec": codec.IMPLEMENTATION, "uvloop": uvloop_enabled(),
        "loadavgBefore": os.getloadavg(),
    }
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    broker = context.Process(target=serve, args=(theirs, args.count, args.body_size), daemon=True)
    broker.start()
    try:
        namesrv = ours.recv()
        runs: dict[str, list[dict[str, Any]]] = {kind: [] for kind in kinds}
        for _ in range(args.runs):
            for kind in kinds:
                runs[kind].append(one_run(namesrv, args.count, kind, probe=args.probe))
                print(f"{kind}: {runs[kind][-1]}", file=sys.stderr)
        if args.profile:
            for kind in kinds:
                # timed by the thread's CPU clock: a wall clock would charge the waits for the GIL to whatever
                # function the loop was in when a consume thread took it
                profile = cProfile.Profile(time.thread_time)
                one_run(namesrv, args.count, kind, profile)
                print(f"--- {kind}: the event loop thread under cProfile", file=sys.stderr)
                pstats.Stats(profile, stream=sys.stderr).sort_stats("tottime").print_stats(25)
    finally:
        ours.close()
        broker.join(30)
    report["loadavgAfter"] = os.getloadavg()
    report["results"] = {
        kind: {
            "runs": kind_runs,
            "medianLoopCpuMicrosPerMessage": statistics.median(r["loopCpuMicrosPerMessage"] for r in kind_runs),
            "medianConsumeCpuMicrosPerMessage": statistics.median(r["consumeCpuMicrosPerMessage"] for r in kind_runs),
        }
        for kind, kind_runs in runs.items() if kind_runs
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
