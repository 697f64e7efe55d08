"""A 3-member DLedger group of our brokers against one of Java 4.9 brokers (issue 31, must-show 5).

For each kind, a fresh group (``enableDLegerCommitLog=true``, the compat harness's broker keys) with the Java
name server; the Java ``producer-bench`` sends to it (async, ``--inflight`` sends in flight, after a warm-up),
and the group's CPU (all three broker processes, as the kernel counts it) is read around the measured sends.
Prints one JSON object: per kind, the send TPS, p50 and p99 of a send (ms), the failed sends by kind (the
broker's response code and remark, or the client's exception), the group's CPU µs per message, and the
machine's load average before and after (the machine is shared: compare runs taken side by side).

    .venv/bin/python benchmarks/broker/dledger.py [--count 20000] [--size 1024] [--inflight 64]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "compat-tests"))

from harness import JavaNameServer, ensure_built  # noqa: E402
from harness.cpu import process_tree_cpu_s  # noqa: E402
from harness.dledger_brokers import DLedgerBrokerGroup  # noqa: E402
from harness.peers import run_peer  # noqa: E402


def _load() -> list[float]:
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def _group_cpu_s(group: DLedgerBrokerGroup) -> float:
    return sum(process_tree_cpu_s(member.pid) for member in group.members.values() if member.pid is not None)


def measure(kind: str, namesrv_addr: str, workdir: Path, count: int, size: int, inflight: int) -> dict[str, object]:
    with DLedgerBrokerGroup(namesrv_addr, workdir, {"n0": kind, "n1": kind, "n2": kind}) as group:
        group.start()
        group.wait_for_master()
        topic = f"DLedgerBench{uuid.uuid4().hex[:8]}"
        # The warm-up (and the topic's creation) before the CPU is read: a first short run.
        run_peer("producer-bench", namesrv=namesrv_addr, topic=topic, mode="async", count=2000, size=size,
                 inflight=inflight, warmup=500, timeout=600)
        load_before = _load()
        cpu_before = _group_cpu_s(group)
        result = run_peer("producer-bench", namesrv=namesrv_addr, topic=topic, mode="async", count=count,
                          size=size, inflight=inflight, warmup=0, timeout=1200)[-1]
        cpu_s = _group_cpu_s(group) - cpu_before
        return {"msgsPerSec": result["msgsPerSec"], "p50Ms": result["p50Ms"], "p99Ms": result["p99Ms"],
                "errors": result["errors"], "errorsByKind": result["errorsByKind"],
                "groupCpuUsPerMessage": round(cpu_s / result["messages"] * 1e6, 1),
                "loadBefore": load_before, "loadAfter": _load()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--inflight", type=int, default=64)
    parser.add_argument("--kinds", default="python,java", help="which groups to measure, in order")
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
    print(json.dumps({"benchmark": "dledger-group-send", "count": args.count, "size": args.size,
                      "inflight": args.inflight, "cpus": os.cpu_count(), "results": results}, indent=1))


if __name__ == "__main__":
    main()
