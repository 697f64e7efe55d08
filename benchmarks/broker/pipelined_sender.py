"""A pipelined load generator for the broker capacity benchmark: keeps ``--inflight`` requests outstanding on
each of ``--connections`` connections, so the broker, not the sender, is the limit.

The frames and the connection protocol are the compat harness's (compat-tests/harness/pipelined.py), which
compat tests use to saturate a broker; the sender spends a few microseconds per message. It reports, for the measurement
window after ``--warmup`` seconds: the messages the broker accepted (sends) or returned (pulls), the
SYSTEM_BUSY and other refusals, the broker's CPU time from ``/proc/<broker-pid>/stat`` (with its child
processes, our broker's fronts; and the broker process's main thread apart) and its own; with ``--probe``, the p50/p99 response times of GET_MAX_OFFSET,
HEART_BEAT and QUERY_CONSUMER_OFFSET asked on another connection meanwhile (one of each every 20 ms).

    python pipelined_sender.py --addr 127.0.0.1:10911 --broker-pid 1234 --topic T --mode single|batch|pull
"""
from __future__ import annotations

import argparse
import asyncio
import json
import random
import resource
import sys
import time
from pathlib import Path

from rocketmq_py import codec
from rocketmq_py.common.codes import RequestCode
from rocketmq_py.remoting import RemotingClient, create_request

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "compat-tests"))

from harness.cpu import main_thread_cpu_s, process_cpu_s, process_tree_cpu_s  # noqa: E402
from harness.pipelined import Counters, PipelinedConnection, frame, send_frames  # noqa: E402

PULL_GROUP = "capacity_cg"
PULL_BATCH = 32
FLAG_SUBSCRIPTION = 0x4

def own_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def pull_frames(topic: str, queues: int, max_offset: int, count: int = 256) -> list[bytes]:
    """PULL_MESSAGE frames for ``PULL_BATCH`` messages at random places below ``max_offset`` in each queue."""
    rng = random.Random(7)
    frames = []
    for index in range(count):
        fields = {"consumerGroup": PULL_GROUP, "topic": topic, "queueId": str(index % queues),
                  "queueOffset": str(rng.randrange(0, max(1, max_offset - PULL_BATCH))),
                  "maxMsgNums": str(PULL_BATCH), "sysFlag": str(FLAG_SUBSCRIPTION), "commitOffset": "0", "suspendTimeoutMillis": "0",
                  "subscription": "*", "subVersion": "0", "expressionType": "TAG"}
        frames.append(frame(RequestCode.PULL_MESSAGE, fields, None))
    return frames


PROBE_INTERVAL_S = 0.02
PROBE_CODES = {"GET_MAX_OFFSET": RequestCode.GET_MAX_OFFSET, "HEART_BEAT": RequestCode.HEART_BEAT,
               "QUERY_CONSUMER_OFFSET": RequestCode.QUERY_CONSUMER_OFFSET}


def probe_request(name: str, topic: str):
    if name == "HEART_BEAT":
        body = codec.json_dumps({"clientID": "capacity-probe", "consumerDataSet": [],
                                 "producerDataSet": [{"groupName": "capacity_pg"}]}).encode()
        return create_request(RequestCode.HEART_BEAT, None, body)
    fields = {"topic": topic, "queueId": "0"}
    if name == "QUERY_CONSUMER_OFFSET":
        fields["consumerGroup"] = PULL_GROUP
    return create_request(PROBE_CODES[name], fields)


