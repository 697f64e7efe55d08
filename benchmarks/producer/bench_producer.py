"""The Python producer next to Java's DefaultMQProducer, against the same Java broker in one run.

Starts the official name server and broker with the compat harness, then measures, with 1 KiB
messages (below the compression threshold):

* ``sync``: one thread sending with the blocking ``Producer.send``;
* ``async``: ``AsyncProducer.send_async`` with 64 sends in flight;
* ``batch``: one thread sending batches of 32 messages with ``Producer.send``;

and the Java peer ``producer-bench`` with the same settings (sync from one thread, async with 64
in flight through a semaphore, batches of 32). Latency is per call (per batch in batch mode).
Each side also reports its client process's CPU per message over the timed run (``cpuUsPerMsg``,
every thread: /proc/self/stat here, the JVM's process CPU time in the peer). Prints one JSON object
with both sides and the Python/Java ratios (throughput ratio above 1, latency and CPU ratios below 1
mean Python is better).

Usage: ``python benchmarks/producer/bench_producer.py [--count N] [--sync-count N] [--warmup N]
[--modes sync,async,batch]``
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "compat-tests"))

from harness import JavaBroker, JavaNameServer, run_peer  # noqa: E402
from harness.cpu import process_cpu_s  # noqa: E402

from rocketmq_py import codec  # noqa: E402
from rocketmq_py.client.producer import AsyncProducer, Producer  # noqa: E402
from rocketmq_py.common.message import Message  # noqa: E402
from rocketmq_py.remoting.loop import new_event_loop, uvloop_enabled  # noqa: E402

BODY = b"p" * 1024
IN_FLIGHT = 64
BATCH = 32


def own_cpu_s() -> float:
    """User + system CPU seconds of this process so far (every thread)."""
    return process_cpu_s(os.getpid())


def _summary(mode: str, messages: int, seconds: float, latencies_s: list[float], errors: int = 0,
             cpu_s: float | None = None) -> dict:
    ordered = sorted(latencies_s)
    return {
        "mode": mode, "messages": messages, "seconds": round(seconds, 3),
        "msgsPerSec": round(messages / seconds, 1),
        "p50Ms": round(ordered[len(ordered) // 2] * 1000, 3),
        "p99Ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 3),
        "errors": errors,
        "cpuUsPerMsg": None if cpu_s is None else round(cpu_s * 1e6 / messages, 1),
    }


def python_sync(namesrv: str, topic: str, count: int, warmup: int) -> dict:
    with Producer(f"bench_py_sync_{uuid.uuid4().hex[:6]}", namesrv_addr=namesrv) as producer:
        for _ in range(warmup):
            producer.send(Message(topic, BODY, tags="B"))
        latencies = []
        cpu_before = own_cpu_s()
        started = time.perf_counter()
        for _ in range(count):
            t0 = time.perf_counter()
            producer.send(Message(topic, BODY, tags="B"))
            latencies.append(time.perf_counter() - t0)
        elapsed = time.perf_counter() - started
        cpu_s = own_cpu_s() - cpu_before
    return _summary("sync", count, elapsed, latencies, cpu_s=cpu_s)


def python_batch(namesrv: str, topic: str, count: int, warmup: int) -> dict:
    batches = count // BATCH
    with Producer(f"bench_py_batch_{uuid.uuid4().hex[:6]}", namesrv_addr=namesrv) as producer:
        for _ in range(max(1, warmup // BATCH)):
            producer.send([Message(topic, BODY, tags="B") for _ in range(BATCH)])
        latencies = []
        cpu_before = own_cpu_s()
        started = time.perf_counter()
        for _ in range(batches):
            batch = [Message(topic, BODY, tags="B") for _ in range(BATCH)]
            t0 = time.perf_counter()
            producer.send(batch)
            latencies.append(time.perf_counter() - t0)
        elapsed = time.perf_counter() - started
        cpu_s = own_cpu_s() - cpu_before
    return _summary("batch", batches * BATCH, elapsed, latencies, cpu_s=cpu_s)


async def _python_async(namesrv: str, topic: str, count: int, warmup: int) -> dict:
    async with AsyncProducer(f"bench_py_async_{uuid.uuid4().hex[:6]}", namesrv_addr=namesrv) as producer:
        async def run(n: int) -> tuple[float, list[float], int, float]:
            permits = asyncio.Semaphore(IN_FLIGHT)
            latencies: list[float] = []
            errors = 0
            pending: set[asyncio.Task] = set()

            def finished(task: asyncio.Task, t0: float) -> None:
                nonlocal errors
                latencies.append(time.perf_counter() - t0)
                if task.cancelled() or task.exception() is not None:
                    errors += 1
                permits.release()
                pending.discard(task)

            cpu_before = own_cpu_s()
            started = time.perf_counter()
            for _ in range(n):
                await permits.acquire()
                t0 = time.perf_counter()
                task = producer.send_async(Message(topic, BODY, tags="B"))
                pending.add(task)
                task.add_done_callback(lambda done, t0=t0: finished(done, t0))
            while pending:
                await asyncio.gather(*tuple(pending), return_exceptions=True)
            return time.perf_counter() - started, latencies, errors, own_cpu_s() - cpu_before

        await run(warmup)
        elapsed, latencies, errors, cpu_s = await run(count)
    return _summary("async", count, elapsed, latencies, errors, cpu_s)


def python_async(namesrv: str, topic: str, count: int, warmup: int) -> dict:
    loop = new_event_loop()
    try:
        return loop.run_until_complete(_python_async(namesrv, topic, count, warmup))
    finally:
        loop.close()


def java(namesrv: str, topic: str, mode: str, count: int, warmup: int) -> dict:
    [line] = run_peer("producer-bench", namesrv=namesrv, topic=topic, mode=mode, count=count, size=len(BODY),
                      inflight=IN_FLIGHT, batch=BATCH, warmup=warmup, timeout=900,
                      jvm_opts=["-Xms256m", "-Xmx512m"])
    return {key: (round(value, 3) if isinstance(value, float) else value) for key, value in line.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20000, help="messages for async and batch")
    parser.add_argument("--sync-count", type=int, default=5000, help="messages for sync")
    parser.add_argument("--warmup", type=int, default=2000)
    parser.add_argument("--modes", default="sync,async,batch", help="which of sync, async, batch to run")
    args = parser.parse_args()

    namesrv = JavaNameServer()
    namesrv.start()
    broker = JavaBroker(namesrv, broker_name="broker-bench")
    try:
        broker.start()
        topic = f"ProducerBench_{uuid.uuid4().hex[:6]}"
        with Producer(f"bench_setup_{uuid.uuid4().hex[:6]}", namesrv_addr=namesrv.addr) as producer:
            producer.send(Message(topic, b"creates the topic"))
        counts = {"sync": args.sync_count, "async": args.count, "batch": args.count}
        python_runs = {
            "sync": lambda: python_sync(namesrv.addr, topic, counts["sync"], args.warmup),
            "async": lambda: python_async(namesrv.addr, topic, counts["async"], args.warmup),
            "batch": lambda: python_batch(namesrv.addr, topic, counts["batch"], args.warmup),
        }
        results: dict = {"python": {}, "java": {}, "ratios": {}}
        for mode in args.modes.split(","):
            run = python_runs[mode]
            results["python"][mode] = run()
            results["java"][mode] = java(namesrv.addr, topic, mode, counts[mode], args.warmup)
            py, jv = results["python"][mode], results["java"][mode]
            results["ratios"][mode] = {
                "throughput_python_over_java": round(py["msgsPerSec"] / jv["msgsPerSec"], 3),
                "p50_python_over_java": round(py["p50Ms"] / jv["p50Ms"], 3) if jv["p50Ms"] else None,
                "p99_python_over_java": round(py["p99Ms"] / jv["p99Ms"], 3) if jv["p99Ms"] else None,
                "client_cpu_python_over_java": round(py["cpuUsPerMsg"] / jv["cpuUsPerMsg"], 3)
                if jv.get("cpuUsPerMsg") else None,
            }
        results["environment"] = {
            "python": platform.python_version(), "codec": codec.IMPLEMENTATION, "uvloop": uvloop_enabled(),
            "cpus": os.cpu_count(), "body_bytes": len(BODY), "in_flight": IN_FLIGHT,
            "batch_size": BATCH, "threads_alive": threading.active_count(),
            "python_meets_java": {mode: r["throughput_python_over_java"] >= 1.0
                                  for mode, r in results["ratios"].items()},
            "geomean_throughput_ratio": round(statistics.geometric_mean(
                [r["throughput_python_over_java"] for r in results["ratios"].values()]), 3),
        }
        print(json.dumps(results, indent=2))
    finally:
        broker.stop()
        namesrv.stop()


if __name__ == "__main__":
    main()
