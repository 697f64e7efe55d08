"""Issue 14: the ``rocketmq`` data source through Spark Connect. A Spark Connect server started from the
pyspark install (``start-connect-server.sh``, local[2]) runs the source's partitions; this process is only a
Connect client (``sc://``), which registers the source classes and sends them to the server pickled.

A batch write and a read back, row for row, and an ``availableNow`` stream into a parquet sink, against the
official Java broker and against ours."""
from __future__ import annotations

import os

import pytest
from harness import mqadmin, unique_name
from harness.spark import CONNECT_MODE_ENV, ConnectServer, pyspark_or_skip

pyspark_or_skip()

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

ROWS = int(os.environ.get("SPARK_CONNECT_ROWS", "20000"))
QUEUES = 4


@pytest.fixture(scope="module")
def connect(tmp_path_factory):
    server = ConnectServer(tmp_path_factory.mktemp("spark-connect")).start()
    try:
        with server.session() as spark:
            yield spark
    finally:
        server.stop()
    # The Spark modules after this one start classic sessions in this process.
    assert not any(name in os.environ for name in CONNECT_MODE_ENV), "the process was left in Spark Connect mode"


@pytest.fixture(params=["java", "ours"])
def cluster(request):
    """(name server address, broker) of the Java 4.9.x broker or of our broker."""
    if request.param == "java":
        return request.getfixturevalue("java_namesrv").addr, request.getfixturevalue("java_broker")
    return request.getfixturevalue("py_namesrv").addr, request.getfixturevalue("py_broker")


def test_the_session_is_a_spark_connect_client(connect):
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    assert isinstance(connect, ConnectSession)


def test_batch_write_and_read_back_through_spark_connect(connect, cluster):
    namesrv, broker = cluster
    topic = unique_name("SparkConnect")
    mqadmin("updateTopic", "-b", broker.addr, "-t", topic, "-r", str(QUEUES), "-w", str(QUEUES), namesrv=namesrv)
    connect.range(0, ROWS, numPartitions=2).selectExpr(
        "cast(concat('body-', id) as binary) as body", "concat('T', id % 3) as tags", "concat('key-', id) as keys",
        "map('n', cast(id as string)) as properties",
    ).write.format("rocketmq").option("nameServer", namesrv).option("topic", topic).mode("append").save()

    df = connect.read.format("rocketmq").option("nameServer", namesrv).option("topic", topic).load()
    rows = df.selectExpr("cast(body as string) as body", "tags", "keys", "properties['n'] as n", "queueId",
                         "queueOffset", "brokerName").collect()
    assert len(rows) == ROWS
    assert sorted((r.body, r.tags, r.keys, r.n) for r in rows) == sorted(
        (f"body-{i}", f"T{i % 3}", f"key-{i}", str(i)) for i in range(ROWS))
    assert len({(r.queueId, r.queueOffset) for r in rows}) == ROWS
    assert {r.queueId for r in rows} == set(range(QUEUES))
    assert {r.brokerName for r in rows} == {broker.broker_name}


def test_a_stream_through_spark_connect_reads_every_message_once(connect, cluster, tmp_path):
    namesrv, broker = cluster
    topic = unique_name("SparkConnectStream")
    mqadmin("updateTopic", "-b", broker.addr, "-t", topic, "-r", str(QUEUES), "-w", str(QUEUES), namesrv=namesrv)
    connect.createDataFrame([(f"m-{i}",) for i in range(300)], "body string").write.format("rocketmq") \
        .option("nameServer", namesrv).option("topic", topic).mode("append").save()
    query = (connect.readStream.format("rocketmq").option("nameServer", namesrv).option("topic", topic)
             .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "100").load()
             .selectExpr("cast(body as string) as body", "queueId", "queueOffset")
             .writeStream.format("parquet").option("path", str(tmp_path / "sink"))
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
    query.awaitTermination(180)
    assert query.exception() is None
    # Over Connect the progress entries are StreamingQueryProgress objects, not dicts.
    assert [p.numInputRows for p in query.recentProgress if p.numInputRows] == [100, 100, 100]
    sink = connect.read.parquet(str(tmp_path / "sink")).collect()
    assert sorted(r.body for r in sink) == sorted(f"m-{i}" for i in range(300))
    assert len({(r.queueId, r.queueOffset) for r in sink}) == 300
