"""Issue 6: the ``rocketmq`` and ``rocketmq.store`` PySpark data sources on local[2], against the official
Java broker and against ours: a DataFrame written and read back row for row (and seen by the Java consumer),
a stream stopped and restarted over a file sink with a checkpoint, CommitLog files read without a broker,
and bad options refused before any Spark job runs."""
from __future__ import annotations

import base64
import os
import time
from pathlib import Path

import pytest
from harness import mqadmin, run_peer, unique_name
from harness.py_servers import PythonBroker
from harness.spark import local_session, pyspark_or_skip

pyspark_or_skip()

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]  # Spark on a loaded 2-core machine is slow

ROOT = Path(__file__).resolve().parent.parent
ROWS = int(os.environ.get("SPARK_TEST_ROWS", "100000"))
QUEUES = 4


@pytest.fixture(scope="module")
def spark():
    return local_session()


@pytest.fixture(scope="module")
def py_broker(py_namesrv, tmp_path_factory):
    broker = PythonBroker(py_namesrv.addr, tmp_path_factory.mktemp("spark-py-broker"),
                          broker_name="pybroker-spark").start()
    yield broker
    assert broker.stop() == 0, broker.log_text()[-3000:]


@pytest.fixture(params=["java", "ours"])
def cluster(request):
    """(name server address, broker) of the Java 4.9.x broker or of our broker."""
    if request.param == "java":
        return request.getfixturevalue("java_namesrv").addr, request.getfixturevalue("java_broker")
    return request.getfixturevalue("py_namesrv").addr, request.getfixturevalue("py_broker")


def _topic(namesrv: str, broker, prefix: str) -> str:
    topic = unique_name(prefix)
    mqadmin("updateTopic", "-b", broker.addr, "-t", topic, "-r", str(QUEUES), "-w", str(QUEUES), namesrv=namesrv)
    return topic


def _reader(spark, namesrv: str, topic: str):
    return spark.read.format("rocketmq").option("nameServer", namesrv).option("topic", topic)


def _written(spark, count: int, start: int = 0):
    return spark.range(start, start + count, numPartitions=2).selectExpr(
        "cast(concat('body-', id) as binary) as body", "concat('T', id % 3) as tags",
        "concat('key-', id) as keys", "map('n', cast(id as string), 'origin', 'spark') as properties")


def test_write_then_read_back_every_row_and_the_java_consumer_gets_them(spark, cluster):
    namesrv, broker = cluster
    topic = _topic(namesrv, broker, "SparkRoundTrip")
    started = time.monotonic()
    _written(spark, ROWS).write.format("rocketmq").option("nameServer", namesrv).option("topic", topic) \
        .mode("append").save()
    wrote = time.monotonic()
    df = _reader(spark, namesrv, topic).option("minPartitions", "8").load()
    rows = df.selectExpr("body", "tags", "keys", "properties['n'] as n", "properties['origin'] as origin",
                         "queueId", "queueOffset", "msgId", "topic", "brokerName", "storeTimestamp").collect()
    read = time.monotonic()
    print(f"{ROWS} rows on {cluster}: write {wrote - started:.1f} s, read {read - wrote:.1f} s")
    assert len(rows) == ROWS
    got = sorted((bytes(r.body), r.tags, r.keys, r.n, r.origin) for r in rows)
    assert got == sorted((f"body-{i}".encode(), f"T{i % 3}", f"key-{i}", str(i), "spark") for i in range(ROWS))
    assert len({(r.queueId, r.queueOffset) for r in rows}) == ROWS
    assert {r.queueId for r in rows} == set(range(QUEUES))
    assert {(r.topic, r.brokerName) for r in rows} == {(topic, broker.broker_name)}
    assert all(r.storeTimestamp is not None for r in rows)

    *received, done = run_peer("consume", namesrv=namesrv, topic=topic, group=unique_name("SparkJava"), count=ROWS,
                               timeout_ms=240_000, timeout=300)
    assert done["count"] == ROWS and not done["timedOut"]
    assert {m["msgId"] for m in received} == {r.msgId for r in rows}
    sample = {r.msgId: r for r in rows[:200]}
    for message in received:
        if message["msgId"] in sample:
            row = sample[message["msgId"]]
            assert base64.b64decode(message["bodyBase64"]) == bytes(row.body)
            assert message["tags"] == row.tags and message["keys"] == row.keys
            assert message["properties"]["n"] == row.n


