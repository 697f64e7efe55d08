"""The broker's DLedger CommitLog: a DLedger member whose entries carry CommitLog records.

Ports the DLedger side of ``store/.../dledger/DLedgerCommitLog.java`` (RocketMQ 4.9.8) onto the store's
:class:`~rocketmq_py.store.replicated_log.ReplicatedCommitLog`: the member's settings from the broker's keys,
the append hook that writes each record's physical offset (its entry's ``pos + 48``), reads of records out
of the data files, Java's recovery with the offset that divides a kept plain CommitLog from the DLedger data,
and the walk over committed entries that the store dispatches. See docs/design-dledger.md.
"""
from __future__ import annotations

import asyncio
import logging
import struct
from typing import Callable

from rocketmq_py.common.magic_codes import BLANK_MAGIC_CODE as COMMITLOG_BLANK_MAGIC_CODE
from rocketmq_py.dledger.codes import ResponseCode, Role
from rocketmq_py.dledger.config import DLedgerConfig
from rocketmq_py.dledger.entry import BLANK_MAGIC_CODE, BODY_OFFSET, DLedgerEntry
from rocketmq_py.dledger.errors import DLedgerError
from rocketmq_py.dledger.pusher import AppendedEntry
from rocketmq_py.dledger.server import DLedgerServer
from rocketmq_py.store import MessageStoreConfig, PutMessageStatus
from rocketmq_py.store import layout
from rocketmq_py.store.mapped_file import MappedFile
from rocketmq_py.store.replicated_log import ReplicatedCommitLog, ReplicatedPutRefused

__all__ = ["DLedgerCommitLog", "broker_id_of"]

_log = logging.getLogger(__name__)

_ENTRY_HEAD = struct.Struct(">ii")  # magic, size
_INT64 = struct.Struct(">q")
_RECORD_OFFSET_FIELD = BODY_OFFSET + layout.PHYSICAL_OFFSET_POSITION
_BLANK_RECORD = struct.Struct(">ii")  # the plain CommitLog's end marker: the rest of the file, the blank magic

#: What a put whose entries were written but not acknowledged answers (Java's DLedgerCommitLog table).
_FAILED_PUT = {
    ResponseCode.INCONSISTENT_LEADER: PutMessageStatus.SERVICE_NOT_AVAILABLE,
    ResponseCode.NOT_LEADER: PutMessageStatus.SERVICE_NOT_AVAILABLE,
    ResponseCode.LEADER_NOT_READY: PutMessageStatus.SERVICE_NOT_AVAILABLE,
    ResponseCode.DISK_FULL: PutMessageStatus.SERVICE_NOT_AVAILABLE,
    ResponseCode.WAIT_QUORUM_ACK_TIMEOUT: PutMessageStatus.OS_PAGECACHE_BUSY,
    ResponseCode.LEADER_PENDING_FULL: PutMessageStatus.OS_PAGECACHE_BUSY,
}


def broker_id_of(self_id: str) -> int:
    """The brokerId of a follower: the number after the selfId's first character, plus 1 (n0 -> 1), as Java's
    DLedgerCommitLog computes it (the broker's settings check refuses a selfId without that number)."""
    return int(self_id[1:]) + 1


def dledger_config_of(config: MessageStoreConfig) -> DLedgerConfig:
    """The member's settings from the broker's keys, as Java's DLedgerCommitLog constructor makes them."""
    return DLedgerConfig.for_commit_log(
        group=config.d_leger_group or "", self_id=config.d_leger_self_id or "", peers=config.d_leger_peers or "",
        store_path_root_dir=config.store_path_root_dir,
        store_path_dledger_commit_log=config.store_path_d_ledger_commit_log,
        mapped_file_size_commit_log=config.mapped_file_size_commit_log, delete_when=config.delete_when,
        file_reserved_time=config.file_reserved_time, preferred_leader_id=config.preferred_leader_id,
        enable_batch_push=config.is_enable_batch_push,
        disk_max_used_space_ratio=config.disk_max_used_space_ratio,
        clean_file_forcibly_enable=config.clean_file_forcibly_enable,
        clean_unconsumed_file_forcibly_enable=config.clean_unconsumed_file_forcibly_enable)


