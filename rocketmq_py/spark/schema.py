"""The read schema (Kafka's, in RocketMQ's terms) and messages to Arrow record batches."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Iterator

from rocketmq_py.common.message import MessageConst, MessageExt

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

#: The schema of every ``rocketmq`` and ``rocketmq.store`` read, as Spark DDL.
READ_SCHEMA_DDL = (
    "topic string, brokerName string, queueId int, queueOffset long, msgId string, keys string, tags string, "
    "body binary, properties map<string,string>, bornTimestamp timestamp, storeTimestamp timestamp, "
    "bornHost string, reconsumeTimes int"
)

READ_COLUMNS = ("topic", "brokerName", "queueId", "queueOffset", "msgId", "keys", "tags", "body", "properties",
                "bornTimestamp", "storeTimestamp", "bornHost", "reconsumeTimes")

_KEYS = MessageConst.KEYS
_TAGS = MessageConst.TAGS
_UNIQ = MessageConst.UNIQ_CLIENT_MESSAGE_ID_KEYIDX


def read_struct_type() -> StructType:
    """The read schema as a pyspark StructType (built here: parsing DDL needs a JVM, executors have none)."""
    from pyspark.sql.types import (
        BinaryType, IntegerType, LongType, MapType, StringType, StructField, StructType, TimestampType,
    )

    kinds = {"string": StringType(), "int": IntegerType(), "long": LongType(), "binary": BinaryType(),
             "map<string,string>": MapType(StringType(), StringType()), "timestamp": TimestampType()}
    fields = [part.strip().split(" ", 1) for part in READ_SCHEMA_DDL.split(", ")]
    return StructType([StructField(name, kinds[kind]) for name, kind in fields])


_ARROW_SCHEMA: pa.Schema | None = None


def arrow_schema() -> pa.Schema:
    """Exactly the Arrow schema Spark expects of a Python source's batches (it compares them)."""
    global _ARROW_SCHEMA
    if _ARROW_SCHEMA is None:
        from pyspark.sql.pandas.types import to_arrow_schema

        _ARROW_SCHEMA = to_arrow_schema(read_struct_type(), timezone="UTC")
    return _ARROW_SCHEMA


def to_record_batch(messages: list[MessageExt], broker_name: str | None = None) -> pa.RecordBatch:
    """One Arrow record batch of the read schema; ``broker_name`` overrides the message's."""
    import pyarrow as pa

    schema = arrow_schema()
    props = [m.properties for m in messages]
    columns = [
        pa.array([m.topic for m in messages], pa.string()),
        pa.array([broker_name or m.broker_name for m in messages], pa.string()),
        pa.array([m.queue_id for m in messages], pa.int32()),
        pa.array([m.queue_offset for m in messages], pa.int64()),
        pa.array([p.get(_UNIQ) or m.offset_msg_id for p, m in zip(props, messages)], pa.string()),
        pa.array([p.get(_KEYS) for p in props], pa.string()),
        pa.array([p.get(_TAGS) for p in props], pa.string()),
        pa.array([m.body for m in messages], pa.binary()),
        pa.array([list(p.items()) for p in props], schema.field("properties").type),
        pa.array([m.born_timestamp * 1000 for m in messages], schema.field("bornTimestamp").type),
        pa.array([m.store_timestamp * 1000 for m in messages], schema.field("storeTimestamp").type),
        pa.array([m.born_host for m in messages], pa.string()),
        pa.array([m.reconsume_times for m in messages], pa.int32()),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def batches(chunks: Iterable[list[MessageExt]], rows_per_batch: int = 10_000,
            broker_name: str | None = None) -> Iterator[pa.RecordBatch]:
    """Regroup pulled chunks into record batches of about ``rows_per_batch`` rows."""
    buffered: list[MessageExt] = []
    for chunk in chunks:
        buffered.extend(chunk)
        if len(buffered) >= rows_per_batch:
            yield to_record_batch(buffered, broker_name)
            buffered = []
    if buffered:
        yield to_record_batch(buffered, broker_name)
