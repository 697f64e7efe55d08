"""Issue 14: every row of the Spark options table (docs/spark.md), batch and streaming, against the Java broker
and ours (local[2]). tests/test_spark_options_documented.py checks that each documented option appears
here or in another Spark test.

Streams run with Trigger.AvailableNow into the memory sink: every micro-batch of what was there when
the query started, then the query ends by itself.
"""
from __future__ import annotations

import json
import time

import pytest
from harness import mqadmin, unique_name
from harness.py_servers import PythonBroker
from harness.spark import local_session, pyspark_or_skip

pyspark_or_skip()

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]  # Spark on a loaded 2-core machine is slow

QUEUES = 2


@pytest.fixture(scope="module")
def spark():
    return local_session()


@pytest.fixture(scope="module")
def py_broker(py_namesrv, tmp_path_factory):
    broker = PythonBroker(py_namesrv.addr, tmp_path_factory.mktemp("spark-opt-broker"),
                          broker_name="pybroker-sparkopt").start()
    yield broker
    assert broker.stop() == 0, broker.log_text()[-3000:]


@pytest.fixture(params=["java", "ours"])
def cluster(request):
    if request.param == "java":
        return request.getfixturevalue("java_namesrv").addr, request.getfixturevalue("java_broker")
    return request.getfixturevalue("py_namesrv").addr, request.getfixturevalue("py_broker")


def _topic(namesrv: str, broker, prefix: str, queues: int = QUEUES, name: str | None = None) -> str:
    topic = name or unique_name(prefix)
    mqadmin("updateTopic", "-b", broker.addr, "-t", topic, "-r", str(queues), "-w", str(queues), namesrv=namesrv)
    return topic


def _write(spark, namesrv: str, topic: str, bodies: list[str], **options) -> None:
    writer = spark.createDataFrame([(b, f"T{i % 3}", f"k{i % 4}") for i, b in enumerate(bodies)],
                                   "body string, tags string, keys string").write.format("rocketmq") \
        .option("nameServer", namesrv).option("topic", topic)
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.mode("append").save()


def _read(spark, namesrv: str, **options):
    reader = spark.read.format("rocketmq").option("nameServer", namesrv)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def _bodies(df) -> list[str]:
    return sorted(r.body for r in df.selectExpr("cast(body as string) as body").collect())


def _stream(spark, namesrv: str, **options) -> tuple[list[str], list[dict]]:
    """Bodies read by an AvailableNow stream with ``options``, and its progress reports."""
    reader = spark.readStream.format("rocketmq").option("nameServer", namesrv)
    for key, value in options.items():
        reader = reader.option(key, value)
    table = unique_name("stream").lower()
    query = reader.load().selectExpr("cast(body as string) as body").writeStream.format("memory") \
        .queryName(table).trigger(availableNow=True).start()
    assert query.awaitTermination(240), "the AvailableNow stream did not end"
    assert query.exception() is None, query.exception()
    bodies = sorted(r.body for r in spark.sql(f"select body from {table}").collect())
    return bodies, query.recentProgress


def _offsets_of(spark, namesrv: str, topic: str) -> dict:
    """{queueId: [offsets...]} of the topic, from a full read."""
    found: dict = {}
    for r in _read(spark, namesrv, topic=topic).select("queueId", "queueOffset").collect():
        found.setdefault(r.queueId, []).append(r.queueOffset)
    return found


# --- nameServer, topic --------------------------------------------------------------------------

def test_nameServer_list_and_several_topics(spark, cluster):
    namesrv, broker = cluster
    first, second = _topic(namesrv, broker, "OptTopicA"), _topic(namesrv, broker, "OptTopicB")
    _write(spark, namesrv, first, [f"a{i}" for i in range(10)])
    _write(spark, namesrv, second, [f"b{i}" for i in range(5)])
    # A name server that is down comes first: the next one in the ;-separated list answers.
    several = f"127.0.0.1:1;{namesrv}"
    expected = sorted([f"a{i}" for i in range(10)] + [f"b{i}" for i in range(5)])
    assert _bodies(_read(spark, several, topic=f"{first}, {second}")) == expected
    assert _stream(spark, several, topic=f"{first},{second}", startingOffsets="earliest")[0] == expected


