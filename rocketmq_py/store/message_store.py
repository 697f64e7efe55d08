"""The message store (Java's store/DefaultMessageStore): the API the broker's processors use.

Lifecycle: ``MessageStore(config)``, ``load()`` (maps the files and recovers:
normally after a clean shutdown, from the checkpoint after a crash, which the
``abort`` file marks), ``start()`` (takes the ``lock`` file, catches up the
ConsumeQueues with the CommitLog, starts the flush and clean threads),
``shutdown()`` (flushes, and removes ``abort`` when all is consistent).

Writes: ``await put_message(msg)`` / ``await put_messages(batch)`` build the
records of a message or a batch body; ``await put_records(records)`` takes
records built elsewhere (the broker's fast send path). Each appends to the
CommitLog, builds the ConsumeQueue units and the index entries at once (Java
does this on its reput thread; doing it in the put makes a message readable
as soon as it is acknowledged), tells the arrival listeners (long polling),
and under SYNC_FLUSH returns only after the group commit flushed it.
``append_message`` / ``append_messages`` / ``append_records`` do the same
without waiting for the flush. All of them go one way, through the store's
write path (:mod:`rocketmq_py.store.write_path`; see
docs/design-store-write-path.md). Reads never block on disk writes and return
copies.
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

from rocketmq_py import codec
from rocketmq_py.common.clock import now_ms
from rocketmq_py.common.message import MessageConst, MessageExt
from rocketmq_py.common.sysflag import TRANSACTION_COMMIT_TYPE, TRANSACTION_NOT_TYPE, TRANSACTION_TYPE_MASK
from rocketmq_py.common.topic import RMQ_SYS_SCHEDULE_TOPIC
from rocketmq_py.errors import CodecError
from rocketmq_py.store import layout
from rocketmq_py.store.checkpoint import StoreCheckpoint
from rocketmq_py.store.clean import CleanService, DiskUsage, disk_used_ratio
from rocketmq_py.store.commit_log import CommitLog, offset_msg_id
from rocketmq_py.store.config import SLAVE, SYNC_FLUSH, SYNC_MASTER, MessageStoreConfig, delay_level_table
from rocketmq_py.store.consume_queue import ConsumeQueue, names_a_directory
from rocketmq_py.store.consumed import ConsumedOffsets, ConsumerProgress
from rocketmq_py.store.flush import FlushConsumeQueueService, FlushRealTimeService, GroupCommitService, ServiceThread
from rocketmq_py.store.prefault import CommitLogPrefaultService
from rocketmq_py.store.index import IndexService
from rocketmq_py.store.lock import StoreLock
from rocketmq_py.store.mapped_file import StoreDiskFullError
from rocketmq_py.errors import StoreError
from rocketmq_py.store.message import StoreMessage, StoreMessageBatch, pack_host
from rocketmq_py.store.reads import StoreReads
from rocketmq_py.store.replicated_log import ReplicatedCommitLog, outcome
from rocketmq_py.store.schedule import ScheduleMessageService
from rocketmq_py.store.results import (
    AppendMessageResult,
    AppendMessageStatus,
    Arrival,
    PutMessageResult,
    PutMessageStatus,
)
from rocketmq_py.store.write_path import PutRecordsResult, StoreWriter

if TYPE_CHECKING:
    from rocketmq_py.store.ha import HAService

_log = logging.getLogger(__name__)


#: ``listener(arrivals)``: the messages of one put, in CommitLog order (see :data:`Arrival`).
ArrivalListener = Callable[[list[Arrival]], None]


def _call_listener(listener: ArrivalListener, arrivals: list[Arrival]) -> None:
    try:
        listener(arrivals)
    except Exception:
        _log.exception("message arrival listener %r failed", listener)


class MessageStore(StoreReads):
    def __init__(self, config: MessageStoreConfig, *, disk_usage: DiskUsage = disk_used_ratio,
                 consumer_progress: ConsumerProgress | None = None, commit_log: CommitLog | None = None) -> None:
        """``consumer_progress`` tells the forced clean what the consumer groups have consumed (the broker
        passes it; without it, no message counts as consumed and only expired files are deleted).
        ``commit_log`` replaces the plain CommitLog: the broker passes a DLedger one when
        ``enableDLegerCommitLog`` is true (see :mod:`rocketmq_py.store.replicated_log`)."""
        self.config = config
        self.commit_log = commit_log if commit_log is not None else CommitLog(config)
        #: The same object as :attr:`commit_log` when its records are replicated entries (DLedger), else None.
        self.replicated = commit_log if isinstance(commit_log, ReplicatedCommitLog) else None
        self.consume_queue_table: dict[str, dict[int, ConsumeQueue]] = {}
        self.delay_levels = delay_level_table(config.message_delay_level)
        self.max_delay_level = max(self.delay_levels)
        self.checkpoint: StoreCheckpoint | None = None
        self.index_service: IndexService | None = None
        #: ``(listener, its loop, that loop's thread id)``; the loop is None for a listener called in any thread.
        self.arrival_listeners: list[tuple[ArrivalListener, asyncio.AbstractEventLoop | None, int]] = []
        #: The one way records are written and dispatched, made by :meth:`load` (see ``write_path``).
        self._writer: StoreWriter | None = None
        self.disk_full = False
        self.last_exit_ok = True
        self._running = False
        self.store_lock = StoreLock(config.root, config.lock_path)
        #: When a store file could not get its blocks (monotonic seconds): the disk check then keeps puts
        #: refused for a while even if the used ratio looks fine (the next file may still not fit).
        self.allocation_failed_at: float | None = None
        self._disk_usage = disk_usage
        self._consumer_progress = consumer_progress
        self._flush_service: FlushRealTimeService | GroupCommitService | None = None
        self.prefault_service: CommitLogPrefaultService | None = None
        self._flush_cq_service: FlushConsumeQueueService | None = None
        self.clean_service: CleanService | None = None
        self.schedule_service: ScheduleMessageService | None = None
        #: The master's HA service (rocketmq_py.store.ha), set by the broker; SYNC_MASTER puts wait on it.
        self.ha_service: HAService | None = None

    # --- lifecycle ---------------------------------------------------------------------------

    def lock(self) -> None:
        """Take the store's lock; raises :class:`StoreLockedError` when a running broker holds it.

        :meth:`load` takes it first; a broker takes it before it reads even its config files."""
        self.store_lock.acquire()

    def load(self) -> None:
        """Map the store files and recover them; raises :class:`StoreError` when they cannot be used."""
        self.lock()
        self.last_exit_ok = not self.config.abort_path.exists()
        _log.info("last shutdown was %s", "clean" if self.last_exit_ok else "abnormal: recovering from the checkpoint")
        self.commit_log.load()
        self._load_consume_queues()
        self.checkpoint = StoreCheckpoint(self.config.checkpoint_path)
        self.index_service = IndexService(self.config, self.checkpoint)
        self.index_service.load(self.last_exit_ok)
        self._writer = StoreWriter(self)
        if self.replicated is not None:
            self.replicated.on_committed = self.dispatch_committed
        self._recover()
        self.schedule_service = ScheduleMessageService(self)
        self.schedule_service.load()

    def _load_consume_queues(self) -> None:
        root = self.config.consume_queue_dir
        if not root.is_dir():
            return
        for topic_dir in sorted(p for p in root.iterdir() if p.is_dir()):
            for queue_dir in sorted(p for p in topic_dir.iterdir() if p.is_dir()):
                try:
                    queue_id = int(queue_dir.name)
                except ValueError:
                    continue
                consume_queue = ConsumeQueue(topic_dir.name, queue_id, root, self.config.consume_queue_file_size)
                consume_queue.load()
                self.consume_queue_table.setdefault(topic_dir.name, {})[queue_id] = consume_queue

    def _recover(self) -> None:
        max_cq_physical = -1
        for consume_queue in self.consume_queues():
            consume_queue.recover()
            max_cq_physical = max(max_cq_physical, consume_queue.max_physic_offset)
        if self.replicated is not None:
            self._cut_consume_queues(max_cq_physical, self.replicated.recover_log())
            self.recover_topic_queue_table()
            return
        if not self.commit_log.queue.files:
            if self.consume_queue_table:
                _log.warning("there are no CommitLog files: dropping the ConsumeQueues")
            for consume_queue in self.consume_queues():
                consume_queue.destroy()
            self.consume_queue_table.clear()
            return
        assert self.checkpoint is not None
        if self.last_exit_ok:
            end = self.commit_log.recover_normally()
        else:
            end = self.commit_log.recover_abnormally(self.checkpoint, self._dispatch_recovered)
        self._cut_consume_queues(max_cq_physical, end)
        self.recover_topic_queue_table()

    def _cut_consume_queues(self, max_cq_physical: int, end: int) -> None:
        if max_cq_physical >= end:
            if max_cq_physical > end:
                _log.warning("ConsumeQueues point up to %d, beyond the CommitLog end %d: truncating them",
                             max_cq_physical, end)
            for consume_queue in self.consume_queues():
                consume_queue.truncate_dirty_logic_files(end)

    def _dispatch_recovered(self, info: layout.RecordInfo) -> None:
        assert self._writer is not None
        self._writer.dispatch([info])

    def recover_topic_queue_table(self) -> None:
        """Rebuild the next queue offset of every queue from the ConsumeQueues (a DLedger leader does it once
        every committed entry is dispatched, before it takes puts)."""
        min_physical = self.commit_log.min_offset
        table = {}
        for consume_queue in self.consume_queues():
            table[(consume_queue.topic, consume_queue.queue_id)] = consume_queue.max_offset_in_queue
            consume_queue.correct_min_offset(min_physical)
        self.commit_log.topic_queue_table = table

    def start(self) -> None:
        """Lock the store directory, catch up the ConsumeQueues and start the background services."""
        if self.checkpoint is None:
            raise StoreError("load() the store before start()")
        self.lock()
        reput_from = max([cq.max_physic_offset for cq in self.consume_queues()] + [self.commit_log.min_offset, 0])
        self._reput(reput_from)
        if self.replicated is not None:
            self.replicated.dispatched_offset = reput_from
            self.dispatch_committed()
        self.recover_topic_queue_table()
        if self.config.flush_disk_type == SYNC_FLUSH:
            self._flush_service = GroupCommitService(self.commit_log.queue, self.checkpoint)
        else:
            self._flush_service = FlushRealTimeService(self.commit_log.queue, self.checkpoint, self.config)
        assert self.index_service is not None
        self._flush_cq_service = FlushConsumeQueueService(self.config, self.checkpoint, self.consume_queues,
                                                          self.index_service.flush)
        self.clean_service = CleanService(self, self._disk_usage)
        self.config.abort_path.touch()
        self._running = True
        services: list[ServiceThread] = [self._flush_service, self._flush_cq_service, self.clean_service]
        if self.config.commit_log_prefault_bytes > 0 and self.replicated is None:
            self.prefault_service = CommitLogPrefaultService(self.commit_log.queue,
                                                             self.config.commit_log_prefault_bytes)
            services.append(self.prefault_service)
        # A DLedger broker's role changes with its member's: its role handler starts the schedule service.
        if self.config.broker_role != SLAVE and self.schedule_service is not None and self.replicated is None:
            services.append(self.schedule_service)
        for service in services:
            service.start()
        _log.info("message store started at %s: CommitLog [%d, %d)", self.config.root, self.commit_log.min_offset,
                  self.commit_log.max_offset)

    def _reput(self, from_offset: int) -> None:
        """Dispatch CommitLog records from ``from_offset`` on that the ConsumeQueues do not have yet."""
        offset = max(from_offset, self.commit_log.min_offset, 0)
        end = self.commit_log.max_offset
        caught_up = 0
        while offset < end:
            info = self.commit_log.check_at(offset)
            if info is None:
                break
            if info.size > 0:
                self._dispatch_recovered(info)
                offset += info.size
                caught_up += 1
            elif info.size == layout.RECORD_BLANK:
                offset = self.commit_log.roll_next_file(offset)
            else:
                _log.error("CommitLog record at %d does not validate; dispatching stops there", offset)
                break
        if caught_up:
            _log.info("dispatched %d CommitLog records the ConsumeQueues were missing", caught_up)

    def shutdown(self) -> None:
        """Stop the services, flush everything and close the files; a clean stop removes ``abort``."""
        if not self._running:
            self._close_files()
            self.store_lock.release()
            return
        self._running = False
        for service in (self.prefault_service, self.schedule_service, self.clean_service, self._flush_service,
                        self._flush_cq_service):
            if service is not None and service.started:
                service.shutdown()
        if self.index_service is not None:
            self.index_service.shutdown()
        if self.checkpoint is not None:
            self.checkpoint.shutdown()
        self._close_files()
        if not self.disk_full:
            self.config.abort_path.unlink(missing_ok=True)
        else:
            _log.warning("the store was not writable; keeping the abort file so the next start recovers")
        self.store_lock.release()
        _log.info("message store at %s shut down", self.config.root)

    def _close_files(self) -> None:
        self.commit_log.shutdown()
        for consume_queue in self.consume_queues():
            consume_queue.shutdown()

    # --- writes ------------------------------------------------------------------------------

    def _check_store_status(self) -> PutMessageStatus | None:
        refused = self._store_refusal()
        if refused is not None:
            self._log_refusal()
        return refused

    def _log_refusal(self) -> None:
        if not self._running:
            _log.warning("the message store is not running; refusing the put")

    def _store_refusal(self) -> PutMessageStatus | None:
        """Why the store takes no put now (None: it takes them); without a log line, for :meth:`refuses_plain`."""
        if not self._running or self.config.broker_role == SLAVE or self.disk_full:
            return PutMessageStatus.SERVICE_NOT_AVAILABLE
        # Asked on every put: the busy check only while a put holds the lock (another thread's).
        if self.commit_log.begin_time_in_lock and self.is_os_page_cache_busy():
            return PutMessageStatus.OS_PAGECACHE_BUSY
        return None

    def is_os_page_cache_busy(self) -> bool:
        """True while a put has held the put lock longer than ``osPageCacheBusyTimeOutMills`` (Java's check)."""
        begin = self.commit_log.begin_time_in_lock
        # Java's bound of 10^7 ms ignores a lock time that is no time at all (0, or a clock jump).
        return bool(begin) and self.config.os_page_cache_busy_time_out_mills < now_ms() - begin < 10_000_000

    def _check_topic(self, topic: str) -> PutMessageStatus | None:
        if len(topic.encode("utf-8")) > layout.MAX_TOPIC_LENGTH:
            _log.warning("topic %r is longer than %d bytes", topic[:40], layout.MAX_TOPIC_LENGTH)
            return PutMessageStatus.MESSAGE_ILLEGAL
        if not names_a_directory(topic):
            _log.warning("topic %r cannot name a ConsumeQueue directory", topic[:40])
            return PutMessageStatus.MESSAGE_ILLEGAL
        return None

    def append_message(self, msg: StoreMessage) -> PutMessageResult:
        """Append one message (without waiting for a flush); see :meth:`put_message`."""
        return self._append_message(msg)[0]

    def _append_message(self, msg: StoreMessage) -> tuple[PutMessageResult, asyncio.Future[None] | None]:
        refused = self._check_store_status() or self._check_topic(msg.topic)
        if refused:
            return PutMessageResult(refused), None
        if msg.sys_flag & TRANSACTION_TYPE_MASK in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE):
            self._divert_delayed(msg)
        if len(msg.body) > self.config.max_message_size:
            _log.warning("message body of %d bytes is over maxMessageSize %d", len(msg.body),
                         self.config.max_message_size)
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL), None
        properties = msg.encoded_properties()
        if len(properties) > layout.MAX_PROPERTIES_LENGTH:
            return PutMessageResult(PutMessageStatus.PROPERTIES_SIZE_EXCEEDED), None
        store_host = pack_host(msg.store_host)
        record = layout.encode_record(msg.topic.encode("utf-8"), msg.body, properties, msg.queue_id, msg.flag,
                                      msg.sys_flag, msg.born_timestamp, pack_host(msg.born_host), store_host,
                                      msg.reconsume_times, msg.prepared_transaction_offset)
        return self._put_built(record, store_host)

    def _divert_delayed(self, msg: StoreMessage) -> None:
        level = msg.delay_time_level
        if level <= 0:
            return
        level = min(level, self.max_delay_level)
        msg.properties[MessageConst.DELAY_TIME_LEVEL] = str(level)
        msg.properties[MessageConst.REAL_TOPIC] = msg.topic
        msg.properties[MessageConst.REAL_QUEUE_ID] = str(msg.queue_id)
        msg.properties_string = None
        msg.topic = RMQ_SYS_SCHEDULE_TOPIC
        msg.queue_id = level - 1

    def append_messages(self, batch: StoreMessageBatch) -> PutMessageResult:
        """Append a batch (without waiting for a flush); see :meth:`put_messages`."""
        return self._append_messages(batch)[0]

    def _append_messages(self, batch: StoreMessageBatch) -> tuple[PutMessageResult, asyncio.Future[None] | None]:
        refused = self._check_store_status() or self._check_topic(batch.topic)
        if refused:
            return PutMessageResult(refused), None
        transactional = batch.sys_flag & TRANSACTION_TYPE_MASK != TRANSACTION_NOT_TYPE
        if transactional or MessageConst.DELAY_TIME_LEVEL in batch.properties:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL), None
        if len(batch.body) > self.config.max_message_size:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL), None
        properties = codec.properties_to_string(batch.properties).encode("utf-8")
        store_host = pack_host(batch.store_host)
        try:
            records, _ = layout.encode_batch(batch.body, batch.topic.encode("utf-8"), batch.queue_id,
                                             batch.sys_flag, batch.born_timestamp, pack_host(batch.born_host), 0,
                                             store_host, batch.reconsume_times, properties)
        except ValueError as error:
            _log.warning("batch for %s refused: %s", batch.topic, error)
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL), None
        return self._put_built(records, store_host)

    def _put_built(self, records: bytearray, store_host: bytes
                   ) -> tuple[PutMessageResult, asyncio.Future[None] | None]:
        """Write the records :meth:`append_message` or :meth:`append_messages` built; Java's answer for them,
        and what a replicated put still waits for."""
        if not records or len(records) > self.max_records_length:
            # Java's MESSAGE_SIZE_EXCEEDED (an empty batch body is refused the same way).
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL,
                                    AppendMessageResult(AppendMessageStatus.MESSAGE_SIZE_EXCEEDED)), None
        put, replicated = self._place(records)
        if put.status is not PutMessageStatus.PUT_OK:
            return PutMessageResult(put.status), None
        offsets = put.physical_offsets
        msg_id = ",".join(offset_msg_id(store_host, offset) for offset in offsets)
        return PutMessageResult(PutMessageStatus.PUT_OK, AppendMessageResult(
            AppendMessageStatus.PUT_OK, offsets[0], put.wrote_bytes, msg_id, put.store_timestamp,
            put.queue_offsets[0], len(offsets), offsets)), replicated

    def _place(self, records: bytes | bytearray) -> tuple[PutRecordsResult, asyncio.Future[None] | None]:
        """Place and dispatch the records (the plain CommitLog), or place them as replicated entries, dispatched
        once committed: the result, and the future of that replication."""
        if self.replicated is not None:
            return self.replicated.place(records)
        assert self._writer is not None
        try:
            return self._writer.put(records), None
        except StoreDiskFullError as error:
            return PutRecordsResult(self._refuse_disk_full(error)), None

    def append_records(self, records: bytes | bytearray | memoryview) -> PutRecordsResult:
        """Store CommitLog records built elsewhere (without waiting for a flush); see :meth:`put_records`."""
        # The broker's fast send path calls this for every message: no more Python calls than it needs.
        refused = self._store_refusal()
        if refused is not None:
            self._log_refusal()
            return PutRecordsResult(refused)
        if self.replicated is not None:
            return self.replicated.place(records)[0]
        assert self._writer is not None
        try:
            put = self._writer.put(records)
        except StoreDiskFullError as error:
            return PutRecordsResult(self._refuse_disk_full(error))
        if put.status is PutMessageStatus.PUT_OK:
            self.wake_flush()
        return put

    async def put_records(self, records: bytes | bytearray | memoryview,
                          wait_store_msg_ok: bool = True) -> PutRecordsResult:
        """Store complete CommitLog records built elsewhere, of any topics and queues, and tell where each went.

        ``records`` are back to back as ``encode_record`` / ``encode_batch`` make them: the store reads each
        one's topic, queue, sysflag and properties from its bytes, gives it its queue offset (the next of its
        topic-queue), its CommitLog offset and one store time for all, writes the buffer into one CommitLog
        file and dispatches every record (see docs/design-store-write-path.md for what a caller provides).
        The result's status is PUT_OK, or the refusal with nothing written. As :meth:`put_message`, it waits
        for the group commit (SYNC_FLUSH) and a slave (SYNC_MASTER) unless ``wait_store_msg_ok`` is false.
        """
        if self.replicated is not None:
            refused = self._check_store_status()
            if refused is not None:
                return PutRecordsResult(refused)
            put, replicated = self.replicated.place(records)
            if replicated is not None:
                put.status = await self._committed(replicated)
            return put
        put = self.append_records(records)
        if put.status is not PutMessageStatus.PUT_OK:
            return put
        end = put.physical_offsets[0] + put.wrote_bytes
        if self._waits_for_flush(wait_store_msg_ok):
            put.status = await self._flushed(end)
        if self._waits_for_replica(wait_store_msg_ok):
            assert self.ha_service is not None
            put.status = await self.ha_service.replicated(put.status, end)
        return put

    @property
    def max_records_length(self) -> int:
        """The longest buffer of records one put can take: a CommitLog file less its end marker."""
        return self.commit_log.file_size - layout.END_FILE_MIN_BLANK_LENGTH

    def _make_room(self, queues: Iterable[tuple[str, int]]) -> PutMessageStatus | None:
        """Make the files a put into ``queues`` needs before the CommitLog is written: the CommitLog's next
        file, each queue's ConsumeQueue file, the index's (the write path asks when one is missing or full).

        Each file gets its blocks at creation, so a full disk raises StoreDiskFullError here, before anything is
        written, and a record once in the CommitLog always finds room in its ConsumeQueue and index. A new queue
        whose topic cannot name a directory gives MESSAGE_ILLEGAL, with nothing made."""
        queues = list(queues)
        for topic, queue_id in queues:
            if self.get_consume_queue(topic, queue_id) is None and not names_a_directory(topic):
                _log.warning("topic %r cannot name a ConsumeQueue directory", topic[:40])
                return PutMessageStatus.MESSAGE_ILLEGAL
        self.commit_log.queue.get_last_mapped_file(0)
        for topic, queue_id in queues:
            next_unit = self.commit_log.topic_queue_table.get((topic, queue_id), 0) * layout.CQ_UNIT_SIZE
            self.find_consume_queue(topic, queue_id).queue.get_last_mapped_file(next_unit)
        if self.config.message_index_enable and self.index_service is not None:
            self.index_service.writable_file()
        return None

    def _refuse_disk_full(self, error: StoreDiskFullError) -> PutMessageStatus:
        """A put whose file could not get its blocks (nothing was written): refused, and the store marked full."""
        self.allocation_failed_at = time.monotonic()
        if not self.disk_full:
            _log.error("a store file could not get its blocks (%s): marking the store full, puts are refused", error)
        self.disk_full = True
        return PutMessageStatus.SERVICE_NOT_AVAILABLE

    async def put_message(self, msg: StoreMessage) -> PutMessageResult:
        """Store one message; under SYNC_FLUSH (and WAIT not false) return after it is on disk.

        A flush not done within ``syncFlushTimeout`` gives FLUSH_DISK_TIMEOUT (the message is stored).
        """
        result, replicated = self._append_message(msg)
        if replicated is not None:
            result.status = await self._committed(replicated)
            return result
        result = await self._wait_for_flush(result, msg.wait_store_msg_ok)
        return await self._wait_for_replica(result, msg.wait_store_msg_ok)

    async def put_messages(self, batch: StoreMessageBatch) -> PutMessageResult:
        """Store every message of a SEND_BATCH_MESSAGE body, with consecutive queue offsets."""
        result, replicated = self._append_messages(batch)
        if replicated is not None:
            result.status = await self._committed(replicated)
            return result
        result = await self._wait_for_flush(result, batch.wait_store_msg_ok)
        return await self._wait_for_replica(result, batch.wait_store_msg_ok)

    async def _committed(self, replicated: asyncio.Future[None]) -> PutMessageStatus:
        """A replicated put's answer (whatever its WAIT, as Java's DLedgerCommitLog): once a majority holds its
        entries and the store has dispatched them, so a pull that follows the answer finds them."""
        try:
            await asyncio.shield(replicated)
        except Exception:
            pass  # the outcome below says what failed
        status = outcome(replicated)
        if status is PutMessageStatus.PUT_OK:
            self.dispatch_committed()
        return status

    async def _wait_for_replica(self, result: PutMessageResult, wait: bool) -> PutMessageResult:
        """SYNC_MASTER: the put is answered once a slave has it (Java's handleHA / submitReplicaRequest)."""
        if not self._waits_for_replica(wait):
            return result
        assert self.ha_service is not None
        return await self.ha_service.wait_for_replica(result)

    async def _wait_for_flush(self, result: PutMessageResult, wait: bool) -> PutMessageResult:
        if result.status != PutMessageStatus.PUT_OK or result.append_result is None:
            return result
        if not self._waits_for_flush(wait):
            self.wake_flush()
            return result
        result.status = await self._flushed(result.append_result.wrote_offset + result.append_result.wrote_bytes)
        return result

    async def _flushed(self, end: int) -> PutMessageStatus:
        """PUT_OK once the group commit has flushed the CommitLog up to ``end``; FLUSH_DISK_TIMEOUT after
        ``syncFlushTimeout``."""
        service = self._flush_service
        assert isinstance(service, GroupCommitService)
        future = service.put_request(end)
        try:
            return await asyncio.wait_for(future, self.config.sync_flush_timeout / 1000)
        except asyncio.TimeoutError:
            return PutMessageStatus.FLUSH_DISK_TIMEOUT

    def wake_flush(self) -> None:
        """After a put that waits for no flush: wake the flush thread, as Java's handleDiskFlush does."""
        service = self._flush_service
        if isinstance(service, GroupCommitService) or (service is not None and not self.config.flush_commit_log_timed):
            service.wakeup()

    def refuses_plain(self, body_length: int, properties_length: int) -> bool:
        """True when :meth:`append_message` would refuse a plain message of these sizes, or any message now."""
        return (self._store_refusal() is not None or body_length > self.config.max_message_size
                or properties_length > layout.MAX_PROPERTIES_LENGTH)

    def put_waits(self, wait_store_msg_ok: bool) -> bool:
        """True when a put with this WAIT must wait (a SYNC_FLUSH group commit, a SYNC_MASTER's slave; every
        put to a replicated CommitLog, for a majority)."""
        return (self.replicated is not None or self._waits_for_flush(wait_store_msg_ok)
                or self._waits_for_replica(wait_store_msg_ok))

    def _waits_for_flush(self, wait_store_msg_ok: bool) -> bool:
        return wait_store_msg_ok and isinstance(self._flush_service, GroupCommitService)

    def _waits_for_replica(self, wait_store_msg_ok: bool) -> bool:
        return wait_store_msg_ok and self.ha_service is not None and self.config.broker_role == SYNC_MASTER

    # --- dispatch --------------------------------------------------------------------------------

    def dispatch_from(self, offset: int) -> int:
        """Dispatch the complete records from ``offset`` on (a slave's reput after bytes from the master).

        Returns where dispatching stopped: the end of the data, or the start of a record not complete yet.
        """
        assert self._writer is not None
        with self._writer.lock:
            end = self.commit_log.max_offset
            records = []
            while offset < end:
                info = self.commit_log.check_at(offset)
                if info is None:
                    break
                if info.size > 0:
                    records.append(info)
                    offset += info.size
                elif info.size == layout.RECORD_BLANK:
                    offset = self.commit_log.roll_next_file(offset)
                else:
                    break
            arrivals = self._writer.dispatch(records)
            for info in records:
                if info.sys_flag & TRANSACTION_TYPE_MASK in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE):
                    self.commit_log.topic_queue_table[(info.topic, info.queue_id)] = info.queue_offset + 1
                self._note_replicated_timestamp(info)
        if arrivals:
            self.tell_arrivals(arrivals)
        return offset

    def dispatch_committed(self) -> None:
        """Dispatch the records of the replicated log's entries committed since the last call (on its loop)."""
        log = self.replicated
        if log is None or self._writer is None:
            return
        with self._writer.lock:
            infos, end = log.read_committed(log.dispatched_offset)
            try:
                arrivals = self._writer.dispatch(infos) if infos else []
            except StoreDiskFullError as error:
                # Nothing is lost: the entries stay committed and are dispatched again at the next commit.
                _log.error("dispatching committed entries from %d failed: %s", log.dispatched_offset, error)
                self.disk_full = True
                return
            log.dispatched_offset = end
        if arrivals:
            self.tell_arrivals(arrivals)

    def _note_replicated_timestamp(self, info: layout.RecordInfo) -> None:
        # The checkpoint trusts a CommitLog file's store time once flushed; bytes from the master carry theirs.
        mapped = self.commit_log.queue.find_mapped_file_by_offset(info.physical_offset)
        if mapped is not None:
            mapped.store_timestamp = info.store_timestamp

    def tell_arrivals(self, arrivals: list[Arrival]) -> None:
        """Tell every arrival listener the messages of one put (see :data:`ArrivalListener`)."""
        # One hop and one call per listener for the whole put (a front's PLACE holds thousands of messages),
        # not one per message: a listener looks at the messages only when something waits for them.
        # The thread id tells the loop's own thread (asyncio.get_running_loop makes a getpid call each time).
        for listener, loop, loop_thread in self.arrival_listeners:
            if loop is not None and threading.get_ident() != loop_thread:
                try:
                    loop.call_soon_threadsafe(_call_listener, listener, arrivals)
                except RuntimeError:  # the loop is closed
                    pass
            else:
                _call_listener(listener, arrivals)

    def add_arrival_listener(self, listener: ArrivalListener) -> None:
        """Call ``listener`` after every put with its messages (long polling wakes suspended pulls with it).

        Registered while an event loop runs, the listener is always called on
        that loop's thread, also for messages put by the store's own threads
        (delayed messages coming due).
        """
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        self.arrival_listeners.append((listener, loop, threading.get_ident()))

    def compute_deliver_timestamp(self, delay_level: int, store_timestamp: int) -> int:
        delay = self.delay_levels.get(min(delay_level, self.max_delay_level))
        return store_timestamp + delay if delay is not None else store_timestamp + 1000

    # --- consume queues ------------------------------------------------------------------------

    def consume_queues(self) -> list[ConsumeQueue]:
        return [cq for queues in list(self.consume_queue_table.values()) for cq in list(queues.values())]

    def get_consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        return self.consume_queue_table.get(topic, {}).get(queue_id)

    def find_consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue:
        """The ConsumeQueue of ``topic``/``queue_id``, created when it does not exist yet."""
        queues = self.consume_queue_table.get(topic)
        if queues is None:
            queues = self.consume_queue_table.setdefault(topic, {})
        consume_queue = queues.get(queue_id)
        if consume_queue is None:
            consume_queue = ConsumeQueue(topic, queue_id, self.config.consume_queue_dir,
                                         self.config.consume_queue_file_size)
            queues[queue_id] = consume_queue
        return consume_queue

    def clean_unused_topic(self, topics: Iterable[str]) -> int:
        """Drop the ConsumeQueues of every topic not in ``topics`` (but the schedule topic); return how many."""
        keep = set(topics) | {RMQ_SYS_SCHEDULE_TOPIC}
        removed = 0
        for topic in [t for t in self.consume_queue_table if t not in keep]:
            for queue_id, consume_queue in self.consume_queue_table.pop(topic).items():
                consume_queue.destroy()
                self.commit_log.remove_queue(topic, queue_id)
            topic_dir = self.config.consume_queue_dir / topic
            try:
                topic_dir.rmdir()
            except OSError:
                pass
            removed += 1
            _log.info("removed the ConsumeQueues of topic %s", topic)
        return removed

    # --- state ---------------------------------------------------------------------------------

    def mark_disk_full(self, full: bool, used_ratio: float) -> None:
        if full and not self.disk_full:
            _log.error("the disk is %.1f %% used: marking the store full, puts are refused", used_ratio * 100)
        elif not full and self.disk_full:
            _log.info("the disk is %.1f %% used again: puts are accepted", used_ratio * 100)
        self.disk_full = full

    @property
    def is_running(self) -> bool:
        return self._running

    def consumer_progress(self) -> ConsumedOffsets | None:
        """What the consumer groups have consumed, for the forced clean (None: not known now)."""
        return self._consumer_progress() if self._consumer_progress is not None else {}

    def execute_delete_files_manually(self) -> None:
        if self.clean_service is not None:
            self.clean_service.execute_delete_files_manually()

    def dispatch_behind_bytes(self) -> int:
        """CommitLog bytes not yet in the ConsumeQueues: 0 for a plain CommitLog, as every put dispatches before
        it returns; the committed entries not dispatched yet for a replicated one."""
        return self.replicated.dispatch_behind_bytes() if self.replicated is not None else 0

    def handle_schedule_service(self, master: bool) -> None:
        """Run the delayed messages' service on a master only (Java's handleScheduleMessageService): a DLedger
        broker's role handler calls it at each change."""
        service = self.schedule_service
        running = service is not None and service.started and not service.stopped
        if master and not running and self._running:
            # A service thread runs once: a new one, with the delay offsets as they are now (a slave's were
            # synchronised from its master).
            service = self.schedule_service = ScheduleMessageService(self)
            service.load()
            service.start()
        elif not master and running:
            assert service is not None
            service.shutdown()

    def bytes_to_flush(self) -> int:
        """CommitLog bytes written but not flushed yet (Java's remainHowManyDataToFlush)."""
        return self.commit_log.queue.remain_to_flush()

    def lock_time_mills(self) -> int:
        """How long the current put has held the CommitLog lock (0 when it is free): Java's lockTimeMills."""
        began = self.commit_log.begin_time_in_lock
        return max(now_ms() - began, 0) if began else 0

    def lookup_message_by_offset(self, commit_log_offset: int) -> MessageExt | None:
        """The message stored at ``commit_log_offset`` (body left compressed, as Java's lookMessageByOffset)."""
        record = self.commit_log.get_record(commit_log_offset)
        if record is None:
            return None
        try:
            return codec.decode_store_records(record, decompress_body=False)[0]
        except (CodecError, IndexError):
            return None

    @property
    def store_path(self) -> Path:
        return self.config.root
