"""The rocketmq Spark source without Spark: options, offsets JSON, partition planning, admission control,
the sink's schema check and the store file scan (issue 6)."""
from __future__ import annotations

import json

import pytest

from rocketmq_py.spark import planning
from rocketmq_py.spark.options import (
    EARLIEST,
    LATEST,
    InvalidOptionError,
    parse_sink_options,
    parse_source_options,
)
from rocketmq_py.spark.sink import check_write_schema

NS = {"nameServer": "127.0.0.1:9876"}


def _bounds(*spec):
    return [planning.QueueBounds("T", broker, "127.0.0.1:10911", qid, low, high) for broker, qid, low, high in spec]


def test_source_options_defaults_and_values():
    options = parse_source_options({**NS, "topic": "A, B", "minPartitions": "8", "failOnDataLoss": "false",
                                    "accessKey": "ak", "secretKey": "sk", "pullBatchSize": "64"})
    assert options.topics == ("A", "B")
    assert options.starting == "earliest" and options.ending == "latest"
    assert options.min_partitions == 8 and options.fail_on_data_loss is False
    assert options.client.access_key == "ak" and options.client.pull_batch_size == 64
    stream = parse_source_options({**NS, "topic": "A", "maxOffsetsPerTrigger": "40"}, streaming=True)
    assert stream.starting == "latest" and stream.max_offsets_per_trigger == 40


@pytest.mark.parametrize("options, message", [
    ({"topic": "A"}, "nameServer is required"),
    ({**NS}, "topic is required"),
    ({**NS, "topic": "A", "startingOffsets": '{"A": {"b": {"0": 1}'}, "neither earliest, latest nor valid JSON"),
    ({**NS, "topic": "A", "startingOffsets": '{"A": {"b": {"x": 1}}}'}, "is not a number"),
    ({**NS, "topic": "A", "startingOffsets": '{"A": {"b": {"0": -3}}}'}, "is not valid"),
    ({**NS, "topic": "A", "startingOffsets": '{"B": {"b": {"0": 1}}}'}, "that option topic does not"),
    ({**NS, "topic": "A", "endingOffsets": '{"A": {"b": {"0": -2}}}'}, "not allowed as an end offset"),
    ({**NS, "topic": "A", "startingOffsets": "latest"}, "for streams"),
    ({**NS, "topic": "A", "failOnDataLoss": "maybe"}, "must be true or false"),
    ({**NS, "topic": "A", "minPartitions": "many"}, "must be an integer"),
    ({**NS, "topic": "A", "minPartitions": "0"}, "at least 1"),
    ({**NS, "topic": "A", "maxOffsetsPerTrigger": "10"}, "streaming reads only"),
    ({**NS, "topic": "A", "accessKey": "ak"}, "go together"),
    ({**NS, "topic": "A", "startingOffset": "earliest"}, "unknown rocketmq option"),
])
def test_bad_source_options_are_named(options, message):
    with pytest.raises(InvalidOptionError, match=message):
        parse_source_options(options)


def test_offsets_json_keeps_string_keys_and_special_values():
    raw = json.dumps({"A": {"broker-a": {"0": 5, "3": EARLIEST}, "broker-b": {"1": LATEST}}})
    options = parse_source_options({**NS, "topic": "A", "startingOffsets": raw})
    assert options.starting == {"A": {"broker-a": {"0": 5, "3": -2}, "broker-b": {"1": -1}}}
    flat = planning.flatten(options.starting)
    assert flat == {("A", "broker-a", 0): 5, ("A", "broker-a", 3): -2, ("A", "broker-b", 1): -1}
    assert planning.nest(flat) == options.starting
    assert json.loads(json.dumps(planning.nest(flat))) == options.starting  # the checkpoint round trip


def test_resolve_earliest_latest_json_and_timestamps():
    bounds = _bounds(("b", 0, 2, 10), ("b", 1, 0, 7))
    assert planning.resolve("earliest", bounds, EARLIEST) == {("T", "b", 0): 2, ("T", "b", 1): 0}
    assert planning.resolve("latest", bounds, EARLIEST) == {("T", "b", 0): 10, ("T", "b", 1): 7}
    spec = {"T": {"b": {"0": 4}}}
    assert planning.resolve(spec, bounds, LATEST) == {("T", "b", 0): 4, ("T", "b", 1): 7}
    assert planning.resolve(spec, bounds, EARLIEST, {("T", "b", 1): 3}) == {("T", "b", 0): 4, ("T", "b", 1): 3}
    assert planning.unknown_queues({"T": {"b": {"9": 1}}}, bounds) == [("T", "b", 9)]