def test_stream_stopped_and_restarted_keeps_every_message_exactly_once(spark, cluster, tmp_path):
    namesrv, broker = cluster
    topic = _topic(namesrv, broker, "SparkStream")
    writer = spark.createDataFrame([(f"first-{i}",) for i in range(200)], "body string")
    writer.write.format("rocketmq").option("nameServer", namesrv).option("topic", topic).mode("append").save()

    def start(**trigger):
        stream = (spark.readStream.format("rocketmq").option("nameServer", namesrv).option("topic", topic)
                  .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "40").load()
                  .selectExpr("cast(body as string) as body", "queueId", "queueOffset"))
        return (stream.writeStream.format("parquet").option("path", str(tmp_path / "sink"))
                .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(**trigger).start())

    query = start(processingTime="1 second")
    deadline = time.monotonic() + 120
    while len([p for p in query.recentProgress if p["numInputRows"] > 0]) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    query.stop()
    first = [p["numInputRows"] for p in query.recentProgress]
    assert 0 < sum(first) < 200, "stopped in the middle"

    spark.createDataFrame([(f"second-{i}",) for i in range(100)], "body string").write.format("rocketmq") \
        .option("nameServer", namesrv).option("topic", topic).mode("append").save()
    query = start(availableNow=True)
    query.awaitTermination(180)
    second = [p["numInputRows"] for p in query.recentProgress]
    assert all(n <= 40 for n in first + second), (first, second)
    assert sum(first) + sum(second) == 300

    sink = spark.read.parquet(str(tmp_path / "sink")).collect()
    assert sorted(r.body for r in sink) == sorted([f"first-{i}" for i in range(200)]
                                                  + [f"second-{i}" for i in range(100)])
    assert len({(r.queueId, r.queueOffset) for r in sink}) == 300


def _consumer_view(df):
    return sorted((r.topic, r.queueId, r.queueOffset, r.msgId, bytes(r.body), r.tags, r.keys,
                   tuple(sorted((r.properties or {}).items())), r.bornTimestamp, r.storeTimestamp, r.bornHost)
                  for r in df.collect())


def test_store_files_read_as_a_consumer_reads_them(spark, cluster):
    namesrv, broker = cluster
    topic = _topic(namesrv, broker, "SparkStore")
    _written(spark, 500).write.format("rocketmq").option("nameServer", namesrv).option("topic", topic) \
        .mode("append").save()
    from_broker = _consumer_view(_reader(spark, namesrv, topic).load())
    deadline = time.monotonic() + 30
    while True:  # the broker's CommitLog pages are shared with the file at once; flushing is not needed
        from_store = _consumer_view(spark.read.format("rocketmq.store").option("topic", topic)
                                    .load(str(broker.store_dir)))
        if from_store == from_broker or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert len(from_broker) == 500
    assert from_store == from_broker
    everything = spark.read.format("rocketmq.store").load(str(broker.store_dir / "commitlog"))
    assert everything.where(f"topic = '{topic}'").count() == 500


def _no_job_runs(spark, action, message: str) -> None:
    group = unique_name("bad-options")
    spark.sparkContext.setJobGroup(group, "bad options")
    try:
        with pytest.raises(Exception, match=message):
            action()
    finally:
        spark.sparkContext.setJobGroup("", "")
    assert list(spark.sparkContext.statusTracker().getJobIdsForGroup(group)) == []


def test_bad_options_get_a_clear_error_before_any_job(spark, java_namesrv, java_broker):
    namesrv = java_namesrv.addr
    topic = _topic(namesrv, java_broker, "SparkBad")

    def base():  # a DataFrameReader keeps the options given to it, so each case starts a new one
        return spark.read.format("rocketmq").option("nameServer", namesrv)

    _no_job_runs(spark, lambda: base().load().collect(), "option topic is required")
    _no_job_runs(spark, lambda: base().option("topic", topic).option("startingOffsets", "{not json").load().collect(),
                 "neither earliest, latest nor valid JSON")
    _no_job_runs(spark, lambda: base().option("topic", topic).option("failOnDataLoss", "sometimes").load().collect(),
                 "failOnDataLoss='sometimes' must be true or false")
    _no_job_runs(spark, lambda: base().option("topic", topic).option("startingOffsets", "earliest!").load().collect(),
                 "startingOffsets")
    no_body = spark.createDataFrame([("x",)], "value string")
    _no_job_runs(spark, lambda: no_body.write.format("rocketmq").option("nameServer", namesrv)
                 .option("topic", topic).mode("append").save(), "needs a 'body' column")
    assert base().option("topic", topic).load().count() == 0, "nothing was sent"


def test_example_pipeline_counts_tags_into_another_topic(spark, java_namesrv, java_broker):
    import importlib.util

    spec = importlib.util.spec_from_file_location("spark_pipeline", ROOT / "examples" / "spark_pipeline.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    namesrv = java_namesrv.addr
    source, target = _topic(namesrv, java_broker, "SparkOrders"), _topic(namesrv, java_broker, "SparkCounts")
    _written(spark, 30).write.format("rocketmq").option("nameServer", namesrv).option("topic", source) \
        .mode("append").save()
    example.counts_per_tag(_reader(spark, namesrv, source).load()).write.format("rocketmq") \
        .option("nameServer", namesrv).option("topic", target).mode("append").save()
    counts = _reader(spark, namesrv, target).load().selectExpr("tags", "cast(body as string) as body").collect()
    assert sorted((r.tags, r.body) for r in counts) == [
        (f"T{i}", f'{{"tag":"T{i}","count":10}}') for i in range(3)]
