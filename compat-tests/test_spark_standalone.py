"""Issue 14: the rocketmq sources on a standalone Spark cluster (a master and two workers, separate JVMs
started from the pyspark install), against the official Java broker.

Executors are processes of their own that receive the pickled partitions; each task records its pid
(``ROCKETMQ_PY_SPARK_TASK_LOG``) and the tests check that the reads ran in Python workers under the
executor JVMs of both workers, never in the driver. One cluster serves the whole module.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from harness import mqadmin, unique_name
from harness.spark import ROOT, StandaloneCluster, pyspark_or_skip, python_env, spark_home

pyspark_or_skip()

from rocketmq_py.spark.tasklog import ENV as TASK_LOG_ENV  # noqa: E402

#: Spark on a loaded 2-core machine is slow: each test may take this long (pytest-timeout), set-up included.
TEST_TIMEOUT_S = 900
pytestmark = [pytest.mark.slow, pytest.mark.timeout(TEST_TIMEOUT_S)]

ROWS = int(os.environ.get("SPARK_STANDALONE_ROWS", "100000"))
#: spark-submit drivers started by the tests, killed when the module ends if still running.
SUBMITTED: list[subprocess.Popen] = []
QUEUES = 4


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    cluster = StandaloneCluster(tmp_path_factory.mktemp("spark-standalone")).start()
    task_log = tmp_path_factory.mktemp("spark-task-log")
    os.environ[TASK_LOG_ENV] = str(task_log)  # spark-submit drivers started by the tests pass it on
    try:
        spark = cluster.session(task_log=task_log)
        yield cluster, spark, task_log
        spark.stop()
    finally:
        for driver in SUBMITTED:
            if driver.poll() is None:
                os.killpg(driver.pid, signal.SIGKILL)
                driver.wait(30)
        os.environ.pop(TASK_LOG_ENV, None)
        cluster.stop()


def _tasks(task_log: Path, kind: str) -> list[dict]:
    lines = [json.loads(line) for path in task_log.glob("tasks-*.jsonl") for line in path.read_text().splitlines()]
    return [line for line in lines if line["kind"] == kind]


def _workers_that_ran(cluster: StandaloneCluster, tasks: list[dict]) -> set[int]:
    """The Worker pids under which the tasks ran. Each task must have run in a Python worker under an
    executor JVM (CoarseGrainedExecutorBackend) under one of the Workers, as recorded when it ran (a killed
    driver's executors are gone by now)."""
    assert tasks, "no task recorded where it ran"
    workers = set()
    for task in tasks:
        assert task["pid"] != os.getpid(), "a task ran in the driver"
        assert task["executorJvm"] is not None, f"task {task} did not run under an executor JVM"
        under = [pid for pid in task["ancestors"] if pid in cluster.worker_pids()]
        assert under, f"task {task} did not run under a Worker"
        workers.add(under[0])
    return workers


def _assert_ran_on_executors(cluster: StandaloneCluster, tasks: list[dict]) -> None:
    """Every task ran on an executor, and the tasks ran under both workers."""
    assert _workers_that_ran(cluster, tasks) == set(cluster.worker_pids()), "the tasks did not run on both workers"


def _topic(java_namesrv, java_broker, prefix: str) -> str:
    topic = unique_name(prefix)
    mqadmin("updateTopic", "-b", java_broker.addr, "-t", topic, "-r", str(QUEUES), "-w", str(QUEUES),
            namesrv=java_namesrv.addr)
    return topic


def test_batch_write_and_read_of_100k_messages_on_two_executors(standalone, java_namesrv, java_broker):
    cluster, spark, task_log = standalone
    namesrv = java_namesrv.addr
    topic = _topic(java_namesrv, java_broker, "StandaloneBatch")
    spark.range(0, ROWS, numPartitions=4).selectExpr("cast(concat('body-', id) as binary) as body",
                                                     "concat('T', id % 3) as tags") \
        .write.format("rocketmq").option("nameServer", namesrv).option("topic", topic).mode("append").save()
    writes = _tasks(task_log, "write")
    assert sum(t["messages"] for t in writes) >= ROWS
    _assert_ran_on_executors(cluster, writes)

    df = spark.read.format("rocketmq").option("nameServer", namesrv).option("topic", topic) \
        .option("minPartitions", "8").load()
    summary = df.selectExpr("count(*) as n", "count(distinct body) as bodies",
                            "count(distinct queueId, queueOffset) as positions").collect()[0]
    # Every row arrived and was read once. The sink is at-least-once: a write task that failed after some
    # sends (other than the broker's flow control, which is sent again) is rerun by Spark and sends them
    # again, so the topic may hold more messages than rows; the read returns each stored message once.
    assert summary.bodies == ROWS
    assert summary.n == summary.positions >= ROWS
    reads = [t for t in _tasks(task_log, "read") if t["topic"] == topic]
    assert sum(t["end"] - t["start"] for t in reads) == summary.n
    _assert_ran_on_executors(cluster, reads)


def _submit(cluster: StandaloneCluster, script: Path, *args: str, log: Path) -> subprocess.Popen:
    env = python_env()
    conf = ["--conf", f"spark.executorEnv.{TASK_LOG_ENV}={os.environ[TASK_LOG_ENV]}",
            "--conf", "spark.executor.memory=512m", "--conf", "spark.driver.memory=512m",
            "--conf", "spark.cores.max=2", "--conf", "spark.executor.cores=1", "--conf", "spark.ui.enabled=false",
            "--conf", "spark.driver.host=127.0.0.1", "--conf", f"spark.executorEnv.PYTHONPATH={env['PYTHONPATH']}"]
    out = open(log, "ab")
    process = subprocess.Popen([str(spark_home() / "bin" / "spark-submit"), "--master", cluster.master_url, *conf,
                                str(script), *args], stdout=out, stderr=subprocess.STDOUT, env=env,
                               start_new_session=True)
    SUBMITTED.append(process)
    return process


def _deadline() -> float:
    """When a test stops waiting for its Spark jobs: its whole budget but two minutes (for the module's set-up,
    which its first test pays, and the report), not a fixed wait per job. A job is waited for until it ends: at a
    load of ~20 on two cores a three-micro-batch stream took more than the 300 s a fixed wait allowed it."""
    return time.monotonic() + TEST_TIMEOUT_S - 120


def _finish(process: subprocess.Popen, log: Path, deadline: float) -> None:
    try:
        code = process.wait(max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)
        raise AssertionError(f"spark-submit did not finish in the test's time: {log.read_text()[-3000:]}")
    assert code == 0, log.read_text(errors="replace")[-4000:]


def _send_bodies(spark, namesrv: str, topic: str, bodies: list[str]) -> None:
    spark.createDataFrame([(b,) for b in bodies], "body string").write.format("rocketmq") \
        .option("nameServer", namesrv).option("topic", topic).mode("append").save()


def test_stream_killed_and_restarted_writes_every_message_once(standalone, java_namesrv, java_broker, tmp_path):
    cluster, spark, task_log = standalone
    namesrv = java_namesrv.addr
    topic = _topic(java_namesrv, java_broker, "StandaloneStream")
    first = [f"first-{i}" for i in range(3000)]
    _send_bodies(spark, namesrv, topic, first)
    job = ROOT / "compat-tests" / "harness" / "spark_stream_job.py"
    out, checkpoint, log = tmp_path / "out", tmp_path / "checkpoint", tmp_path / "driver.log"
    deadline = _deadline()
    driver = _submit(cluster, job, namesrv, topic, str(out), str(checkpoint), log=log)
    # Kill the driver (SIGKILL, no clean stop) once some micro-batches are committed, before all are.
    while len(list((checkpoint / "commits").glob("[0-9]*"))) < 2:
        assert driver.poll() is None, log.read_text(errors="replace")[-4000:]
        assert time.monotonic() < deadline, "no two micro-batches committed in the test's time: " + \
            log.read_text()[-3000:]
        time.sleep(0.5)
    os.killpg(driver.pid, signal.SIGKILL)
    driver.wait(30)
    second = [f"second-{i}" for i in range(1000)]
    _send_bodies(spark, namesrv, topic, second)
    _finish(_submit(cluster, job, namesrv, topic, str(out), str(checkpoint), "--available-now", log=log), log,
            deadline)
    rows = spark.read.parquet(str(out)).collect()
    assert sorted(r.body for r in rows) == sorted(first + second), "a message lost or written twice"
    assert len({(r.queueId, r.queueOffset) for r in rows}) == len(first) + len(second)
    _assert_ran_on_executors(cluster, [t for t in _tasks(task_log, "read") if t["topic"] == topic])


def test_store_source_reads_the_java_brokers_files_on_the_executors(standalone, java_namesrv, java_broker):
    cluster, spark, task_log = standalone
    namesrv = java_namesrv.addr
    topic = _topic(java_namesrv, java_broker, "StandaloneStore")
    _send_bodies(spark, namesrv, topic, [f"s{i}" for i in range(500)])
    from_broker = sorted((r.queueId, r.queueOffset, r.msgId) for r in spark.read.format("rocketmq")
                         .option("nameServer", namesrv).option("topic", topic).load().collect())
    deadline = _deadline()  # the files catch up with the broker within a flush interval, on a quiet machine
    while True:
        from_store = sorted((r.queueId, r.queueOffset, r.msgId) for r in spark.read.format("rocketmq.store")
                            .option("topic", topic).load(str(java_broker.store_dir)).collect())
        if from_store == from_broker or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert len(from_broker) == 500 and from_store == from_broker
    # One task per CommitLog file: how many files the session's broker has depends on what the other tests
    # wrote (64 MiB each), often one, so this read may fit on one worker. Each file was read, on an executor.
    store_reads = _tasks(task_log, "store-read")
    _workers_that_ran(cluster, store_reads)
    files = {str(path) for path in (java_broker.store_dir / "commitlog").iterdir() if path.name.isdigit()}
    assert files <= {task["file"] for task in store_reads}


def test_spark_submit_of_the_example_pipeline_batch_and_stream(standalone, java_namesrv, java_broker, tmp_path):
    cluster, spark, _ = standalone
    namesrv = java_namesrv.addr
    source = _topic(java_namesrv, java_broker, "StandaloneOrders")
    batch_target = _topic(java_namesrv, java_broker, "StandaloneCounts")
    stream_target = _topic(java_namesrv, java_broker, "StandaloneStreamCounts")
    spark.range(0, 300, numPartitions=2).selectExpr("cast(id as string) as body", "concat('T', id % 3) as tags") \
        .write.format("rocketmq").option("nameServer", namesrv).option("topic", source).mode("append").save()
    example, log = ROOT / "examples" / "spark_pipeline.py", tmp_path / "example.log"
    deadline = _deadline()
    _finish(_submit(cluster, example, "--namesrv", namesrv, "--source", source, "--target", batch_target,
                    log=log), log, deadline)
    # --stream: the checkpoint goes to the rocketmq sink as writeStream.option("checkpointLocation", ...).
    _finish(_submit(cluster, example, "--namesrv", namesrv, "--source", source, "--target", stream_target,
                    "--stream", "--available-now", "--max-per-trigger", "100",
                    "--checkpoint", str(tmp_path / "checkpoint"), log=log), log, deadline)

    def counts(topic: str) -> dict:
        rows = spark.read.format("rocketmq").option("nameServer", namesrv).option("topic", topic).load() \
            .selectExpr("cast(body as string) as body").collect()
        latest: dict = {}
        for row in rows:  # complete mode writes every tag's running count at each micro-batch
            found = json.loads(row.body)
            latest[found["tag"]] = max(latest.get(found["tag"], 0), found["count"])
        return latest

    assert counts(batch_target) == {"T0": 100, "T1": 100, "T2": 100}
    assert counts(stream_target) == {"T0": 100, "T1": 100, "T2": 100}