def test_data_loss_fails_or_skips():
    bounds = _bounds(("b", 0, 5, 10))
    with pytest.raises(planning.DataLossError, match="failOnDataLoss=false"):
        planning.check_data_loss({("T", "b", 0): 2}, bounds, True)
    assert planning.check_data_loss({("T", "b", 0): 2}, bounds, False) == {("T", "b", 0): 5}
    assert planning.check_data_loss({("T", "b", 0): 12}, bounds, False) == {("T", "b", 0): 10}


def test_split_by_min_partitions_covers_each_range_exactly():
    bounds = _bounds(("b", 0, 0, 1000), ("b", 1, 0, 10), ("b", 2, 5, 5))
    parts = planning.ranges(bounds, {q.key: q.min_offset for q in bounds}, {q.key: q.max_offset for q in bounds})
    assert [(p.queue_id, p.start, p.end) for p in parts] == [(0, 0, 1000), (1, 0, 10)]
    assert planning.split(parts, None) == parts and planning.split(parts, 2) == parts
    pieces = planning.split(parts, 10)
    assert len(pieces) == 11
    for qid, (low, high) in ((0, (0, 1000)), (1, (0, 10))):
        mine = [p for p in pieces if p.queue_id == qid]
        assert mine[0].start == low and mine[-1].end == high
        assert all(a.end == b.start for a, b in zip(mine, mine[1:]))


def test_limit_splits_by_backlog_and_takes_exactly_max_rows():
    starts = {("T", "b", 0): 0, ("T", "b", 1): 0, ("T", "b", 2): 90, ("T", "b", 3): 50}
    latest = {("T", "b", 0): 100, ("T", "b", 1): 100, ("T", "b", 2): 100, ("T", "b", 3): 50}
    ends = planning.limit(starts, latest, 40)
    taken = {k: ends[k] - starts[k] for k in starts}
    assert sum(taken.values()) == 40
    assert taken[("T", "b", 3)] == 0 and taken[("T", "b", 2)] <= 2
    assert taken[("T", "b", 0)] >= 18 and taken[("T", "b", 1)] >= 18
    assert planning.limit(starts, latest, None) == latest
    assert planning.limit(starts, latest, 10_000) == latest
    # A queue that appeared later starts where latest says only when the start is given.
    assert planning.limit({}, {("T", "b", 0): 7}, 3) == {("T", "b", 0): 7}


def test_sink_options_and_schema_checks():
    options = parse_sink_options({**NS, "topic": "Out", "shardingKey": "user"})
    plan = check_write_schema([("body", "string"), ("tags", "string"), ("user", "string")], options)
    assert plan.has_tags and not plan.has_topic and plan.sharding_key == "user"
    no_topic = parse_sink_options(NS)
    check_write_schema([("body", "binary"), ("topic", "string"), ("properties", "map<string,string>")], no_topic)
    for fields, options_, message in [
        ([("value", "binary")], options, "needs a 'body' column"),
        ([("body", "int")], options, "binary or string"),
        ([("body", "binary"), ("tags", "int")], options, "column tags must be a string"),
        ([("body", "binary"), ("properties", "map<string,int>")], options, "map<string,string>"),
        ([("body", "binary")], no_topic, "no topic"),
        ([("body", "binary")], options, "shardingKey names column 'user'"),
    ]:
        with pytest.raises(InvalidOptionError, match=message):
            check_write_schema(fields, options_)
    with pytest.raises(InvalidOptionError, match="for reading"):
        parse_sink_options({**NS, "topic": "Out", "startingOffsets": "earliest"})


def test_importing_rocketmq_py_spark_needs_no_pyspark():
    import subprocess
    import sys

    code = ("import sys, rocketmq_py, rocketmq_py.spark, rocketmq_py.spark.options, rocketmq_py.spark.planning; "
            "assert 'pyspark' not in sys.modules, 'pyspark imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_pyspark_finds_both_sources_by_its_module_scan():
    """PySpark registers the DefaultSource of every importable ``pyspark_*`` module (lookup_data_sources.py)."""
    import subprocess
    import sys

    from support.child import child_cwd

    pytest.importorskip("pyspark", reason="the spark extra is not installed")
    code = ("from pkgutil import iter_modules; from importlib import import_module; "
            "from pyspark.sql.datasource import DataSource; "
            "names = sorted(import_module(m.name).DefaultSource.name() for m in iter_modules() "
            "if m.name.startswith('pyspark_rocketmq')); print(names)")
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=child_cwd())
    assert done.stdout.strip() == "['rocketmq', 'rocketmq.store']"


# --- issue 14 -----------------------------------------------------------------------------------