def test_topic_column_when_writing(spark, cluster):
    namesrv, broker = cluster
    first, second = _topic(namesrv, broker, "OptColA"), _topic(namesrv, broker, "OptColB")
    spark.createDataFrame([("x1", first), ("x2", second), ("x3", first)], "body string, topic string") \
        .write.format("rocketmq").option("nameServer", namesrv).mode("append").save()
    assert _bodies(_read(spark, namesrv, topic=first)) == ["x1", "x3"]
    assert _bodies(_read(spark, namesrv, topic=second)) == ["x2"]


# --- startingOffsets, endingOffsets, startingTimestamp, endingTimestamp ---------------------------

def test_startingOffsets_and_endingOffsets_json(spark, cluster):
    namesrv, broker = cluster
    topic = _topic(namesrv, broker, "OptOffsets")
    # Sharded by the keys column (k0..k3, Java's String hash picks queues 1, 0, 1, 0), so each queue gets 20:
    # unsharded, each write task's batch goes to the queue its producer's round robin picks, which may be
    # the same queue for both tasks and leave queue 0 empty.
    _write(spark, namesrv, topic, [f"m{i}" for i in range(40)], shardingKey="keys")
    offsets = _offsets_of(spark, namesrv, topic)
    assert sorted(len(found) for found in offsets.values()) == [20, 20], offsets
    name = broker.broker_name
    starting = {topic: {name: {"0": 2, "1": -2}}}
    ending = {topic: {name: {"0": 5, "1": -1}}}
    df = _read(spark, namesrv, topic=topic, startingOffsets=json.dumps(starting), endingOffsets=json.dumps(ending))
    got = sorted((r.queueId, r.queueOffset) for r in df.select("queueId", "queueOffset").collect())
    assert got == [(0, o) for o in range(2, 5)] + [(1, o) for o in sorted(offsets[1])]
    # A stream from JSON offsets reads from there to the end.
    bodies, _ = _stream(spark, namesrv, topic=topic, startingOffsets=json.dumps({topic: {name: {"0": 3, "1": -1}}}))
    assert len(bodies) == len(offsets[0]) - 3
    # startingOffsets=latest: a stream sees only what comes after it started; AvailableNow then has nothing.
    assert _stream(spark, namesrv, topic=topic, startingOffsets="latest")[0] == []


def _two_generations(spark, namesrv: str, topic: str) -> tuple[int, int]:
    """Writes old-* then, after a gap, new-* messages; returns (ms between them, ms after the new ones)."""
    _write(spark, namesrv, topic, [f"old{i}" for i in range(6)])
    time.sleep(1.5)
    between = int(time.time() * 1000)
    time.sleep(1.5)
    _write(spark, namesrv, topic, [f"new{i}" for i in range(4)])
    time.sleep(1.5)
    return between, int(time.time() * 1000)


def test_startingTimestamp_and_endingTimestamp(spark, cluster):
    namesrv, broker = cluster
    topic = _topic(namesrv, broker, "OptTime")
    between, after = _two_generations(spark, namesrv, topic)
    new = sorted(f"new{i}" for i in range(4))
    old = sorted(f"old{i}" for i in range(6))
    assert _bodies(_read(spark, namesrv, topic=topic, startingTimestamp=str(between))) == new
    assert _bodies(_read(spark, namesrv, topic=topic, startingTimestamp="0")) == sorted(old + new)
    assert _bodies(_read(spark, namesrv, topic=topic, startingTimestamp=str(after))) == []
    assert _bodies(_read(spark, namesrv, topic=topic, startingTimestamp="4102444800000")) == []
    assert _bodies(_read(spark, namesrv, topic=topic, endingTimestamp=str(between))) == old
    assert _bodies(_read(spark, namesrv, topic=topic, startingTimestamp="0", endingTimestamp=str(after))) == \
        sorted(old + new)
    assert _stream(spark, namesrv, topic=topic, startingTimestamp=str(between))[0] == new


# --- topicPattern -------------------------------------------------------------------------------

