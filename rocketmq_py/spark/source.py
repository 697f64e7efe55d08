"""The ``rocketmq`` PySpark data source: batch and streaming reads and writes (PySpark 4.x).

This module imports pyspark; :mod:`rocketmq_py.spark` loads it only when asked. What runs
where (Spark's Python data source process model): ``reader()``, ``partitions()`` and
``writer()`` on the driver, in planner processes; ``read()`` and ``write()`` on executors,
from a pickled copy; stream offsets in a long-lived runner process on the driver. Nothing
here holds a connection: the executors open theirs (see :mod:`rocketmq_py.spark.client`).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

from rocketmq_py.common.clock import now_ms
from rocketmq_py.spark import require_pyspark

require_pyspark()

from pyspark.sql.datasource import (  # noqa: E402
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    InputPartition,
    WriterCommitMessage,
)

from rocketmq_py.spark import planning, tasklog  # noqa: E402
from rocketmq_py.spark.client import session  # noqa: E402
from rocketmq_py.spark.options import (  # noqa: E402
    EARLIEST,
    LATEST,
    InvalidOptionError,
    SinkOptions,
    SourceOptions,
    parse_sink_options,
    parse_source_options,
)
from rocketmq_py.spark.schema import READ_SCHEMA_DDL, batches, read_struct_type  # noqa: E402
from rocketmq_py.spark.sink import ColumnPlan, check_write_schema, write_batches  # noqa: E402

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Row
    from pyspark.sql.streaming.datasource import ReadLimit
    from pyspark.sql.types import StructType

    from rocketmq_py.spark.planning import QueueBounds, QueueKey

try:  # admission control and Trigger.AvailableNow: PySpark 4.2+
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, SupportsTriggerAvailableNow
except ImportError:  # pragma: no cover - older PySpark: every trigger reads all that is available
    # mypy checks against the PySpark installed (ci/setup.sh installs a current one), which has these classes
    ReadAllAvailable = ReadMaxRows = None  # type: ignore[misc, assignment]

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        pass

try:
    from pyspark.sql.datasource import DataSourceStreamArrowWriter
except ImportError:  # pragma: no cover - PySpark 4.0
    DataSourceStreamArrowWriter = None  # type: ignore[misc, assignment]  # (as above)

_log = logging.getLogger(__name__)


class RocketMQDataSource(DataSource):
    """``spark.read.format("rocketmq")``, ``readStream``, ``write`` and ``writeStream``."""

    @classmethod
    def name(cls) -> str:
        return "rocketmq"

    def schema(self) -> StructType:
        return read_struct_type()

    def reader(self, schema: StructType) -> RocketMQBatchReader:
        _check_read_schema(schema)
        return RocketMQBatchReader(parse_source_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> RocketMQStreamReader:
        _check_read_schema(schema)
        return RocketMQStreamReader(parse_source_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> RocketMQBatchWriter:
        if overwrite:
            raise InvalidOptionError("a topic cannot be overwritten: write to rocketmq with mode append")
        options = parse_sink_options(self.options)
        return RocketMQBatchWriter(options, _column_plan(schema, options))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        options = parse_sink_options(self.options)
        plan = _column_plan(schema, options)
        if DataSourceStreamArrowWriter is not None:
            return RocketMQStreamArrowWriter(options, plan)
        return RocketMQStreamRowWriter(options, plan)


def _check_read_schema(schema: StructType | None) -> None:
    if schema is not None and schema != read_struct_type():
        raise InvalidOptionError(f"the rocketmq source has a fixed schema ({READ_SCHEMA_DDL}); "
                                 "select or cast columns after loading instead of passing .schema(...)")


def _column_plan(schema: StructType, options: SinkOptions) -> ColumnPlan:
    return check_write_schema([(f.name, f.dataType.simpleString()) for f in schema.fields], options)


# --- reading -------------------------------------------------------------------------------------

def _read(options: SourceOptions, partition: InputPartition) -> Iterator[pa.RecordBatch]:
    part = partition.value
    if part is None:
        return
    tasklog.record("read", topic=part.topic, broker=part.broker_name, queue=part.queue_id, start=part.start,
                   end=part.end)
    client = session(options.client)
    chunks = client.read_range(part, options.group, options.sub_expression, options.fail_on_data_loss)
    yield from batches(chunks, broker_name=part.broker_name)


def _plan(options: SourceOptions, bounds: list[QueueBounds], starts: dict[QueueKey, int],
          ends: dict[QueueKey, int]) -> list[InputPartition]:
    starts = planning.check_data_loss(starts, bounds, options.fail_on_data_loss)
    parts = planning.split(planning.ranges(bounds, starts, ends), options.min_partitions)
    return [InputPartition(part) for part in parts]


def _topics(options: SourceOptions) -> tuple[str, ...]:
    """The topics to read: option ``topic``, or what ``topicPattern`` matches on the name server now."""
    if options.topic_pattern is None:
        return options.topics
    found = session(options.client).topics_matching(options.topic_pattern)
    if not found:
        _log.info("topicPattern %r matches no topic on %s yet", options.topic_pattern, options.client.namesrv_addr)
    return found


def _bounds(options: SourceOptions, check_specs: bool = True) -> list[QueueBounds]:
    bounds = session(options.client).bounds(_topics(options), skip_missing=options.topic_pattern is not None)
    if check_specs:
        for name, spec in (("startingOffsets", options.starting), ("endingOffsets", options.ending)):
            unknown = planning.unknown_queues(spec, bounds)
            if unknown:
                raise InvalidOptionError(f"option {name} names queues the topic route does not have: {unknown}")
    return bounds


def _at_timestamp(options: SourceOptions, bounds: list[QueueBounds],
                  timestamp_ms: int | None) -> dict[QueueKey, int] | None:
    if timestamp_ms is None:
        return None
    return session(options.client).offsets_for_timestamp(bounds, timestamp_ms)


def _starts(options: SourceOptions, bounds: list[QueueBounds]) -> dict[QueueKey, int]:
    timestamps = _at_timestamp(options, bounds, options.starting_timestamp)
    return planning.resolve(options.starting, bounds, EARLIEST, timestamps)


class RocketMQBatchReader(DataSourceReader):
    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> list[InputPartition]:
        bounds = _bounds(self.options)
        timestamps = _at_timestamp(self.options, bounds, self.options.ending_timestamp)
        ends = planning.resolve(self.options.ending, bounds, LATEST, timestamps)
        maxima = {q.key: q.max_offset for q in bounds}
        for key, end in ends.items():
            if end > maxima[key]:
                _log.warning("endingOffsets %d of %s is past the queue's end %d; reading up to the end",
                             end, key, maxima[key])
                ends[key] = maxima[key]
        return _plan(self.options, bounds, _starts(self.options, bounds), ends)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.options, partition)


class RocketMQStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets ``{"topic": {"broker": {"queueId": next offset}}}`` in Spark's checkpoint.

    With ``topicPattern`` the name server's topic list is read again at every trigger; queues of
    topics that appeared since are read from their first offset, as new Kafka partitions are.
    """

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._target: dict[QueueKey, int] | None = None
        self._latest: dict[QueueKey, int] = {}
        self._delay = planning.TriggerDelay(options.min_offsets_per_trigger, options.max_trigger_delay_ms)

    def _current(self) -> list[QueueBounds]:
        bounds = _bounds(self.options, check_specs=False)
        self._latest = {q.key: q.max_offset for q in bounds}
        return bounds

    def initialOffset(self) -> dict[str, Any]:
        bounds = _bounds(self.options)
        return planning.nest(_starts(self.options, bounds))

    def getDefaultReadLimit(self) -> ReadLimit:
        if ReadMaxRows is not None and self.options.max_offsets_per_trigger:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        # None only under a PySpark before 4.2, which has no read limits and does not call this method.
        return ReadAllAvailable() if ReadAllAvailable is not None else None  # type: ignore[return-value]

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = {q.key: q.max_offset for q in self._current()}

    def latestOffset(self, start: dict[str, Any] | None = None, limit: ReadLimit | None = None) -> dict[str, Any]:
        bounds = self._current()
        latest = dict(self._latest)
        if self._target is not None:
            # Trigger.AvailableNow: nothing past what was there when the query started, new queues included.
            latest = {key: min(offset, self._target.get(key, offset)) for key, offset in latest.items()
                      if key in self._target}
        if start is None:  # PySpark before 4.2: no admission control
            return planning.nest(latest)
        starts = planning.flatten(start)
        for queue in bounds:  # queues that appeared since the query started are read from their beginning
            if queue.key in latest:
                starts.setdefault(queue.key, queue.min_offset)
        if self._target is None and not self._delay.admits(planning.backlog(starts, latest), now_ms()):
            return start  # fewer than minOffsetsPerTrigger new messages and maxTriggerDelay not yet passed
        max_rows = None
        if ReadMaxRows is not None and isinstance(limit, ReadMaxRows):
            max_rows = limit.max_rows
        elif limit is None:
            max_rows = self.options.max_offsets_per_trigger
        return planning.nest(planning.limit(starts, latest, max_rows))

    def reportLatestOffset(self) -> dict[str, Any]:
        """The queues' end offsets seen at the last trigger: ``latestOffset`` in ``StreamingQuery.lastProgress``."""
        return planning.nest(self._latest)

    def metrics(self, latestConsumedOffset: dict[str, Any]) -> dict[str, str]:
        """Offsets behind the latest (min, max, average over queues and a sum per topic), as Kafka's source.

        PySpark 4.3 does not yet pass a Python source's metrics into the progress report (its Python
        micro-batch stream has no source-metrics hook); the same lag shows there as the difference between
        ``endOffset`` and ``latestOffset``, and this method gives it in Kafka's names.
        """
        return planning.lag_metrics(planning.flatten(latestConsumedOffset or {}), self._latest)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        if start == end:
            return []
        bounds = _bounds(self.options, check_specs=False)
        starts = planning.flatten(start)
        for queue in bounds:
            starts.setdefault(queue.key, queue.min_offset)
        return _plan(self.options, bounds, starts, planning.flatten(end))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.options, partition)

    def commit(self, end: dict[str, Any]) -> None:
        """Spark's checkpoint holds the offsets; nothing is committed to the broker."""


