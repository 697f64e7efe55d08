"""The Python consumers next to Java's DefaultMQPushConsumer, against the same Java broker in one run.

Starts the official name server and broker with the compat harness, preloads N messages of 1 KiB into a
topic of 8 queues with the Java peer ``produce-bulk``, then lets each consumer read all N from the first
offset in its own group, one after the other:

* ``python_push``: the blocking ``PushConsumer`` (default settings: 20 consume threads, batches of 1),
  a listener that counts;
* ``python_push_asyncio``: ``AsyncPushConsumer`` with an ``async def`` listener that counts;
* ``python_lite_pull``: the blocking ``LitePullConsumer`` in assign mode, ``poll()`` in a loop;
* ``java_push``: the Java peer ``consume-bench`` (DefaultMQPushConsumer, default settings).

An untimed read of all N comes first, so that no consumer meets a broker whose pull path is still cold.
For each: ``msgsPerSec`` from ``start()`` to the N-th message (``seconds``), and ``steadyMsgsPerSec`` from
the first message to the N-th. Ratios are Python/Java (above 1: Python is faster). Prints one JSON object.

Usage: ``python benchmarks/consumer/bench_consumer.py [--count N] [--body-size B]``
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "compat-tests"))

from harness import JavaBroker, JavaNameServer, mqadmin, run_peer  # noqa: E402

from rocketmq_py import codec  # noqa: E402
from rocketmq_py.client.consumer import (  # noqa: E402
    AsyncPushConsumer,
    ConsumeConcurrentlyStatus,
    LitePullConsumer,
    PushConsumer,
)
from rocketmq_py.remoting.loop import new_event_loop, uvloop_enabled  # noqa: E402

QUEUES = 8
SUCCESS = ConsumeConcurrentlyStatus.CONSUME_SUCCESS


def _group(kind: str) -> str:
    return f"bench_{kind}_{uuid.uuid4().hex[:6]}"


def _result(count: int, began: float, first: float, last: float, consumed_bytes: int) -> dict:
    return {
        "messages": count, "bytes": consumed_bytes,
        "seconds": round(last - began, 3), "msgsPerSec": round(count / (last - began), 1),
        "steadySeconds": round(last - first, 3), "steadyMsgsPerSec": round(count / max(last - first, 1e-9), 1),
        "startSeconds": round(first - began, 3),
    }


def python_push(namesrv: str, topic: str, count: int) -> dict:
    seen = 0
    consumed = 0
    first = last = 0.0
    lock = threading.Lock()
    done = threading.Event()

    def listener(messages, context):
        nonlocal seen, consumed, first, last
        with lock:
            if seen == 0:
                first = time.perf_counter()
            seen += len(messages)
            consumed += sum(len(m.body) for m in messages)
            if seen >= count and not done.is_set():
                last = time.perf_counter()
                done.set()
        return SUCCESS

    consumer = PushConsumer(_group("py_push"), namesrv_addr=namesrv, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener)
    began = time.perf_counter()
    consumer.start()
    if not done.wait(600):
        raise RuntimeError(f"the Python push consumer got {seen} of {count}")
    consumer.shutdown()
    return _result(count, began, first, last, consumed)


def python_push_asyncio(namesrv: str, topic: str, count: int) -> dict:
    async def run() -> dict:
        seen = 0
        consumed = 0
        first = last = 0.0
        done = asyncio.Event()

        async def listener(messages, context):
            nonlocal seen, consumed, first, last
            if seen == 0:
                first = time.perf_counter()
            seen += len(messages)
            consumed += sum(len(m.body) for m in messages)
            if seen >= count and not done.is_set():
                last = time.perf_counter()
                done.set()
            return SUCCESS

        consumer = AsyncPushConsumer(_group("py_async"), namesrv_addr=namesrv,
                                     consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        consumer.subscribe(topic, "*")
        consumer.register_message_listener(listener)
        began = time.perf_counter()
        await consumer.start()
        await asyncio.wait_for(done.wait(), 600)
        await consumer.shutdown()
        return _result(count, began, first, last, consumed)

    loop = new_event_loop()
    try:
        return loop.run_until_complete(run())
    finally:
        loop.close()


def python_lite_pull(namesrv: str, topic: str, count: int) -> dict:
    consumer = LitePullConsumer(_group("py_lite"), namesrv_addr=namesrv, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    began = time.perf_counter()
    consumer.start()
    consumer.assign(consumer.fetch_message_queues(topic))
    seen = 0
    consumed = 0
    first = 0.0
    deadline = time.monotonic() + 600
    while seen < count and time.monotonic() < deadline:
        messages = consumer.poll(1000)
        if messages and seen == 0:
            first = time.perf_counter()
        seen += len(messages)
        consumed += sum(len(m.body) for m in messages)
    last = time.perf_counter()
    consumer.shutdown()
    if seen < count:
        raise RuntimeError(f"the Python lite pull consumer got {seen} of {count}")
    return _result(count, began, first, last, consumed)


def java_push(namesrv: str, topic: str, count: int) -> dict:
    line = run_peer("consume-bench", namesrv=namesrv, topic=topic, group=_group("java_push"), count=count,
                    timeout_ms=600_000, timeout=700, jvm_opts=["-Xms256m", "-Xmx1g"])[-1]
    if not line.get("complete"):
        raise RuntimeError(f"the Java consumer got {line.get('count')} of {count}")
    return {
        "messages": count, "bytes": line["bytes"],
        "seconds": round(line["seconds"], 3), "msgsPerSec": round(count / line["seconds"], 1),
        "steadySeconds": round(line["firstToLastSeconds"], 3),
        "steadyMsgsPerSec": round(count / line["firstToLastSeconds"], 1),
        "startSeconds": round(line["startSeconds"], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--body-size", type=int, default=1024)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="rmq-consumer-bench-"))
    topic = f"ConsumerBench_{uuid.uuid4().hex[:6]}"
    report: dict = {
        "benchmark": "consumer", "messages": args.count, "bodySize": args.body_size, "queues": QUEUES,
        "python": platform.python_version(), "codec": codec.IMPLEMENTATION, "uvloop": uvloop_enabled(),
        "cpus": os.cpu_count(),
    }
    with JavaNameServer(workdir=workdir / "namesrv") as namesrv, \
            JavaBroker(namesrv, workdir=workdir / "broker", broker_name="bench-broker") as broker:
        mqadmin("updateTopic", "-b", broker.addr, "-t", topic, "-r", str(QUEUES), "-w", str(QUEUES),
                namesrv=namesrv.addr)
        loaded = run_peer("produce-bulk", namesrv=namesrv.addr, topic=topic, count=args.count,
                          body_size=args.body_size, timeout=900, jvm_opts=["-Xms256m", "-Xmx1g"])[-1]
        report["preload"] = {"sent": loaded["sent"], "seconds": round(loaded["seconds"], 3)}
        # One untimed read first, so no consumer meets a broker whose pull path is still cold (JIT, page cache).
        python_lite_pull(namesrv.addr, topic, args.count)
        results = {}
        for name, run in (("java_push", java_push), ("python_push", python_push),
                          ("python_push_asyncio", python_push_asyncio), ("python_lite_pull", python_lite_pull)):
            results[name] = run(namesrv.addr, topic, args.count)
            print(f"{name}: {results[name]}", file=sys.stderr)
    report["results"] = results
    java = results["java_push"]
    report["ratios"] = {
        f"{name}/java_push": {
            "msgsPerSec": round(result["msgsPerSec"] / java["msgsPerSec"], 3),
            "steadyMsgsPerSec": round(result["steadyMsgsPerSec"] / java["steadyMsgsPerSec"], 3),
        }
        for name, result in results.items() if name != "java_push"
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