def test_topicPattern_batch_and_a_stream_that_picks_up_a_new_topic(spark, cluster, tmp_path):
    namesrv, broker = cluster
    prefix = unique_name("OptPat")
    first = _topic(namesrv, broker, "", name=f"{prefix}_one")
    _topic(namesrv, broker, "", name=f"{prefix}X_other")  # does not match the pattern in full
    _write(spark, namesrv, first, ["p1", "p2"])
    pattern = f"{prefix}_.*"
    assert _bodies(_read(spark, namesrv, topicPattern=pattern)) == ["p1", "p2"]

    stream = spark.readStream.format("rocketmq").option("nameServer", namesrv).option("topicPattern", pattern) \
        .option("startingOffsets", "earliest").load().selectExpr("topic", "cast(body as string) as body")
    query = stream.writeStream.format("parquet").option("path", str(tmp_path / "out")) \
        .option("checkpointLocation", str(tmp_path / "cp")).trigger(processingTime="1 second").start()
    try:
        second = _topic(namesrv, broker, "", name=f"{prefix}_two")  # appears while the query runs
        _write(spark, namesrv, second, ["q1", "q2", "q3"])
        deadline = time.monotonic() + 180
        while sum(p["numInputRows"] for p in query.recentProgress) < 5 and time.monotonic() < deadline:
            assert query.exception() is None, query.exception()
            time.sleep(0.5)
    finally:
        query.stop()
    rows = spark.read.parquet(str(tmp_path / "out")).collect()
    assert sorted((r.topic, r.body) for r in rows) == [(first, "p1"), (first, "p2"),
                                                      (second, "q1"), (second, "q2"), (second, "q3")]


# --- admission control ----------------------------------------------------------------------------

def test_maxOffsetsPerTrigger_bounds_each_micro_batch(spark, cluster):
    namesrv, broker = cluster
    topic = _topic(namesrv, broker, "OptMax")
    _write(spark, namesrv, topic, [f"m{i}" for i in range(50)])
    bodies, progress = _stream(spark, namesrv, topic=topic, startingOffsets="earliest", maxOffsetsPerTrigger="12")
    assert len(bodies) == 50
    sizes = [p["numInputRows"] for p in progress if p["numInputRows"]]
    assert max(sizes) <= 12 and len(sizes) >= 5, sizes


def test_minOffsetsPerTrigger_waits_for_enough_messages_or_maxTriggerDelay(spark, cluster, tmp_path):
    namesrv, broker = cluster
    topic = _topic(namesrv, broker, "OptMin")
    _write(spark, namesrv, topic, [f"a{i}" for i in range(3)])
    delay_s = 45
    began = time.monotonic()
    query = spark.readStream.format("rocketmq").option("nameServer", namesrv).option("topic", topic) \
        .option("startingOffsets", "earliest").option("minOffsetsPerTrigger", "10") \
        .option("maxTriggerDelay", f"{delay_s}s").load().selectExpr("cast(body as string) as body") \
        .writeStream.format("parquet").option("path", str(tmp_path / "out")) \
        .option("checkpointLocation", str(tmp_path / "cp")).trigger(processingTime="500 milliseconds").start()

    def batches() -> list[int]:
        assert query.exception() is None, query.exception()
        return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]

    def wait_for(total: int, within_s: float) -> None:
        deadline = time.monotonic() + within_s
        while sum(batches()) < total and time.monotonic() < deadline:
            time.sleep(0.2)

    try:
        wait_for(3, 240)
        assert batches() == [3], "the first trigger always runs"
        _write(spark, namesrv, topic, [f"b{i}" for i in range(4)])  # 4 < 10: held back
        time.sleep(3)
        # The delay counts from the first batch, which came after `began`: while less than delay_s has
        # passed since `began`, the 4 messages must still wait (on a machine too loaded for that, the
        # delay may have passed already, and they rightly ran).
        if time.monotonic() - began < delay_s - 1:
            assert batches() == [3], "a batch below minOffsetsPerTrigger ran before maxTriggerDelay"
            _write(spark, namesrv, topic, [f"c{i}" for i in range(8)])  # 12 waiting now: runs at once
            wait_for(15, 240)
            assert batches() == [3, 12]
        else:
            _write(spark, namesrv, topic, [f"c{i}" for i in range(8)])
            wait_for(15, 240)
        _write(spark, namesrv, topic, ["d0"])  # 1 waiting: runs once maxTriggerDelay has passed
        wait_for(16, delay_s + 240)
        assert sum(batches()) == 16 and batches()[-1] < 10, batches()
    finally:
        query.stop()