# --- writing -------------------------------------------------------------------------------------

@dataclass
class SentMessages(WriterCommitMessage):
    count: int


def _rows_to_batches(rows: Iterator[Row], plan: ColumnPlan) -> Iterator[pa.RecordBatch]:
    import pyarrow as pa

    chunk: list[dict[str, Any]] = []
    for row in rows:
        chunk.append(row.asDict())
        if len(chunk) >= 10_000:
            yield pa.RecordBatch.from_pylist(chunk)
            chunk = []
    if chunk:
        yield pa.RecordBatch.from_pylist(chunk)


class RocketMQBatchWriter(DataSourceArrowWriter):
    """One producer per executor process, batch sends in flight; at-least-once."""

    def __init__(self, options: SinkOptions, plan: ColumnPlan) -> None:
        self.options = options
        self.plan = plan

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SentMessages:
        return SentMessages(write_batches(iterator, self.plan, self.options))


class RocketMQStreamRowWriter(DataSourceStreamWriter):
    def __init__(self, options: SinkOptions, plan: ColumnPlan) -> None:
        self.options = options
        self.plan = plan

    def write(self, iterator: Iterator[Row]) -> SentMessages:
        return SentMessages(write_batches(_rows_to_batches(iterator, self.plan), self.plan, self.options))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Each message was acknowledged by the broker when write() returned."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Sent messages stay sent (at-least-once); Spark runs the batch again."""


if DataSourceStreamArrowWriter is not None:
    class RocketMQStreamArrowWriter(DataSourceStreamArrowWriter):
        def __init__(self, options: SinkOptions, plan: ColumnPlan) -> None:
            self.options = options
            self.plan = plan

        def write(self, iterator: Iterator[pa.RecordBatch]) -> SentMessages:
            return SentMessages(write_batches(iterator, self.plan, self.options))

        def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
            """Each message was acknowledged by the broker when write() returned."""

        def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
            """Sent messages stay sent (at-least-once); Spark runs the batch again."""
