"""The broker benchmark: Java's own benchmark producer and consumer against our broker and against the
official Java broker in one run, with ASYNC_FLUSH and with SYNC_FLUSH; prints one JSON object.

    .venv/bin/python benchmarks/broker/run.py [--threads 16] [--size 1024] [--seconds 25]
                                              [--flush ASYNC_FLUSH,SYNC_FLUSH] [--brokers java,python]

For each flush mode and broker, on a fresh store and a topic of 8 queues:

1. Throughput: RocketMQ's benchmark ``Consumer`` and ``Producer`` (``org.apache.rocketmq.example.benchmark``)
   run together for ``--seconds``; the producer sends ``--size``-byte messages synchronously from
   ``--threads`` threads. Each prints every 10 s its TPS and the average/maximum RT over the last 10 s;
   the last full window is reported. rocketmq-example 4.9.x is not on Maven Central (its newest 4.x
   release there is 4.7.0); the 4.7.0 benchmark classes use only the public client API, so they run here
   with the 4.9.8 client jars on the classpath (the harness's peer classpath).
2. Latency: the official benchmark keeps only averages and maxima, so ``SendLatencyBench`` (a peer in
   compat-tests/java) runs the same send loop (same threads, size, producer settings) and times every send:
   percentiles p50/p90/p99/p99.9.

3. Replication (``--replication ASYNC_MASTER,SYNC_MASTER``): a master and a slave (ours with ours, Java's
   with Java's; ASYNC_FLUSH) under the same throughput and latency runs, while the slave's lag
   (master CommitLog end - slave CommitLog end, from GET_BROKER_RUNTIME_INFO) is sampled every 0.5 s.

Both brokers get the same store sizes (64 MiB CommitLog files) and register with one official name server;
the Java broker runs with a 1 GiB heap. Ratios are ``python / java``: above 1 is better for TPS, below 1 is
better for latencies.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "compat-tests"))

from harness import JavaBroker, JavaNameServer, ensure_built, wire  # noqa: E402
from harness.peers import _client_env, client_home  # noqa: E402
from harness.ha import SLAVE, commit_log_max_offset  # noqa: E402
from harness.py_servers import PythonBroker  # noqa: E402

EXAMPLE_ARTIFACT = "org.apache.rocketmq:rocketmq-example:4.7.0"
EXAMPLE_JAR = Path.home() / ".m2/repository/org/apache/rocketmq/rocketmq-example/4.7.0/rocketmq-example-4.7.0.jar"
BENCH_PRODUCER = "org.apache.rocketmq.example.benchmark.Producer"
BENCH_CONSUMER = "org.apache.rocketmq.example.benchmark.Consumer"
LATENCY_BENCH = "org.rocketmqpy.compat.SendLatencyBench"
CLIENT_JVM = ["-Xms512m", "-Xmx512m"]
JAVA_BROKER_JVM = ["-Xms1g", "-Xmx1g", "-XX:MaxDirectMemorySize=1g"]
QUEUES = 8
UPDATE_AND_CREATE_TOPIC = 17

_PRODUCER_LINE = re.compile(r"Send TPS: (\d+) Max RT: (\d+) Average RT:\s+([\d.NaN]+) Send Failed: (\d+) "
                            r"Response Failed: (\d+)")
_CONSUMER_LINE = re.compile(r"TPS: (\d+) FAIL: (\d+) AVG\(B2C\) RT:\s+([\d.NaN]+) AVG\(S2C\) RT:\s+([\d.NaN]+) "
                            r"MAX\(B2C\) RT: (\d+) MAX\(S2C\) RT: (\d+)")


def example_jar() -> Path:
    if not EXAMPLE_JAR.exists():
        subprocess.run(["mvn", "-B", "-q", "dependency:get", f"-Dartifact={EXAMPLE_ARTIFACT}", "-Dtransitive=false"],
                       check=True)
    return EXAMPLE_JAR


def _java(build, classpath: str, main: str, *args: str) -> list[str]:
    home = client_home()
    return [build.java, *CLIENT_JVM, f"-Duser.home={home}", f"-Drocketmq.client.logRoot={home / 'logs'}",
            "-cp", classpath, main, *args]


def _create_topic(broker_addr: str, topic: str) -> None:
    header, _ = wire.request(broker_addr, UPDATE_AND_CREATE_TOPIC, {
        "topic": topic, "defaultTopic": "TBW102", "readQueueNums": str(QUEUES), "writeQueueNums": str(QUEUES),
        "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"})
    if header.get("code") != 0:
        raise RuntimeError(f"creating {topic} on {broker_addr} failed: {header}")


def _last(pattern: re.Pattern, text: str) -> tuple | None:
    found = pattern.findall(text)
    return found[-1] if found else None


def throughput(build, classpath: str, namesrv: str, topic: str, threads: int, size: int, seconds: int) -> dict:
    consumer = subprocess.Popen(_java(build, classpath, BENCH_CONSUMER, "-n", namesrv, "-t", topic),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_client_env())
    time.sleep(4)
    producer = subprocess.Popen(_java(build, classpath, BENCH_PRODUCER, "-n", namesrv, "-t", topic, "-w",
                                      str(threads), "-s", str(size)),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_client_env())
    time.sleep(seconds)
    for process in (producer, consumer):
        process.kill()
    produced, consumed = producer.communicate()[0], consumer.communicate()[0]
    send = _last(_PRODUCER_LINE, produced)
    receive = _last(_CONSUMER_LINE, consumed)
    if send is None or receive is None:
        raise RuntimeError(f"the benchmark printed no statistics:\n{produced[-2000:]}\n{consumed[-2000:]}")
    return {
        "send_tps": int(send[0]), "send_avg_rt_ms": float(send[2]), "send_max_rt_ms": int(send[1]),
        "send_failed": int(send[3]) + int(send[4]),
        "consume_tps": int(receive[0]), "consume_avg_store_to_consumer_ms": float(receive[3]),
        "consume_max_store_to_consumer_ms": int(receive[5]),
    }


def latency(build, classpath: str, namesrv: str, topic: str, threads: int, size: int, warmup: int,
            measure: int) -> dict:
    process = subprocess.run(_java(build, classpath, LATENCY_BENCH, namesrv, topic, str(threads), str(size),
                                   str(warmup), str(measure)),
                             capture_output=True, text=True, env=_client_env(), timeout=warmup + measure + 120)
    lines = [line for line in process.stdout.splitlines() if line.startswith("{")]
    if process.returncode != 0 or not lines:
        raise RuntimeError(f"SendLatencyBench failed:\n{process.stdout[-2000:]}\n{process.stderr[-2000:]}")
    return json.loads(lines[-1])


def start_broker(kind: str, namesrv, build, work: Path, flush: str):
    if kind == "java":
        broker = JavaBroker(namesrv, build=build, workdir=work, broker_name=f"bench-java-{flush.lower()}",
                            extra_config={"flushDiskType": flush}, jvm_opts=JAVA_BROKER_JVM)
    else:
        broker = PythonBroker(namesrv.addr, work, broker_name=f"bench-python-{flush.lower()}", flushDiskType=flush)
    return broker.start()


def run_one(kind: str, flush: str, namesrv, build, classpath: str, args, work: Path) -> dict:
    broker = start_broker(kind, namesrv, build, work, flush)
    try:
        topic = f"BrokerBench_{kind}_{flush}"
        _create_topic(broker.addr, topic)
        time.sleep(1)
        result = throughput(build, classpath, namesrv.addr, topic, args.threads, args.size, args.seconds)
        latency_topic = topic + "_latency"
        _create_topic(broker.addr, latency_topic)
        result.update({f"latency_{key}": value for key, value in latency(
            build, classpath, namesrv.addr, latency_topic, args.threads, args.size, 3, args.latency_seconds).items()
                       if key not in ("threads", "size")})
        return result
    finally:
        broker.stop()


class LagSampler:
    """Samples how many CommitLog bytes the slave misses, every 0.5 s, in a thread."""

    def __init__(self, master_addr: str, slave_addr: str) -> None:
        self.master_addr, self.slave_addr = master_addr, slave_addr
        self.samples: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            try:
                master = commit_log_max_offset(self.master_addr)
                slave = commit_log_max_offset(self.slave_addr)
            except (OSError, RuntimeError, ValueError):
                continue
            self.samples.append(max(master - slave, 0))

    def __enter__(self) -> "LagSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> dict:
        samples = sorted(self.samples) or [0]
        p99 = samples[min(int(len(samples) * 0.99), len(samples) - 1)]
        return {"lag_bytes_mean": round(sum(samples) / len(samples)), "lag_bytes_p99": p99,
                "lag_bytes_max": samples[-1], "lag_samples": len(self.samples)}


def start_pair(kind: str, namesrv, build, work: Path, role: str):
    name = f"bench-{kind}-{role.lower()}"
    if kind == "java":
        master = JavaBroker(namesrv, build=build, workdir=work / "master", broker_name=name,
                            extra_config={"brokerRole": role}, jvm_opts=JAVA_BROKER_JVM).start()
        slave = JavaBroker(namesrv, build=build, workdir=work / "slave", broker_name=name, extra_config=SLAVE,
                           jvm_opts=JAVA_BROKER_JVM).start()
    else:
        master = PythonBroker(namesrv.addr, work / "master", name, brokerRole=role).start()
        slave = PythonBroker(namesrv.addr, work / "slave", name, **SLAVE).start()
    return master, slave


def run_replicated(kind: str, role: str, namesrv, build, classpath: str, args, work: Path) -> dict:
    master, slave = start_pair(kind, namesrv, build, work, role)
    try:
        topic = f"ReplicationBench_{kind}_{role}"
        _create_topic(master.addr, topic)
        time.sleep(5)  # the slave connects to the master's HA port after its first registration
        latency_topic = topic + "_latency"
        _create_topic(master.addr, latency_topic)
        with LagSampler(master.addr, slave.addr) as lag:  # over both the throughput and the latency runs
            result = throughput(build, classpath, namesrv.addr, topic, args.threads, args.size, args.seconds)
            result.update({f"latency_{key}": value for key, value in latency(
                build, classpath, namesrv.addr, latency_topic, args.threads, args.size, 3,
                args.latency_seconds).items() if key not in ("threads", "size")})
        result.update(lag.summary())
        return result
    finally:
        slave.stop()
        master.stop()


def ratios(python: dict, java: dict) -> dict:
    keys = ("send_tps", "consume_tps", "latency_tps", "send_avg_rt_ms", "latency_p50Ms", "latency_p90Ms",
            "latency_p99Ms", "latency_p999Ms", "lag_bytes_mean", "lag_bytes_p99")
    return {key: round(python[key] / java[key], 3) if java.get(key) else None
            for key in keys if key in python and key in java}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--seconds", type=int, default=25, help="how long the official benchmark runs (>= 22)")
    parser.add_argument("--latency-seconds", type=int, default=10)
    parser.add_argument("--flush", default="ASYNC_FLUSH,SYNC_FLUSH")
    parser.add_argument("--brokers", default="java,python")
    parser.add_argument("--replication", default="ASYNC_MASTER,SYNC_MASTER",
                        help="master roles to run with a slave ('' for none)")
    args = parser.parse_args()

    build = ensure_built()
    classpath = f"{example_jar()}:{build.peers_classpath}"
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="broker-bench-") as work:
        namesrv = JavaNameServer(build=build, workdir=Path(work) / "namesrv").start()
        try:
            for flush in filter(None, args.flush.split(",")):
                results[flush] = {}
                for kind in args.brokers.split(","):
                    print(f"[bench] {flush} {kind} broker ...", file=sys.stderr, flush=True)
                    results[flush][kind] = run_one(kind, flush, namesrv, build, classpath, args,
                                                   Path(work) / f"{kind}-{flush}")
                if {"java", "python"} <= set(results[flush]):
                    results[flush]["python_vs_java"] = ratios(results[flush]["python"], results[flush]["java"])
            for role in filter(None, args.replication.split(",")):
                key = f"replication_{role}"
                results[key] = {}
                for kind in args.brokers.split(","):
                    print(f"[bench] {role} + SLAVE, {kind} pair ...", file=sys.stderr, flush=True)
                    results[key][kind] = run_replicated(kind, role, namesrv, build, classpath, args,
                                                        Path(work) / f"{kind}-{role}")
                if {"java", "python"} <= set(results[key]):
                    results[key]["python_vs_java"] = ratios(results[key]["python"], results[key]["java"])
        finally:
            namesrv.stop()
    from rocketmq_py import codec

    output = {
        "benchmark": "RocketMQ example benchmark Producer/Consumer 4.7.0 on the 4.9.8 client, plus SendLatencyBench",
        "threads": args.threads, "message_size": args.size, "queues": QUEUES, "seconds": args.seconds,
        "python_codec": codec.IMPLEMENTATION, "results": results,
    }
    print(json.dumps(output, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
