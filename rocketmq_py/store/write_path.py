"""The one place that chooses the store's compiled write path (``_write_path``) or its twin (``_write_path_py``).

See ``_write_path_py`` for what the writer does, in which order; ``ROCKETMQ_PY_NO_EXTENSIONS=1`` selects the
twin. Only :class:`~rocketmq_py.store.MessageStore` writes through it; the replicated CommitLog reads and numbers
its records with the same two functions.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from rocketmq_py._extensions import load

if TYPE_CHECKING:
    from rocketmq_py.store import _write_path_py as _impl
else:
    _impl = load("rocketmq_py.store._write_path", "rocketmq_py.store._write_path_py")

IMPLEMENTATION: str = _impl.IMPLEMENTATION
StoreWriter = _impl.StoreWriter
PutRecordsResult = _impl.PutRecordsResult
put_unit = _impl.put_unit
read_records = _impl.read_records
assign_queue_offsets = _impl.assign_queue_offsets

__all__ = ["IMPLEMENTATION", "PutRecordsResult", "StoreWriter", "assign_queue_offsets", "put_unit", "read_records"]
