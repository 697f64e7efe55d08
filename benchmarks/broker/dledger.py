"""A 3-member DLedger group of our brokers against one of Java 4.9 brokers (issue 31, must-show 5).

For each kind, a fresh group (``enableDLegerCommitLog=true``, the compat harness's broker keys) with the Java
name server; the Java ``producer-bench`` sends to it (async, ``--inflight`` sends in flight, after a warm-up),
and the group's CPU (all three broker processes, as the kernel counts it) is read around the measured sends.
Prints one JSON object: per kind, the send TPS, p50 and p99 of a send (ms), the failed sends by kind (the
broker's response code and remark, or the client's exception), the group's CPU µs per message, what each
member's main thread did (ours: ran, waited for a CPU, slept: shares of the measured time), and the machine's load
average before and after (the machine is shared: compare runs taken side by side).

    .venv/bin/python benchmarks/broker/dledger.py [--count 20000] [--size 1024] [--inflight 64] [--keep]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "compat-tests"))

from harness import JavaNameServer, ensure_built  # noqa: E402
from harness.cpu import main_thread_sched_s, process_tree_cpu_s  # noqa: E402
from harness.dledger_brokers import DLedgerBrokerGroup  # noqa: E402
from harness.peers import run_peer  # noqa: E402


def _group_cpu_s(group: DLedgerBrokerGroup) -> float:
    return sum(process_tree_cpu_s(member.pid) for member in group.members.values() if member.pid is not None)


def _main_threads(group: DLedgerBrokerGroup) -> dict[str, tuple[float, float]]:
    return {member_id: main_thread_sched_s(member.pid) for member_id, member in group.members.items()
            if member.pid is not None}


def _main_thread_shares(group: DLedgerBrokerGroup, before: dict[str, tuple[float, float]], wall_s: float
                        ) -> dict[str, dict[str, object]]:
    """Per member, what its main thread (the event loop of ours) did over the measured sends, as shares of the
    wall time: ran on a CPU, waited in the run queue for one, slept (waited for I/O, a timer or a peer)."""
    master = group.master()
    shares: dict[str, dict[str, object]] = {}
    for member_id, (ran_s, waited_s) in _main_threads(group).items():
        ran_s -= before[member_id][0]
        waited_s -= before[member_id][1]
        shares[member_id] = {"leader": group.members[member_id].addr == master,
                             "ran": round(ran_s / wall_s, 3), "waitedForCpu": round(waited_s / wall_s, 3),
                             "slept": round(max(wall_s - ran_s - waited_s, 0.0) / wall_s, 3)}
    return shares


def measure(kind: str, namesrv_addr: str, workdir: Path, count: int, size: int, inflight: int) -> dict[str, object]:
    with DLedgerBrokerGroup(namesrv_addr, workdir, {"n0": kind, "n1": kind, "n2": kind}) as group:
        group.start()
        group.wait_for_master()
        topic = f"DLedgerBench{uuid.uuid4().hex[:8]}"
        # The warm-up (and the topic's creation) before the CPU is read: a first short run.
        run_peer("producer-bench", namesrv=namesrv_addr, topic=topic, mode="async", count=2000, size=size,
                 inflight=inflight, warmup=500, timeout=600)
        load_before = os.getloadavg()
        cpu_before = _group_cpu_s(group)
        threads_before = _main_threads(group)
        started = time.monotonic()
        result = run_peer("producer-bench", namesrv=namesrv_addr, topic=topic, mode="async", count=count,
                          size=size, inflight=inflight, warmup=0, timeout=1200)[-1]
        wall_s = time.monotonic() - started
        cpu_s = _group_cpu_s(group) - cpu_before
        # A JVM's main thread only waits for the others: the figure says something of ours alone.
        main_threads = _main_thread_shares(group, threads_before, wall_s) if kind == "python" else None
        return {"msgsPerSec": result["msgsPerSec"], "p50Ms": result["p50Ms"], "p99Ms": result["p99Ms"],
                "errors": result["errors"], "errorsByKind": result["errorsByKind"],
                "groupCpuUsPerMessage": round(cpu_s / result["messages"] * 1e6, 1),
                "mainThreads": main_threads,
                "loadBefore": load_before, "loadAfter": os.getloadavg()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--inflight", type=int, default=64)
    parser.add_argument("--kinds", default="python,java", help="which groups to measure, in order")
    parser.add_argument("--keep", action="store_true", help="keep the members' stores and logs (a temporary directory)")
    args = parser.parse_args()
    build = ensure_built()
    work = Path(tempfile.mkdtemp(prefix="dledger-bench-"))
    namesrv = JavaNameServer(build=build, workdir=work / "namesrv")
    namesrv.start()
    try:
        results = {kind: measure(kind, namesrv.addr, work / kind, args.count, args.size, args.inflight)
                   for kind in args.kinds.split(",")}
    finally:
        namesrv.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)  # 780 MB of data files per group and run
    print(json.dumps({"benchmark": "dledger-group-send", "count": args.count, "size": args.size,
                      "inflight": args.inflight, "cpus": os.cpu_count(), "results": results}, indent=1))


if __name__ == "__main__":
    main()
