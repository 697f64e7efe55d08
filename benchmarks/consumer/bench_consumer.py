"""The Python consumers next to Java's DefaultMQPushConsumer, against the same Java broker in one run.

Starts the official name server and broker with the compat harness, preloads N messages of 1 KiB into a
topic of 8 queues with the Java peer ``produce-bulk``, then lets each consumer read all N from the first
offset in its own group, one after the other, all with their default settings:

* ``java_push``: the Java peer ``consume-bench`` (DefaultMQPushConsumer, MessageListenerConcurrently);
* ``python_push``: the blocking ``PushConsumer`` (20 consume threads, batches of 1), a listener that counts;
* ``java_push_orderly`` and ``python_push_orderly``: the same with an orderly listener
  (MessageListenerOrderly: each queue consumed in order, one message at a time, under its broker lock);
* ``python_push_asyncio``: ``AsyncPushConsumer`` with an ``async def`` listener that counts;
* ``python_lite_pull``: the blocking ``LitePullConsumer`` in assign mode, ``poll()`` in a loop.

An untimed read of all N comes first, so that no consumer meets a broker whose pull path is still cold.
For each: ``msgsPerSec`` from ``start()`` to the N-th message (``seconds``), ``steadyMsgsPerSec`` from the
first message to the N-th, ``minOneSecondMsgsPerSec`` the fewest messages of any one-second window between
them (counted per 100 ms; null for a run shorter than a second), and for the push consumers
``flowControlPauses``: how often a pull waited because the listener had not caught up (Java's own counters
for Java), and for the blocking push consumers ``contextSwitchesPerMessage``: the process's voluntary context
switches per message, a few hundredths in a steady run and above one when the consume threads wait for one another
(the lock convoy of issue 33), and ``threadCpuMicrosPerMessage``: the CPU of the consume threads (``consume``)
and of the consumer's other threads (``other``: the event loop that pulls and decodes) per message. A steady run has its lowest second near its average, no pauses and few
switches. Ratios are Python/Java (above 1: Python is faster), the orderly consumers against Java's orderly one.
Prints one JSON object, with ``/proc/loadavg`` before and after.

Usage: ``python benchmarks/consumer/bench_consumer.py [--count N] [--body-size B] [--consumers NAME,...]
[--probe] [--switch-interval S]`` (``--consumers java_push_orderly,python_push_orderly``: only those, and the ratios
between them; ``--probe``: where the blocking push consumers' queues waited, from ``probe.py``, under ``probe`` in
their results; ``--switch-interval``: the Python consumers run with that GIL switch interval, for comparisons).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import itertools
import os
import platform
import resource
import shutil
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "compat-tests"))

from harness import JavaBroker, JavaNameServer, run_peer  # noqa: E402
from harness.cpu import thread_cpu_s  # noqa: E402
from harness.peers import preload_topic  # noqa: E402
from probe import Probe  # noqa: E402

from rocketmq_py import codec  # noqa: E402
from rocketmq_py.client.consumer import (  # noqa: E402
    AsyncPushConsumer,
    ConsumeConcurrentlyStatus,
    ConsumeOrderlyStatus,
    LitePullConsumer,
    PushConsumer,
)
from rocketmq_py.remoting.loop import new_event_loop, uvloop_enabled  # noqa: E402

QUEUES = 8
TENTH_S = 0.1
TIMEOUT_S = 600


def _group(kind: str) -> str:
    return f"bench_{kind}_{uuid.uuid4().hex[:6]}"


def min_one_second_rate(tenths: list[int]) -> int | None:
    """The fewest messages in any ten consecutive complete tenths of a second (the last tenth is partial)."""
    complete = tenths[:-1]
    if len(complete) < 10:
        return None
    window = sum(complete[:10])
    lowest = window
    for i in range(10, len(complete)):
        window += complete[i] - complete[i - 10]
        lowest = min(lowest, window)
    return lowest


class Tally:
    """Counts consumed messages, from any thread, without a lock: as Java's peer counts with atomics, so that the
    listeners' own bookkeeping never makes the consume threads wait for one another (a lock taken by every
    listener call can put CPython's threads into a lock convoy; see docs/push-consumer.md)."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.first = self.last = 0.0
        self.done = threading.Event()
        #: called in the listener's thread at the N-th message (the probe's end)
        self.on_done: Any = None
        self._counter = itertools.count(1)
        #: (when, messages, bytes) per listener call; list.append and next(count) are atomic under the GIL.
        self._calls: list[tuple[float, int, int]] = []

    @property
    def seen(self) -> int:
        return sum(call[1] for call in self._calls)

    def add(self, messages: list[Any]) -> None:
        now = time.perf_counter()
        self._calls.append((now, len(messages), sum(len(m.body) for m in messages)))
        seen = 0
        for _ in messages:
            seen = next(self._counter)
        if seen >= self.count and not self.done.is_set():
            self.last = now
            if self.on_done is not None:
                self.on_done()
            self.done.set()

    def tenths(self) -> list[int]:
        """Messages per tenth of a second from the first one."""
        counts: list[int] = []
        for when, messages, _ in self._calls:
            tenth = int((when - self.first) / TENTH_S)
            while len(counts) <= tenth:
                counts.append(0)
            counts[tenth] += messages
        return counts

    def result(self, began: float, pauses: dict[str, int] | None = None,
               switches: int | None = None) -> dict[str, Any]:
        self.first = min(call[0] for call in self._calls)
        seconds = self.last - began
        steady = max(self.last - self.first, 1e-9)
        out: dict[str, Any] = {
            "messages": self.count, "bytes": sum(call[2] for call in self._calls),
            "seconds": round(seconds, 3), "msgsPerSec": round(self.count / seconds, 1),
            "steadySeconds": round(steady, 3), "steadyMsgsPerSec": round(self.count / steady, 1),
            "startSeconds": round(self.first - began, 3),
            "minOneSecondMsgsPerSec": min_one_second_rate(self.tenths()),
        }
        if pauses is not None:
            out["flowControlPauses"] = pauses
        if switches is not None:
            out["contextSwitchesPerMessage"] = round(switches / self.count, 3)
        return out


