"""A CommitLog whose records live in the entries of a replicated log: the store's side of Java's
store/dledger/DLedgerCommitLog.

The store places a buffer of records as the log's next entries (one entry per record, as Java's
``BatchAppendEntryRequest``) and dispatches the records of committed entries only, through its one dispatch
routine. What the log itself does (append, replicate, recover, find the committed records) is the contract
below, which ``rocketmq_py.dledger.commit_log.DLedgerCommitLog`` fills with a DLedger member: the store
imports nothing of the DLedger package (that package imports the store), the broker makes the log and
hands it to :class:`~rocketmq_py.store.MessageStore`. See docs/design-dledger.md.
"""
from __future__ import annotations

import abc
import asyncio
import concurrent.futures
import logging
import threading
from typing import Callable

from rocketmq_py.errors import StoreError
from rocketmq_py.store import layout
from rocketmq_py.store.commit_log import CommitLog
from rocketmq_py.store.config import MessageStoreConfig
from rocketmq_py.store.results import PutMessageStatus
from rocketmq_py.store.write_path import PutRecordsResult, assign_queue_offsets, read_records

_log = logging.getLogger(__name__)

#: How long a put from another thread waits for the event loop to place its records.
_PLACE_FROM_THREAD_TIMEOUT_S = 30.0


class ReplicatedPutRefused(StoreError):
    """The log took no entry: ``status`` is the put's answer (nothing was written)."""

    def __init__(self, status: PutMessageStatus, reason: str) -> None:
        super().__init__(reason)
        self.status = status