async def probe(addr: str, topic: str, seconds: float) -> dict:
    """The response times of admin, heartbeat and offset requests, on their own connection, under the load."""
    client = RemotingClient()
    times: dict[str, list[float]] = {name: [] for name in PROBE_CODES}
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    try:
        while loop.time() < deadline:
            for name in PROBE_CODES:
                started = time.perf_counter()
                await client.invoke(addr, probe_request(name, topic), 30_000)
                times[name].append(time.perf_counter() - started)
            await asyncio.sleep(PROBE_INTERVAL_S)
    finally:
        await client.shutdown()
    result = {}
    for name, samples in times.items():
        ordered = sorted(samples)
        result[name] = {"count": len(ordered),
                        "p50_ms": round(ordered[len(ordered) // 2] * 1000, 2) if ordered else None,
                        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 2)
                        if ordered else None,
                        "max_ms": round(ordered[-1] * 1000, 2) if ordered else None}
    return result


async def run(args: argparse.Namespace) -> dict:
    host, port = args.addr.rsplit(":", 1)
    if args.mode == "pull":
        frames = pull_frames(args.topic, args.queues, args.max_offset)
        per_ok = 0
    else:
        frames = send_frames(args.topic, args.size, args.batch if args.mode == "batch" else 1, args.queues)
        per_ok = args.batch if args.mode == "batch" else 1
    counters = Counters()
    loop = asyncio.get_running_loop()
    connections = []
    for _ in range(args.connections):
        _, protocol = await loop.create_connection(
            lambda: PipelinedConnection(frames, args.inflight, per_ok, args.mode == "pull", counters), host, int(port))
        connections.append(protocol)
    await asyncio.sleep(args.warmup)
    start = (time.monotonic(), counters.messages, counters.responses, counters.busy, counters.other,
             process_tree_cpu_s(args.broker_pid), own_cpu_s(), process_cpu_s(args.broker_pid),
             main_thread_cpu_s(args.broker_pid))
    if args.probe:
        probed = await probe(args.addr, args.topic, args.seconds)
    else:
        probed = None
        await asyncio.sleep(args.seconds)
    end = (time.monotonic(), counters.messages, counters.responses, counters.busy, counters.other,
           process_tree_cpu_s(args.broker_pid), own_cpu_s(), process_cpu_s(args.broker_pid),
           main_thread_cpu_s(args.broker_pid))
    for connection in connections:
        connection.stopped = True
        connection.transport.close()
    elapsed, messages, responses, busy, other, broker_cpu, sender_cpu, process_cpu, main_cpu = (
        b - a for a, b in zip(start, end))
    return {
        "mode": args.mode, "seconds": round(elapsed, 3), "messages": messages, "responses": responses,
        "system_busy": busy, "other_errors": other, "other_codes": counters.other_codes,
        "msgs_per_s": round(messages / elapsed, 1),
        "broker_cpu_s": round(broker_cpu, 3),
        "broker_cpu_us_per_msg": round(broker_cpu * 1e6 / messages, 2) if messages else None,
        "msgs_per_broker_cpu_s": round(messages / broker_cpu, 1) if broker_cpu else None,
        # The broker process alone, without its front processes (the same as broker_cpu_* without fronts).
        "broker_process_cpu_us_per_msg": round(process_cpu * 1e6 / messages, 2) if messages else None,
        "fronts_cpu_us_per_msg": round((broker_cpu - process_cpu) * 1e6 / messages, 2) if messages else None,
        # Of the broker process: its main thread (the event loop: requests, the fronts' channels, placement).
        "broker_main_thread_cpu_us_per_msg": round(main_cpu * 1e6 / messages, 2) if messages else None,
        "sender_cpu_s": round(sender_cpu, 3),
        "sender_cpu_us_per_msg": round(sender_cpu * 1e6 / messages, 2) if messages else None,
        **({"probe_latency": probed} if probed is not None else {}),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--addr", required=True)
    parser.add_argument("--broker-pid", type=int, required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--mode", choices=("single", "batch", "pull"), default="single")
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--inflight", type=int, default=1024)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--queues", type=int, default=8)
    parser.add_argument("--max-offset", type=int, default=1000, help="pull below this offset in every queue")
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--probe", action="store_true",
                        help="meanwhile time GET_MAX_OFFSET, HEART_BEAT and QUERY_CONSUMER_OFFSET on another connection")
    parser.add_argument("--seconds", type=float, default=8.0)
    args = parser.parse_args()
    try:
        import uvloop
    except ImportError:
        result = asyncio.run(run(args))
    else:
        result = uvloop.run(run(args))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
