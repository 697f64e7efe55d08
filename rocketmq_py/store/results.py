"""What the store answers (Java's PutMessageStatus, PutMessageResult, AppendMessageResult,
GetMessageStatus, GetMessageResult and QueryMessageResult).

Status names are Java's, so a processor can put ``status.name`` in a remark
as the Java broker does (a pull response's remark is the GetMessageStatus name).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rocketmq_py.remoting.file_region import RANGE

if TYPE_CHECKING:
    from rocketmq_py.store.mapped_file import MappedFile

#: One stored message as the store's arrival listeners are told of it: ``(topic, queue_id, next_queue_offset,
#: tags_code, store_timestamp, properties_text)`` (``MessageStore.add_arrival_listener``).
Arrival = tuple[str, int, int, int, int, str]


class PutMessageStatus(enum.Enum):
    PUT_OK = enum.auto()
    FLUSH_DISK_TIMEOUT = enum.auto()
    FLUSH_SLAVE_TIMEOUT = enum.auto()
    SLAVE_NOT_AVAILABLE = enum.auto()
    SERVICE_NOT_AVAILABLE = enum.auto()
    CREATE_MAPEDFILE_FAILED = enum.auto()
    MESSAGE_ILLEGAL = enum.auto()
    PROPERTIES_SIZE_EXCEEDED = enum.auto()
    OS_PAGECACHE_BUSY = enum.auto()
    UNKNOWN_ERROR = enum.auto()

    @property
    def is_ok(self) -> bool:
        """The message was stored (flush or slave timeouts still mean it is in the CommitLog)."""
        return self in (PutMessageStatus.PUT_OK, PutMessageStatus.FLUSH_DISK_TIMEOUT,
                        PutMessageStatus.FLUSH_SLAVE_TIMEOUT, PutMessageStatus.SLAVE_NOT_AVAILABLE)


class AppendMessageStatus(enum.Enum):
    PUT_OK = enum.auto()
    END_OF_FILE = enum.auto()
    MESSAGE_SIZE_EXCEEDED = enum.auto()
    PROPERTIES_SIZE_EXCEEDED = enum.auto()
    UNKNOWN_ERROR = enum.auto()


@dataclass
class AppendMessageResult:
    status: AppendMessageStatus
    #: CommitLog offset of the first record written.
    wrote_offset: int = 0
    wrote_bytes: int = 0
    #: Offset message id(s): one, or comma-joined for a batch (the SEND response's msgId).
    msg_id: str = ""
    store_timestamp: int = 0
    #: ConsumeQueue offset of the (first) message.
    logics_offset: int = 0
    msg_num: int = 1
    #: CommitLog offset of every record written.
    physical_offsets: list[int] = field(default_factory=list)


@dataclass
class PutMessageResult:
    status: PutMessageStatus
    append_result: AppendMessageResult | None = None

    @property
    def is_ok(self) -> bool:
        return self.status.is_ok


class GetMessageStatus(enum.Enum):
    FOUND = enum.auto()
    NO_MATCHED_MESSAGE = enum.auto()
    MESSAGE_WAS_REMOVING = enum.auto()
    OFFSET_FOUND_NULL = enum.auto()
    OFFSET_OVERFLOW_BADLY = enum.auto()
    OFFSET_OVERFLOW_ONE = enum.auto()
    OFFSET_TOO_SMALL = enum.auto()
    NO_MATCHED_LOGIC_QUEUE = enum.auto()
    NO_MESSAGE_IN_QUEUE = enum.auto()


class RecordRegion:
    """Where a pull's records lie in the CommitLog's files, instead of a copy of them: a ``FileRegion``
    (``rocketmq_py.remoting.file_region``), which a front process reads from the files itself, as Java's pull
    writes its records as a Netty FileRegion with transferMsgByHeap=false. Records that follow each other in one
    file make one range.

    ``views`` holds each file's mapping until the answer is written: a file the clean service closes meanwhile
    keeps its bytes here (its close leaves the mapping to the last view), so :meth:`copy` can still give them."""

    __slots__ = ("files", "views", "ranges", "size")

    def __init__(self, files: list[MappedFile], views: list[memoryview], ranges: bytes, size: int) -> None:
        self.files = files
        self.views = views
        #: ``file_region.RANGE`` entries, back to back.
        self.ranges = ranges
        #: The bytes of all ranges together: the length of the body they make.
        self.size = size

    def copy(self) -> bytes:
        """The records, back to back: the body the ranges make."""
        views = self.views
        return b"".join([views[index][position:position + size]
                         for index, position, size in RANGE.iter_unpack(self.ranges)])

    def __repr__(self) -> str:
        ranges = len(self.ranges) // RANGE.size
        return f"RecordRegion({ranges} ranges of {len(self.files)} files, {self.size} bytes)"


@dataclass
class GetMessageResult:
    status: GetMessageStatus
    next_begin_offset: int = 0
    min_offset: int = 0
    max_offset: int = 0
    #: The records found, back to back, each exactly as stored: the body of a PULL_MESSAGE response.
    #: A pull gathers them straight into this one buffer rather than copying each out and joining the copies.
    body: bytes = b""
    #: The ConsumeQueue offset of each record in ``body``.
    queue_offsets: list[int] = field(default_factory=list)
    suggest_pulling_from_slave: bool = False
    #: Where the records lie, when the pull asked for their places (``in_files``) rather than a copy in ``body``.
    region: RecordRegion | None = None

    @property
    def message_count(self) -> int:
        return len(self.queue_offsets)

    @property
    def buffer_total_size(self) -> int:
        return self.region.size if self.region is not None else len(self.body)

    @property
    def buffers(self) -> list[bytes]:
        """The records of ``body`` one by one, cut where each record's leading TOTALSIZE says it ends
        (a size that cannot be a record's takes the rest of the body)."""
        records = []
        body = self.body if self.region is None else self.region.copy()
        position = 0
        while position < len(body):
            size = int.from_bytes(body[position:position + 4], "big")
            if size < 4 or position + size > len(body):
                size = len(body) - position
            records.append(body[position:position + size])
            position += size
        return records


@dataclass
class QueryMessageResult:
    buffers: list[bytes] = field(default_factory=list)
    index_last_update_timestamp: int = 0
    index_last_update_phyoffset: int = 0

    @property
    def body(self) -> bytes:
        return b"".join(self.buffers)

    @property
    def buffer_total_size(self) -> int:
        return sum(len(b) for b in self.buffers)