class ReplicatedCommitLog(CommitLog, abc.ABC):
    """The plain CommitLog's files (kept below :attr:`divided_offset`) and a replicated log above it.

    The log is driven by one event loop (:meth:`start` captures it); a put from another thread (the schedule
    service) hops onto it. ``on_committed`` is set by the store and called on that loop each time the
    committed position moves.
    """

    def __init__(self, config: MessageStoreConfig) -> None:
        super().__init__(config)
        #: Where the replicated data start: the plain CommitLog's files end before (-1: there are none).
        self.divided_offset = -1
        #: Where the dispatch of committed entries goes on (an entry's start).
        self.dispatched_offset = 0
        self.on_committed: Callable[[], None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0

    # --- what the log provides ---------------------------------------------------------------------

    @abc.abstractmethod
    def recover_log(self) -> int:
        """Load and recover the files at the store's load (Java's ``DLedgerCommitLog.recover``): set
        :attr:`divided_offset` and return where the data end (the store cuts ConsumeQueues beyond)."""

    @abc.abstractmethod
    async def start_log(self) -> None:
        """Start replicating (the store has started and dispatches what is committed)."""

    @abc.abstractmethod
    async def shutdown_log(self) -> None:
        """Stop replicating; flush the log's files."""

    @abc.abstractmethod
    def append_entries(self, bodies: list[bytearray]) -> tuple[list[int], asyncio.Future[None]]:
        """Write ``bodies`` as the log's next entries (on the loop): the physical offset of each body's record,
        and a future done once a majority holds them. Raises :class:`ReplicatedPutRefused` when nothing was
        written; the future fails with it when the entries were written but not acknowledged."""

    @abc.abstractmethod
    def read_committed(self, offset: int) -> tuple[list[layout.RecordInfo], int]:
        """The records of the committed entries from ``offset`` (an entry's start) on, and where they end."""

    # --- the store's side ----------------------------------------------------------------------------

    def bind_loop(self) -> None:
        """Take the running event loop as the log's (called by :meth:`start_log`)."""
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()

    def place(self, records: bytes | bytearray | memoryview) -> tuple[PutRecordsResult, asyncio.Future[None] | None]:
        """Place complete CommitLog records as the log's next entries: their queue offsets from the leader's
        table, one store time, one entry each. The result has PUT_OK and the records' offsets, or the refusal
        with nothing written; the future is done once a majority holds the entries (None when refused)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            _log.warning("the replicated CommitLog is not started; refusing the put")
            return PutRecordsResult(PutMessageStatus.SERVICE_NOT_AVAILABLE), None
        if threading.get_ident() != self._loop_thread:
            return self._place_from_thread(loop, records)
        infos = read_records(records)
        if not infos:
            return PutRecordsResult(PutMessageStatus.MESSAGE_ILLEGAL), None
        table = self.topic_queue_table
        with self.put_lock:
            store_timestamp = self.begin_time_in_lock = self.clock()
            try:
                queue_offsets, next_offsets = assign_queue_offsets(table, infos)
                # The queue offsets and the store time go into the bytes as the plain placement writes them;
                # the physical offsets are the log's to write (its entries' positions are not known yet).
                stamped = bytearray(len(records) + layout.END_FILE_MIN_BLANK_LENGTH)
                layout.append_records(stamped, 0, len(stamped), records, queue_offsets, 0, store_timestamp)
                bodies: list[bytearray] = []
                start = 0
                for info in infos:
                    bodies.append(stamped[start:start + info.size])
                    start += info.size
                try:
                    physical_offsets, replicated = self.append_entries(bodies)
                except ReplicatedPutRefused as refused:
                    _log.warning("the replicated CommitLog refused %d records: %s", len(infos), refused)
                    return PutRecordsResult(refused.status), None
                # A put that does not wait (append_*) never awaits it: its outcome is taken here (the log
                # has logged a failure).
                replicated.add_done_callback(_retrieve)
                table.update(next_offsets)
            finally:
                self.begin_time_in_lock = 0
        return PutRecordsResult(PutMessageStatus.PUT_OK, physical_offsets, queue_offsets, store_timestamp,
                                len(records)), replicated

    def _place_from_thread(self, loop: asyncio.AbstractEventLoop, records: bytes | bytearray | memoryview
                           ) -> tuple[PutRecordsResult, asyncio.Future[None] | None]:
        done: concurrent.futures.Future[tuple[PutRecordsResult, asyncio.Future[None] | None]] = \
            concurrent.futures.Future()

        def place_on_loop() -> None:
            try:
                placed = self.place(records)
            except BaseException as error:  # handed to the waiting thread, which raises it
                done.set_exception(error)
            else:
                done.set_result(placed)

        try:
            loop.call_soon_threadsafe(place_on_loop)
            placed, _ = done.result(_PLACE_FROM_THREAD_TIMEOUT_S)
        except (RuntimeError, concurrent.futures.TimeoutError) as error:  # the loop closed, or is stuck
            _log.warning("placing records from thread %s failed: %r", threading.current_thread().name, error)
            return PutRecordsResult(PutMessageStatus.SERVICE_NOT_AVAILABLE), None
        # The caller cannot await a future of the loop: what it waits for is the placement alone.
        return placed, None

    # --- offsets ------------------------------------------------------------------------------------

    def dispatch_behind_bytes(self) -> int:
        """Committed bytes not dispatched yet."""
        return max(self.max_offset - self.dispatched_offset, 0)

    def append_data(self, start_offset: int, data: bytes) -> bool:
        # Java's DLedgerCommitLog.appendData: the HA client of a plain slave never writes here.
        return False

    def read_for_transfer(self, offset: int, max_size: int) -> bytes | None:
        return None


def _retrieve(future: asyncio.Future[None]) -> None:
    """Take the outcome of a replication nobody awaits (the log says what failed)."""
    if not future.cancelled():
        future.exception()


def outcome(replicated: asyncio.Future[None]) -> PutMessageStatus:
    """The put's status once ``replicated`` is done: PUT_OK, or the refusal it failed with."""
    error = replicated.exception()
    if error is None:
        return PutMessageStatus.PUT_OK
    if isinstance(error, ReplicatedPutRefused):
        return error.status
    _log.error("replicating a put failed: %r", error)
    return PutMessageStatus.UNKNOWN_ERROR