@pytest.mark.parametrize("spark_option", ["checkpointLocation", "path", "queryName", "spark.sql.anything"])
def test_spark_own_options_pass_through(spark_option):
    """writeStream.option("checkpointLocation", ...) reaches the sink's options: it is Spark's, not refused."""
    sink = parse_sink_options({**NS, "topic": "A", spark_option: "/tmp/x"})
    assert sink.topic == "A"
    source = parse_source_options({**NS, "topic": "A", spark_option: "/tmp/x"}, streaming=True)
    assert source.topics == ("A",) and source.extra == {}


def test_new_kafka_like_options():
    batch = parse_source_options({**NS, "topicPattern": "Orders-.*", "startingTimestamp": "10",
                                  "endingTimestamp": "20"})
    assert batch.topics == () and batch.topic_pattern == "Orders-.*"
    assert (batch.starting_timestamp, batch.ending_timestamp) == (10, 20)
    stream = parse_source_options({**NS, "topic": "A", "minOffsetsPerTrigger": "5", "maxTriggerDelay": "30s",
                                   "maxOffsetsPerTrigger": "50"}, streaming=True)
    assert (stream.min_offsets_per_trigger, stream.max_trigger_delay_ms, stream.max_offsets_per_trigger) == \
        (5, 30_000, 50)
    assert parse_source_options({**NS, "topic": "A"}, streaming=True).max_trigger_delay_ms == 15 * 60_000
    for text, ms in (("250ms", 250), ("2m", 120_000), ("1h", 3_600_000), ("700", 700)):
        assert parse_source_options({**NS, "topic": "A", "maxTriggerDelay": text},
                                    streaming=True).max_trigger_delay_ms == ms


@pytest.mark.parametrize("options, streaming, message", [
    ({"topic": "A", "topicPattern": "A.*"}, False, "exclude each other"),
    ({"topicPattern": "(unclosed"}, False, "not a valid regular expression"),
    ({"topic": "A", "endingTimestamp": "5"}, True, "endingTimestamp is for batch reads only"),
    ({"topic": "A", "startingTimestamp": "9", "endingTimestamp": "5"}, False, "is before startingTimestamp"),
    ({"topic": "A", "minOffsetsPerTrigger": "5"}, False, "minOffsetsPerTrigger is for streaming reads only"),
    ({"topic": "A", "maxTriggerDelay": "5s"}, False, "maxTriggerDelay is for streaming reads only"),
    ({"topic": "A", "minOffsetsPerTrigger": "50", "maxOffsetsPerTrigger": "5"}, True, "is more than"),
    ({"topic": "A", "maxTriggerDelay": "soon"}, True, "must be a duration"),
    ({"topic": "A", "endingTimestamp": "-1"}, False, "at least 0"),
])
def test_new_options_refused_clearly(options, streaming, message):
    with pytest.raises(InvalidOptionError, match=message):
        parse_source_options({**NS, **options}, streaming=streaming)


def test_sink_refuses_reader_options():
    for option in ("endingTimestamp", "topicPattern", "minOffsetsPerTrigger", "maxTriggerDelay"):
        with pytest.raises(InvalidOptionError, match="is for reading"):
            parse_sink_options({**NS, "topic": "A", option: "1"})


def test_trigger_delay_skips_small_batches_until_the_delay_passes():
    delay = planning.TriggerDelay(min_rows=10, max_delay_ms=1000)
    assert delay.admits(0, now_ms=0), "the first trigger always runs"
    assert not delay.admits(9, now_ms=500)
    assert delay.admits(10, now_ms=600), "enough new messages"
    assert not delay.admits(1, now_ms=1500)
    assert delay.admits(1, now_ms=1600), "maxTriggerDelay passed since the last batch"
    assert planning.TriggerDelay(None, 1).admits(0, now_ms=5)


def test_lag_metrics_as_kafka_names_them():
    consumed = {("A", "b", 0): 5, ("A", "b", 1): 10, ("B", "b", 0): 0}
    latest = {("A", "b", 0): 10, ("A", "b", 1): 10, ("B", "b", 0): 3}
    assert planning.lag_metrics(consumed, latest) == {
        "minOffsetsBehindLatest": "0", "maxOffsetsBehindLatest": "5", "avgOffsetsBehindLatest": "2.7",
        "offsetsBehindLatest.A": "5", "offsetsBehindLatest.B": "3"}
    assert planning.lag_metrics({}, {}) == {}
    assert planning.backlog({("A", "b", 0): 5, ("A", "b", 1): 1}, {("A", "b", 0): 10, ("A", "b", 1): 4}) == 8