def test_progress_shows_latest_offsets_and_the_source_reports_kafka_lag_metrics(spark, cluster):
    from rocketmq_py.spark.options import parse_source_options
    from rocketmq_py.spark.planning import flatten, lag_metrics
    from rocketmq_py.spark.source import RocketMQStreamReader

    namesrv, broker = cluster
    topic = _topic(namesrv, broker, "OptLag")
    _write(spark, namesrv, topic, [f"m{i}" for i in range(30)])
    _, progress = _stream(spark, namesrv, topic=topic, startingOffsets="earliest", maxOffsetsPerTrigger="10")
    first = next(p for p in progress if p["numInputRows"])["sources"][0]
    latest, end = json.loads(first["latestOffset"]), json.loads(first["endOffset"])
    assert sum(flatten(latest).values()) == 30 and sum(flatten(end).values()) == 10
    behind = lag_metrics(flatten(end), flatten(latest))
    assert behind["maxOffsetsBehindLatest"] == str(max(flatten(latest)[k] - flatten(end)[k] for k in flatten(end)))
    # The reader's metrics(), called as Spark calls a Kafka source's, gives the same numbers.
    reader = RocketMQStreamReader(parse_source_options(
        {"nameServer": namesrv, "topic": topic, "startingOffsets": "earliest"}, streaming=True))
    reader.latestOffset(reader.initialOffset(), None)
    assert reader.metrics(end) == behind
    assert behind[f"offsetsBehindLatest.{topic}"] == "20"


# --- partitions, data loss, group, filter, pulls ---------------------------------------------------

def test_minPartitions_splits_queue_ranges(spark, cluster):
    namesrv, broker = cluster
    topic = _topic(namesrv, broker, "OptParts")
    _write(spark, namesrv, topic, [f"m{i}" for i in range(60)])
    df = _read(spark, namesrv, topic=topic, minPartitions="6")
    assert df.rdd.getNumPartitions() >= 6
    assert len(_bodies(df)) == 60
    assert len(_stream(spark, namesrv, topic=topic, startingOffsets="earliest", minPartitions="6")[0]) == 60


def test_failOnDataLoss(spark, cluster):
    namesrv, broker = cluster
    topic = _topic(namesrv, broker, "OptLoss")
    _write(spark, namesrv, topic, [f"m{i}" for i in range(10)])
    past = json.dumps({topic: {broker.broker_name: {"0": 100_000, "1": -2}}})
    with pytest.raises(Exception, match="failOnDataLoss=false"):
        _read(spark, namesrv, topic=topic, startingOffsets=past).collect()
    queue1 = len(_offsets_of(spark, namesrv, topic).get(1, []))
    assert len(_bodies(_read(spark, namesrv, topic=topic, startingOffsets=past, failOnDataLoss="false"))) == queue1
    bodies, _ = _stream(spark, namesrv, topic=topic, startingOffsets=past, failOnDataLoss="false")
    assert len(bodies) == queue1


def test_group_subExpression_and_the_pull_options(spark, cluster):
    namesrv, broker = cluster
    topic = _topic(namesrv, broker, "OptPull")
    _write(spark, namesrv, topic, [f"m{i}" for i in range(90)])
    tagged = sorted(f"m{i}" for i in range(90) if i % 3 != 1)
    pulls = {"group": unique_name("SparkOptGroup"), "pullBatchSize": "7", "pipelineDepth": "3", "pullTimeoutMs": "20000"}
    assert _bodies(_read(spark, namesrv, topic=topic, subExpression="T0 || T2", **pulls)) == tagged
    assert _stream(spark, namesrv, topic=topic, startingOffsets="earliest", subExpression="T0 || T2",
                   **pulls)[0] == tagged
    assert len(_bodies(_read(spark, namesrv, topic=topic, pullBatchSize="1", pipelineDepth="1"))) == 90


# --- writer options ----------------------------------------------------------------------------

