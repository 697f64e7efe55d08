"""The ``rocketmq.store`` PySpark data source: a broker's CommitLog files read without a broker.

``spark.read.format("rocketmq.store").load("/path/to/store")`` (the store root, or its
``commitlog`` directory) gives the ``rocketmq`` read schema, one task per CommitLog file.
Records are walked with the store's own scanner, so files written by our broker and by the
Java broker read alike. Options: ``topic`` (one or several, comma-separated) keeps only those
topics; ``includeSystem=true`` keeps the broker's own records (half and operation topics of
transactions, scheduled messages, which a consumer never sees) and prepared or rolled-back
transaction records.
"""
from __future__ import annotations

import mmap
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from rocketmq_py.spark import require_pyspark

require_pyspark()

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition  # noqa: E402

from rocketmq_py import codec  # noqa: E402
from rocketmq_py.common.sysflag import (  # noqa: E402
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    TRANSACTION_TYPE_MASK,
)
from rocketmq_py.spark import tasklog  # noqa: E402
from rocketmq_py.spark.options import InvalidOptionError  # noqa: E402
from rocketmq_py.spark.schema import read_struct_type, to_record_batch  # noqa: E402
from rocketmq_py.store import layout  # noqa: E402

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

    from rocketmq_py.common.message import MessageExt

SYSTEM_TOPIC_PREFIXES = ("RMQ_SYS_", "rmq_sys_", "SCHEDULE_TOPIC_XXXX", "TRANS_CHECK_MAX_TIME_TOPIC")
CHUNK_BYTES = 8 * 1024 * 1024
STORE_OPTIONS = frozenset({"path", "paths", "topic", "includesystem", "brokername"})


@dataclass(frozen=True)
class StoreOptions:
    files: tuple[str, ...]
    topics: frozenset[str]
    include_system: bool
    broker_name: str | None


def commit_log_files(path: str) -> list[str]:
    """The CommitLog files under ``path`` (a store root or its commitlog directory), in offset order."""
    root = Path(path)
    directory = root / "commitlog" if (root / "commitlog").is_dir() else root
    if not directory.is_dir():
        raise InvalidOptionError(f"rocketmq.store: {path!r} is neither a store directory nor a commitlog directory")
    files = sorted(p for p in directory.iterdir() if p.is_file() and p.name.isdigit())
    if not files:
        raise InvalidOptionError(f"rocketmq.store: no CommitLog files (20-digit names) in {directory}")
    return [str(p) for p in files]


def parse_store_options(options: Mapping[str, Any]) -> StoreOptions:
    opts = {str(k).lower(): v for k, v in options.items() if v is not None}
    unknown = sorted(set(opts) - STORE_OPTIONS)
    if unknown:
        raise InvalidOptionError(f"unknown rocketmq.store option(s) {unknown}: it takes topic, includeSystem, "
                                 "brokerName and the path given to load()")
    path = opts.get("path")
    if not path:
        raise InvalidOptionError('rocketmq.store needs a path: spark.read.format("rocketmq.store").load("/store")')
    include = str(opts.get("includesystem", "false")).strip().lower()
    if include not in ("true", "false"):
        raise InvalidOptionError(f"option includeSystem={include!r} must be true or false")
    topics = frozenset(t.strip() for t in (opts.get("topic") or "").split(",") if t.strip())
    return StoreOptions(tuple(commit_log_files(path)), topics, include == "true", opts.get("brokername") or None)


def _wanted(message: MessageExt, options: StoreOptions) -> bool:
    if options.topics and message.topic not in options.topics:
        return False
    if options.include_system:
        return True
    kind = message.sys_flag & TRANSACTION_TYPE_MASK
    if kind in (TRANSACTION_PREPARED_TYPE, TRANSACTION_ROLLBACK_TYPE):
        return False
    return not message.topic.startswith(SYSTEM_TOPIC_PREFIXES)


def read_commit_log_file(path: str, options: StoreOptions, rows_per_batch: int = 10_000) -> Iterator[pa.RecordBatch]:
    """Record batches of the messages in one CommitLog file, up to its last valid record."""
    size = os.path.getsize(path)
    if size == 0:
        return
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        valid_end, _ = layout.scan_valid_end(mapped, 0, size, False)
        position = 0
        buffered: list[MessageExt] = []
        while position < valid_end:
            chunk_end = min(valid_end, position + CHUNK_BYTES)
            chunk = mapped[position:chunk_end]
            messages = codec.decode_store_records(chunk, strict=False)
            if not messages:  # one record larger than a chunk
                record = layout.check_record(mapped, position, valid_end, False).size
                messages = codec.decode_store_records(mapped[position:position + record], strict=True)
            position += sum(m.store_size for m in messages)
            buffered.extend(m for m in messages if _wanted(m, options))
            if len(buffered) >= rows_per_batch:
                yield to_record_batch(buffered, options.broker_name)
                buffered = []
        if buffered:
            yield to_record_batch(buffered, options.broker_name)


class RocketMQStoreDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "rocketmq.store"

    def schema(self) -> StructType:
        return read_struct_type()

    def reader(self, schema: StructType) -> RocketMQStoreReader:
        return RocketMQStoreReader(parse_store_options(self.options))


class RocketMQStoreReader(DataSourceReader):
    def __init__(self, options: StoreOptions) -> None:
        self.options = options

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(path) for path in self.options.files]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        tasklog.record("store-read", file=partition.value)
        yield from read_commit_log_file(partition.value, self.options)
