"""Spark's ``rocketmq`` source next to the raw Python lite pull consumer, on the same range, in one run.

Starts the official name server and broker with the compat harness, preloads N messages of 1 KiB into a
topic of 8 queues with the Java peer ``produce-bulk``, reads them all once untimed (so neither reader meets
a cold broker), then times, one after the other:

* ``raw_lite_pull``: the blocking ``LitePullConsumer`` assigned every queue, ``poll()`` until N messages;
* ``spark``: ``spark.read.format("rocketmq").load()`` over the same [earliest, latest) range on a
  standalone cluster (a master and two one-core workers started from the pyspark install, as in
  ``compat-tests/test_spark_standalone.py``; ``--master local`` for ``local[2]``), materialized into the
  full DataFrame schema by the ``noop`` sink (planning included, the SparkSession already started).

CPU time per message is read from ``/proc`` for this process (the raw consumer) and for the executor
JVMs with their Python workers (Spark).

The goal (issue 6) is ``spark/raw`` >= 0.8 in messages per second. Prints one JSON object.

Usage: ``python benchmarks/spark/bench_spark.py [--count N] [--body-size B] [--min-partitions P]``
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "compat-tests"))

from harness import JavaBroker, JavaNameServer  # noqa: E402
from harness.peers import preload_topic  # noqa: E402
from harness.spark import StandaloneCluster  # noqa: E402

from rocketmq_py import codec  # noqa: E402
from rocketmq_py.client.consumer import LitePullConsumer  # noqa: E402

QUEUES = 8


def _cpu_seconds(pids: list[int]) -> float:
    """User + system CPU of the processes and their children that have been waited for, from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
    return total / ticks


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        for child in children.get(pid, []):
            found.append(child)
            todo.append(child)
    return found


def raw_lite_pull(namesrv: str, topic: str, count: int) -> dict:
    consumer = LitePullConsumer(f"bench_lite_{uuid.uuid4().hex[:6]}", namesrv_addr=namesrv,
                                consume_from_where="CONSUME_FROM_FIRST_OFFSET", auto_commit=False)
    began = time.perf_counter()
    cpu_began = time.process_time()
    consumer.start()
    consumer.assign(consumer.fetch_message_queues(topic))
    seen = consumed = 0
    deadline = time.monotonic() + 900
    while seen < count and time.monotonic() < deadline:
        messages = consumer.poll(1000)
        seen += len(messages)
        consumed += sum(len(m.body) for m in messages)
    seconds = time.perf_counter() - began
    cpu = time.process_time() - cpu_began
    consumer.shutdown()
    if seen < count:
        raise RuntimeError(f"the lite pull consumer got {seen} of {count}")
    return {"messages": seen, "bytes": consumed, "seconds": round(seconds, 3), "msgsPerSec": round(seen / seconds, 1),
            "cpuMicrosPerMsg": round(cpu / seen * 1e6, 2)}


def spark_session():
    from pyspark.sql import SparkSession

    from rocketmq_py.spark import register

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    spark = (SparkSession.builder.master("local[2]").appName("rocketmq-spark-bench")
             .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.ui.showConsoleProgress", "false").config("spark.log.level", "ERROR")
             .config("spark.driver.memory", "2g").getOrCreate())
    register(spark)
    return spark


def spark_read(spark, namesrv: str, topic: str, count: int, min_partitions: int | None,
               cpu_roots: list[int]) -> dict:
    reader = spark.read.format("rocketmq").option("nameServer", namesrv).option("topic", topic)
    if min_partitions:
        reader = reader.option("minPartitions", str(min_partitions))
    pids = [pid for root in cpu_roots for pid in _descendants(root)]
    cpu_began = _cpu_seconds(pids)
    began = time.perf_counter()
    reader.load().write.format("noop").mode("overwrite").save()
    seconds = time.perf_counter() - began
    cpu = _cpu_seconds(pids) - cpu_began
    return {"messages": count, "seconds": round(seconds, 3), "msgsPerSec": round(count / seconds, 1),
            "cpuMicrosPerMsg": round(cpu / count * 1e6, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--body-size", type=int, default=1024)
    parser.add_argument("--min-partitions", type=int, default=None)
    parser.add_argument("--master", choices=("standalone", "local"), default="standalone")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="rmq-spark-bench-"))
    topic = f"SparkBench_{uuid.uuid4().hex[:6]}"
    report: dict = {
        "benchmark": "spark", "messages": args.count, "bodySize": args.body_size, "queues": QUEUES,
        "master": "standalone, 2 workers x 1 core" if args.master == "standalone" else "local[2]", "python": platform.python_version(), "codec": codec.IMPLEMENTATION,
        "cpus": os.cpu_count(),
    }
    cluster = None
    if args.master == "standalone":
        cluster = StandaloneCluster(workdir / "spark").start()
        spark = cluster.session("rocketmq-spark-bench")
        cpu_roots = cluster.worker_pids()  # executor JVMs and their Python workers descend from the workers
    else:
        spark = spark_session()
        cpu_roots = [os.getpid()]
    with JavaNameServer(workdir=workdir / "namesrv") as namesrv, \
            JavaBroker(namesrv, workdir=workdir / "broker", broker_name="bench-broker") as broker:
        report["preload"] = preload_topic(namesrv.addr, broker.addr, topic, QUEUES, args.count, args.body_size,
                                          timeout=1800)
        raw_lite_pull(namesrv.addr, topic, args.count)  # untimed warm-up of the broker's pull path
        spark_read(spark, namesrv.addr, topic, args.count, args.min_partitions, cpu_roots)  # warm Python workers
        results = {"raw_lite_pull": raw_lite_pull(namesrv.addr, topic, args.count)}
        print(f"raw_lite_pull: {results['raw_lite_pull']}", file=sys.stderr)
        results["spark"] = spark_read(spark, namesrv.addr, topic, args.count, args.min_partitions, cpu_roots)
        print(f"spark: {results['spark']}", file=sys.stderr)
    spark.stop()
    if cluster is not None:
        cluster.stop()
    report["results"] = results
    report["ratio"] = {"spark/raw_lite_pull msgsPerSec": round(
        results["spark"]["msgsPerSec"] / results["raw_lite_pull"]["msgsPerSec"], 3)}
    report["goal"] = 0.8
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