def voluntary_context_switches() -> int:
    """This process's voluntary context switches so far (all threads): a thread that blocks on a lock makes one."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw


def threads_cpu_s() -> dict[str, float]:
    """CPU seconds of each live thread of this process, by thread name (``/proc/self/task/<id>/stat``)."""
    cpu = {}
    for thread in threading.enumerate():
        try:
            cpu[thread.name] = thread_cpu_s(os.getpid(), thread.native_id)
        except OSError:
            pass
    return cpu


def cpu_per_message_by_thread(before: dict[str, float], after: dict[str, float], count: int) -> dict[str, float]:
    """The CPU microseconds per message of the consume threads and of the other threads started or run since."""
    spent = {"consume": 0.0, "other": 0.0}
    for name, cpu_s in after.items():
        if name == threading.main_thread().name:
            continue
        kind = "consume" if name.startswith("ConsumeMessageThread_") else "other"
        spent[kind] += cpu_s - before.get(name, 0.0)
    return {kind: round(cpu_s / count * 1e6, 2) for kind, cpu_s in spent.items()}


def python_push(namesrv: str, topic: str, count: int, orderly: bool = False, probe: bool = False) -> dict:
    tally = Tally(count)
    status: Any = ConsumeOrderlyStatus.SUCCESS if orderly else ConsumeConcurrentlyStatus.CONSUME_SUCCESS
    if probe:
        with Probe() as probing:
            threads: dict[str, Any] = {}
            tally.on_done = lambda: threads.update(probing.stop())
            result = _python_push(namesrv, topic, tally, orderly, status)
        result["probe"] = probing.report(threads)
        return result
    return _python_push(namesrv, topic, tally, orderly, status)


def _python_push(namesrv: str, topic: str, tally: Tally, orderly: bool, status: Any) -> dict:
    count = tally.count

    def listener(messages, context):
        tally.add(messages)
        return status

    consumer = PushConsumer(_group("py_orderly" if orderly else "py_push"), namesrv_addr=namesrv,
                            consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener, orderly=orderly)
    switches = voluntary_context_switches()
    cpu_before = threads_cpu_s()
    began = time.perf_counter()
    consumer.start()
    if not tally.done.wait(TIMEOUT_S):
        raise RuntimeError(f"the Python push consumer got {tally.seen} of {count}")
    switches = voluntary_context_switches() - switches
    cpu = cpu_per_message_by_thread(cpu_before, threads_cpu_s(), count)
    flow = consumer.flow_control
    consumer.shutdown()
    result = tally.result(began, {"total": flow.total, "cachedCount": flow.cached_count,
                                  "cachedSize": flow.cached_size, "offsetSpan": flow.offset_span}, switches)
    result["threadCpuMicrosPerMessage"] = cpu
    return result


def python_push_asyncio(namesrv: str, topic: str, count: int) -> dict:
    async def run() -> dict:
        tally = Tally(count)

        async def listener(messages, context):
            tally.add(messages)
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        consumer = AsyncPushConsumer(_group("py_async"), namesrv_addr=namesrv,
                                     consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        consumer.subscribe(topic, "*")
        consumer.register_message_listener(listener)
        began = time.perf_counter()
        await consumer.start()
        while not tally.done.is_set():
            if time.perf_counter() - began > TIMEOUT_S:
                raise RuntimeError(f"the asyncio push consumer got {tally.seen} of {count}")
            await asyncio.sleep(0.01)
        flow = consumer.flow_control
        await consumer.shutdown()
        return tally.result(began, {"total": flow.total, "cachedCount": flow.cached_count,
                                    "cachedSize": flow.cached_size, "offsetSpan": flow.offset_span})

    loop = new_event_loop()
    try:
        return loop.run_until_complete(run())
    finally:
        loop.close()


def python_lite_pull(namesrv: str, topic: str, count: int) -> dict:
    consumer = LitePullConsumer(_group("py_lite"), namesrv_addr=namesrv, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    tally = Tally(count)
    began = time.perf_counter()
    consumer.start()
    consumer.assign(consumer.fetch_message_queues(topic))
    deadline = time.monotonic() + TIMEOUT_S
    while not tally.done.is_set() and time.monotonic() < deadline:
        messages = consumer.poll(1000)
        if messages:
            tally.add(messages)
    consumer.shutdown()
    if not tally.done.is_set():
        raise RuntimeError(f"the Python lite pull consumer got {tally.seen} of {count}")
    return tally.result(began)


def java_push(namesrv: str, topic: str, count: int, orderly: bool = False) -> dict:
    line = run_peer("consume-bench", namesrv=namesrv, topic=topic, group=_group("java_push"), count=count,
                    orderly=orderly, timeout_ms=TIMEOUT_S * 1000, timeout=TIMEOUT_S + 100,
                    jvm_opts=["-Xms256m", "-Xmx1g"])[-1]
    if not line.get("complete"):
        raise RuntimeError(f"the Java consumer got {line.get('count')} of {count}")
    return {
        "messages": count, "bytes": line["bytes"],
        "seconds": round(line["seconds"], 3), "msgsPerSec": round(count / line["seconds"], 1),
        "steadySeconds": round(line["firstToLastSeconds"], 3),
        "steadyMsgsPerSec": round(count / line["firstToLastSeconds"], 1),
        "startSeconds": round(line["startSeconds"], 3),
        "minOneSecondMsgsPerSec": min_one_second_rate(line["tenths"]),
        "flowControlPauses": {"total": line["flowControlTimes"] + line["maxSpanFlowControlTimes"],
                              "cachedCountOrSize": line["flowControlTimes"],
                              "offsetSpan": line["maxSpanFlowControlTimes"]},
    }


#: Each run: (name server, topic, messages, probe) -> its figures; ``probe`` (--probe) applies to the blocking push
#: consumers.
RUNS = (
    ("java_push", lambda namesrv, topic, count, probe: java_push(namesrv, topic, count)),
    ("python_push", lambda namesrv, topic, count, probe: python_push(namesrv, topic, count, probe=probe)),
    ("java_push_orderly", lambda namesrv, topic, count, probe: java_push(namesrv, topic, count, orderly=True)),
    ("python_push_orderly",
     lambda namesrv, topic, count, probe: python_push(namesrv, topic, count, orderly=True, probe=probe)),
    ("python_push_asyncio", lambda namesrv, topic, count, probe: python_push_asyncio(namesrv, topic, count)),
    ("python_lite_pull", lambda namesrv, topic, count, probe: python_lite_pull(namesrv, topic, count)),
)
#: Each Python consumer against the Java consumer of its kind.
JAVA_PEER = {"python_push": "java_push", "python_push_orderly": "java_push_orderly",
             "python_push_asyncio": "java_push", "python_lite_pull": "java_push"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--body-size", type=int, default=1024)
    parser.add_argument("--consumers", default=",".join(name for name, _ in RUNS),
                        help="which consumers to run, comma-separated (default: all)")
    parser.add_argument("--switch-interval", type=float, default=None, metavar="SECONDS",
                        help="sys.setswitchinterval for the Python consumers (CPython's default: 0.005)")
    parser.add_argument("--probe", action="store_true",
                        help="where the blocking push consumers' queues waited (probe.py), in their results")
    args = parser.parse_args()
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval)
    chosen = args.consumers.split(",")
    unknown = set(chosen) - {name for name, _ in RUNS}
    if unknown:
        parser.error(f"no such consumer: {', '.join(sorted(unknown))}")
    workdir = Path(tempfile.mkdtemp(prefix="rmq-consumer-bench-"))
    topic = f"ConsumerBench_{uuid.uuid4().hex[:6]}"
    report: dict = {
        "benchmark": "consumer", "messages": args.count, "bodySize": args.body_size, "queues": QUEUES,
        "python": platform.python_version(), "interpreter": sys.executable, "codec": codec.IMPLEMENTATION,
        "uvloop": uvloop_enabled(), "cpus": os.cpu_count(), "loadavgBefore": os.getloadavg(),
        "switchIntervalSeconds": sys.getswitchinterval(),
    }
    try:
        with JavaNameServer(workdir=workdir / "namesrv") as namesrv, \
                JavaBroker(namesrv, workdir=workdir / "broker", broker_name="bench-broker") as broker:
            report["preload"] = preload_topic(namesrv.addr, broker.addr, topic, QUEUES, args.count, args.body_size)
            # One untimed read first, so no consumer meets a broker whose pull path is still cold (JIT, page cache).
            python_lite_pull(namesrv.addr, topic, args.count)
            results = {}
            for name, run in RUNS:
                if name not in chosen:
                    continue
                results[name] = run(namesrv.addr, topic, args.count, args.probe)
                print(f"{name}: {results[name]}", file=sys.stderr)
    finally:
        # the broker's store (125 MB for the default 100 000 messages): runs that left it behind filled the
        # disk until the Java broker refused the preload (its disk-full check stops sends at 90 %)
        shutil.rmtree(workdir, ignore_errors=True)
    report["loadavgAfter"] = os.getloadavg()
    report["results"] = results
    report["ratios"] = {
        f"{name}/{java}": {
            "msgsPerSec": round(results[name]["msgsPerSec"] / results[java]["msgsPerSec"], 3),
            "steadyMsgsPerSec": round(results[name]["steadyMsgsPerSec"] / results[java]["steadyMsgsPerSec"], 3),
        }
        for name, java in JAVA_PEER.items() if name in results and java in results
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