class DLedgerCommitLog(ReplicatedCommitLog):
    def __init__(self, config: MessageStoreConfig) -> None:
        super().__init__(config)
        #: This broker's brokerId while its member follows.
        self.slave_broker_id = broker_id_of(config.d_leger_self_id or "")
        self.server = DLedgerServer(dledger_config_of(config))
        self.server.add_append_hook(_write_record_offset)
        self.server.add_commit_listener(self._committed)
        self._data = self.server.store.data_files

    def __repr__(self) -> str:
        return f"DLedgerCommitLog({self.server!r}, divided at {self.divided_offset})"

    def add_role_listener(self, listener: Callable[[int, Role], None]) -> None:
        self.server.add_role_listener(listener)

    # --- lifecycle ---------------------------------------------------------------------------------

    def recover_log(self) -> int:
        store = self.server.store
        store.load()
        if store.data_files.files:
            store.recover()
            self.divided_offset = store.data_files.files[0].file_from_offset
            return store.data_files.max_wrote_position
        # The first start on a plain CommitLog: keep it whole, close its last file, and start the DLedger data
        # at the next file boundary (Java recovers it normally, whatever the last shutdown was).
        end = self.recover_normally()
        last = self.queue.last_file()
        if last is None:
            store.startup(0)
            return end
        position = last.wrote_position
        if position + _BLANK_RECORD.size <= self.file_size:
            size, magic = _BLANK_RECORD.unpack_from(last.mm, position)
            if magic != COMMITLOG_BLANK_MAGIC_CODE:
                _BLANK_RECORD.pack_into(last.mm, position, self.file_size - position, COMMITLOG_BLANK_MAGIC_CODE)
                last.mm.flush()
        last.wrote_position = last.flushed_position = self.file_size
        self.divided_offset = last.file_from_offset + self.file_size
        _log.info("the plain CommitLog ends at %d; the DLedger data start at %d", end, self.divided_offset)
        store.startup(self.divided_offset)
        return end

    async def start_log(self) -> None:
        self.bind_loop()
        await self.server.start(data_starts_at=max(self.divided_offset, 0))

    async def shutdown_log(self) -> None:
        await self.server.shutdown()

    # --- offsets -----------------------------------------------------------------------------------

    def file_at(self, offset: int) -> MappedFile | None:
        if offset < self.divided_offset:
            return super().file_at(offset)
        return self._data.find_file(offset)

    @property
    def min_offset(self) -> int:
        if self.queue.files:
            return super().min_offset
        return self._data.min_offset

    @property
    def first_record_offset(self) -> int:
        if self.queue.files:
            return super().min_offset
        return self._data.min_offset + BODY_OFFSET

    @property
    def max_offset(self) -> int:
        """Where the committed entries end (Java's getMaxOffset: nothing beyond is read through a queue)."""
        committed = self.server.committed_pos
        if committed > 0:
            return committed
        return max(self._data.min_offset, 0)

    # --- writes ------------------------------------------------------------------------------------

    def append_entries(self, bodies: list[bytearray]) -> tuple[list[int], asyncio.Future[None]]:
        try:
            appending = self.server.append([bytes(body) for body in bodies])
        except DLedgerError as error:
            # Java answers an append the member refuses at once (it wrote nothing) with OS_PAGECACHE_BUSY.
            raise ReplicatedPutRefused(PutMessageStatus.OS_PAGECACHE_BUSY, str(error)) from error
        entries = self.server.store
        last = entries.ledger_end_index
        first = last - len(bodies) + 1
        offsets = [entries.pos_and_size(index)[0] + BODY_OFFSET for index in range(first, last + 1)]
        replicated: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        appending.add_done_callback(lambda done: _settle(done, replicated))
        return offsets, replicated

    def _committed(self, committed_index: int) -> None:
        if self.on_committed is not None:
            self.on_committed()

    # --- reads -------------------------------------------------------------------------------------

    def read_committed(self, offset: int) -> tuple[list[layout.RecordInfo], int]:
        data = self._data
        end = self.server.committed_pos
        offset = max(offset, data.min_offset, self.divided_offset)
        infos: list[layout.RecordInfo] = []
        while offset < end:
            mapped = data.find_file(offset)
            if mapped is None:
                _log.error("[BUG] no DLedger data file holds committed offset %d", offset)
                break
            position = offset - mapped.file_from_offset
            try:
                magic, size = _ENTRY_HEAD.unpack_from(mapped.mm, position)
                if magic == BLANK_MAGIC_CODE:
                    offset = mapped.file_from_offset + data.mapped_file_size
                    continue
                if size <= BODY_OFFSET:
                    _log.error("[BUG] the DLedger entry at %d has size %d: dispatching stops there", offset, size)
                    break
                info = layout.check_record(mapped.mm, position + BODY_OFFSET, position + size, False)
            except ValueError:  # the clean service closed the file meanwhile
                break
            if info.size > 0:
                infos.append(info)
            else:
                # Java logs and steps over an entry whose body is not a record (its reput goes on).
                _log.error("[BUG] the DLedger entry at %d does not hold a CommitLog record: not dispatched", offset)
            offset += size
        return infos, offset


def _write_record_offset(entry: DLedgerEntry, encoded: bytearray) -> None:
    """The append hook: the record's physical offset is where its entry's body starts."""
    _INT64.pack_into(encoded, _RECORD_OFFSET_FIELD, entry.pos + BODY_OFFSET)


def _settle(appending: asyncio.Future[list[AppendedEntry]], replicated: asyncio.Future[None]) -> None:
    if replicated.done():
        return
    if appending.cancelled():
        replicated.set_exception(ReplicatedPutRefused(PutMessageStatus.UNKNOWN_ERROR, "the append was cancelled"))
        return
    error = appending.exception()
    if error is None:
        replicated.set_result(None)
        return
    status = _FAILED_PUT.get(error.code, PutMessageStatus.UNKNOWN_ERROR) if isinstance(error, DLedgerError) \
        else PutMessageStatus.UNKNOWN_ERROR
    _log.warning("a put's entries were written but not acknowledged (%s): %s", status.name, error)
    replicated.set_exception(ReplicatedPutRefused(status, str(error)))