def test_shardingKey_keeps_each_key_in_one_queue_in_order(spark, cluster):
    namesrv, broker = cluster
    topic = _topic(namesrv, broker, "OptShard", queues=4)
    rows = [(f"{key}-{n:03d}", f"user{key}") for n in range(50) for key in range(6)]
    spark.createDataFrame(rows, "body string, user string").coalesce(1).write.format("rocketmq") \
        .option("nameServer", namesrv).option("topic", topic).option("shardingKey", "user").mode("append").save()
    got = _read(spark, namesrv, topic=topic).selectExpr("cast(body as string) as body", "queueId", "queueOffset") \
        .collect()
    by_key: dict = {}
    for r in sorted(got, key=lambda r: (r.queueId, r.queueOffset)):
        by_key.setdefault(r.body.split("-")[0], []).append((r.queueId, r.body))
    assert len(by_key) == 6
    for key, seen in by_key.items():
        assert len({q for q, _ in seen}) == 1, f"key {key} went to several queues"
        assert [b for _, b in seen] == [f"{key}-{n:03d}" for n in range(50)]


def test_sendTimeoutMs_producerGroup_maxInFlight_and_checkpointLocation_of_a_stream_sink(spark, cluster, tmp_path):
    namesrv, broker = cluster
    source, target = _topic(namesrv, broker, "OptSinkSrc"), _topic(namesrv, broker, "OptSinkDst")
    _write(spark, namesrv, source, [f"s{i}" for i in range(200)], sendTimeoutMs="10000",
           producerGroup=unique_name("SparkOptProducer"), maxInFlight="64")
    # Spark's own idiom: the checkpoint given as an option of the rocketmq stream sink (issue 14's first failure).
    query = spark.readStream.format("rocketmq").option("nameServer", namesrv).option("topic", source) \
        .option("startingOffsets", "earliest").load().select("body", "tags") \
        .writeStream.format("rocketmq").option("nameServer", namesrv).option("topic", target) \
        .option("sendTimeoutMs", "10000").option("producerGroup", unique_name("SparkOptStream")) \
        .option("maxInFlight", "128").option("checkpointLocation", str(tmp_path / "cp")) \
        .trigger(availableNow=True).start()
    assert query.awaitTermination(240)
    assert query.exception() is None, query.exception()
    assert _bodies(_read(spark, namesrv, topic=target)) == sorted(f"s{i}" for i in range(200))
    assert (tmp_path / "cp" / "offsets").is_dir(), "Spark kept its checkpoint where the option said"


# --- security ---------------------------------------------------------------------------------

def test_useTLS_reads_and_writes_over_tls(spark, java_namesrv, java_broker):
    """Java's servers take TLS and plain connections alike by default (tls.server.mode=permissive); ours
    default to disabled (rocketmq_py.remoting.tls) and are tested with TLS in test_tls.py."""
    namesrv, broker = java_namesrv.addr, java_broker
    topic = _topic(namesrv, broker, "OptTls")
    _write(spark, namesrv, topic, [f"t{i}" for i in range(20)], useTLS="true")
    assert _bodies(_read(spark, namesrv, topic=topic, useTLS="true")) == sorted(f"t{i}" for i in range(20))
    assert len(_stream(spark, namesrv, topic=topic, startingOffsets="earliest", useTLS="true")[0]) == 20


def test_accessKey_secretKey_securityToken_against_the_java_acl_broker(spark, acl_cluster):
    """The ACL broker is Java's only (aclEnable); a wrong secret is refused before anything is read."""
    namesrv, broker = acl_cluster
    topic = unique_name("OptAcl")  # created by the first send (the harness broker auto-creates topics)
    good = {"accessKey": "py-admin", "secretKey": "py-admin-secret-1", "securityToken": "token-1"}
    _write(spark, namesrv.addr, topic, [f"a{i}" for i in range(10)], **good)
    assert _bodies(_read(spark, namesrv.addr, topic=topic, **good)) == sorted(f"a{i}" for i in range(10))
    assert len(_stream(spark, namesrv.addr, topic=topic, startingOffsets="earliest", **good)[0]) == 10
    with pytest.raises(Exception, match="Check signature failed"):
        _read(spark, namesrv.addr, topic=topic, accessKey="py-admin", secretKey="wrong-secret").collect()
