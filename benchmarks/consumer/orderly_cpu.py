"""CPU per message of the orderly push consumer's consume path, in one thread, with no broker and no contention.

The path measured is what a consume thread of ``PushConsumer`` does for each batch of an orderly queue
(Java's ConsumeMessageOrderlyService.ConsumeRequest.run): take the next batch from the process queue,
call the listener (here one that only counts), handle its result (commit the batch, the statistics, the
offset store). N messages of 1 KiB are cached in one process queue, as 32-message pulls would leave them;
the queue's consume task then runs once, from the first message to the last, in this thread. With Java's
default batch of one message, each message is one batch.

Prints one JSON object: ``cpuMicrosPerMessage`` per run (``time.process_time``, so the machine's load
inflates it less than a wall clock would, though a loaded machine still slows the caches), their median,
and ``/proc/loadavg`` before and after. ``--profile`` runs once more under cProfile and prints the
functions that cost most to stderr (cProfile's own cost makes that run several times slower).

Usage: ``python benchmarks/consumer/orderly_cpu.py [--count N] [--runs R] [--batch B] [--profile]``
"""
from __future__ import annotations

import argparse
import cProfile
import itertools
import json
import os
import pstats
import statistics
import sys
import time

from rocketmq_py.client.consumer import AsyncPushConsumer, ConsumeOrderlyStatus
from rocketmq_py.client.consumer.consume_orderly import ConsumeMessageOrderlyService, _QueueRequest
from rocketmq_py.client.consumer.listener import Listener
from rocketmq_py.client.consumer.offset_store import RemoteBrokerOffsetStore
from rocketmq_py.client.consumer.process_queue import ProcessQueue
from rocketmq_py.common.clock import now_ms
from rocketmq_py.common.message import MessageExt
from rocketmq_py.common.message_queue import MessageQueue

PULL_BATCH = 32
#: Far beyond any run: the queue's broker lock never expires during the measurement.
LOCKED_FOR_MS = 10**9


def one_run(count: int, batch: int, profile: cProfile.Profile | None = None) -> float:
    """Consume ``count`` cached messages of one queue in this thread; the CPU seconds per message."""
    queue = MessageQueue("BenchTopic", "bench-broker", 0)
    consumed = itertools.count()

    def listener(messages: list[MessageExt], context: object) -> ConsumeOrderlyStatus:
        for _ in messages:
            next(consumed)
        return ConsumeOrderlyStatus.SUCCESS

    consumer = AsyncPushConsumer("bench_orderly_cpu", namesrv_addr="127.0.0.1:1",
                                 consume_message_batch_max_size=batch)
    consumer.offset_store = RemoteBrokerOffsetStore(None, consumer.group)  # type: ignore[arg-type]
    service = ConsumeMessageOrderlyService(consumer, Listener.of(listener, orderly=True))
    pq = ProcessQueue()
    pq.locked = True
    pq.last_lock_timestamp = now_ms() + LOCKED_FOR_MS
    body = b"x" * 1024
    pulled = []
    for offset in range(count):
        message = MessageExt(queue.topic, body)
        message.queue_id = queue.queue_id
        message.queue_offset = offset
        pulled.append(message)
    for start in range(0, count, PULL_BATCH):
        pq.put_messages(pulled[start:start + PULL_BATCH])
    began = time.process_time()
    if profile is not None:
        profile.enable()
    service._consume_in_thread(_QueueRequest(pq, queue))
    if profile is not None:
        profile.disable()
    spent = time.process_time() - began
    if next(consumed) != count:
        raise RuntimeError("the listener did not get every message")
    if consumer.offset_store.read_offset_from_memory(queue) != count:
        raise RuntimeError("the offset store does not stand after the last message")
    return spent / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--batch", type=int, default=1, help="consume_message_batch_max_size (Java's default: 1)")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    report: dict[str, object] = {"benchmark": "orderly_cpu", "messages": args.count, "batch": args.batch,
                                 "python": sys.version.split()[0], "loadavgBefore": os.getloadavg()}
    runs = [round(one_run(args.count, args.batch) * 1e6, 3) for _ in range(args.runs)]
    report["loadavgAfter"] = os.getloadavg()
    report["cpuMicrosPerMessage"] = runs
    report["medianCpuMicrosPerMessage"] = statistics.median(runs)
    if args.profile:
        profile = cProfile.Profile()
        one_run(args.count, args.batch, profile)
        pstats.Stats(profile, stream=sys.stderr).sort_stats("tottime").print_stats(20)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
