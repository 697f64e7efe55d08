"""The one place that chooses the store's byte-layout implementation.

The compiled ``_layout`` extension is used when it was built; the pure-Python
twin ``_layout_py`` when ``ROCKETMQ_PY_NO_EXTENSIONS=1`` or when the extension
is missing (``ROCKETMQ_PY_REQUIRE_EXTENSIONS=1`` makes that an error). The
rest of the store imports the layouts from here, as ``layout.encode_record``
and so on; ``layout.IMPLEMENTATION`` says which one runs.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from rocketmq_py._extensions import load

if TYPE_CHECKING:
    from rocketmq_py.store import _layout_py as _impl
else:
    _impl = load("rocketmq_py.store._layout", "rocketmq_py.store._layout_py")

IMPLEMENTATION: str = _impl.IMPLEMENTATION
END_FILE_MIN_BLANK_LENGTH: int = _impl.END_FILE_MIN_BLANK_LENGTH
CQ_UNIT_SIZE: int = _impl.CQ_UNIT_SIZE
INDEX_HEADER_SIZE: int = _impl.INDEX_HEADER_SIZE
QUEUE_OFFSET_POSITION: int = _impl.QUEUE_OFFSET_POSITION
PHYSICAL_OFFSET_POSITION: int = _impl.PHYSICAL_OFFSET_POSITION
SYSFLAG_POSITION: int = _impl.SYSFLAG_POSITION
RECORD_BLANK: int = _impl.RECORD_BLANK
RECORD_INVALID: int = _impl.RECORD_INVALID
MAX_TOPIC_LENGTH: int = _impl.MAX_TOPIC_LENGTH
MAX_PROPERTIES_LENGTH: int = _impl.MAX_PROPERTIES_LENGTH

RecordInfo = _impl.RecordInfo
index_key_hash = _impl.index_key_hash
record_length = _impl.record_length
store_timestamp_position = _impl.store_timestamp_position
encode_record = _impl.encode_record
set_queue_id = _impl.set_queue_id
encode_batch = _impl.encode_batch
append_records = _impl.append_records
check_record = _impl.check_record
scan_valid_end = _impl.scan_valid_end
read_store_timestamp = _impl.read_store_timestamp
cq_put_unit = _impl.cq_put_unit
cq_fill_blank = _impl.cq_fill_blank
cq_read_units = _impl.cq_read_units
cq_valid_end = _impl.cq_valid_end
index_file_size = _impl.index_file_size
index_header = _impl.index_header
index_start = _impl.index_start
index_put = _impl.index_put
index_select = _impl.index_select
#: Not a layout: faulting a mapping's pages in ahead of their writes (see ``rocketmq_py.store.prefault``).
populate_for_writing = _impl.populate_for_writing
#: Not a layout: writing back a mapping's changed pages up to a position (``MappedFile.flush``).
write_back = _impl.write_back
