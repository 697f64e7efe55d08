"""Deleting a member's old data files and watching its disk (Java's ``DLedgerMmapFileStore.CleanSpaceService``).

As Java does, data files not written for ``fileReservedHours`` are deleted, oldest first and never the last,
at the ``deleteWhen`` hour or at once when the disk (of the store or of the data) is fuller than
``diskSpaceRatioToCheckExpired``; the log's begin index then moves to the first entry left, and the index
files before it go too. Above ``diskSpaceRatioToForceClean`` (85 %) with ``enableDiskForceClean`` Java
deletes the oldest files before they expire, whatever they hold; here only files the state machine lets go
(:attr:`CleanSpaceService.deletable_before_expiry`: the broker knows which records every consumer has
consumed), unless ``cleanUnconsumedFileForciblyEnable`` asks for Java's rule. A file that holds entries not
yet committed is never deleted. Above the full level (the force level + 5 %, at most 95 %) the store refuses
appends (DISK_FULL) until usage drops again.
"""
from __future__ import annotations

import asyncio
import datetime
import logging
import shutil
from typing import Callable

from rocketmq_py.common import clock
from rocketmq_py.dledger.config import DLedgerConfig
from rocketmq_py.dledger.files import DLedgerFile
from rocketmq_py.dledger.store import DLedgerFileStore

__all__ = ["CleanSpaceService", "disk_used_ratio"]

_log = logging.getLogger(__name__)

#: Java looks every 100 ms; deleting files is not urgent, and a statvfs a second sees a filling disk in time.
CLEAN_INTERVAL_S = 1.0
_HOUR_MS = 3_600_000


def disk_used_ratio(path: str) -> float:
    """The used share (0..1) of the disk holding ``path``; -1 when it cannot be known."""
    try:
        usage = shutil.disk_usage(path)
    except OSError:
        return -1.0
    return usage.used / usage.total if usage.total else -1.0


def _is_time_to_delete(delete_when: str, hour: int) -> bool:
    """Whether ``hour`` is one of ``deleteWhen`` (``"04"``, or ``"04;16"``)."""
    hours = set()
    for text in delete_when.split(";"):
        try:
            hours.add(int(text))
        except ValueError:
            _log.warning("deleteWhen %r: %r is not an hour", delete_when, text)
    return hour in hours


class CleanSpaceService:
    def __init__(self, config: DLedgerConfig, store: DLedgerFileStore,
                 disk_usage: Callable[[str], float] = disk_used_ratio) -> None:
        self.config = config
        self.store = store
        self.disk_usage = disk_usage
        #: Whether the forced clean may delete a file before it expires (the broker sets it: every consumer
        #: has consumed what the file holds); None lets nothing go early.
        self.deletable_before_expiry: Callable[[DLedgerFile], bool] | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    async def shutdown(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(CLEAN_INTERVAL_S)
            try:
                self.clean_once(clock.now_ms(), datetime.datetime.now().hour)
            except Exception:
                _log.exception("[%s] cleaning the DLedger data files failed", self.config.self_id)

    def clean_once(self, now_ms: float, hour: int) -> int:
        """One round: mark the disk full or not, delete what may go; the number of files deleted."""
        config = self.config
        used = max(self.disk_usage(config.store_base_dir), self.disk_usage(config.data_path))
        force_ratio = max(config.disk_space_ratio_to_force_clean, 0.50)
        full = used > min(force_ratio + 0.05, 0.95)
        if full != self.store.disk_full:
            _log.warning("[%s] the disk is %.0f %% used: appends are %s", config.self_id, used * 100,
                         "refused (DISK_FULL)" if full else "taken again")
            self.store.disk_full = full
        if not (_is_time_to_delete(config.delete_when, hour) or used > config.disk_space_ratio_to_check_expired):
            return 0
        forced = config.enable_disk_force_clean and used > force_ratio
        early = self.deletable_before_expiry if forced else None
        if forced and config.clean_unconsumed_file_forcibly_enable:
            early = _any_file
        committed_pos = self.store.committed_pos
        reserved_ms = max(config.file_reserved_hours * _HOUR_MS, _HOUR_MS)

        def deletable(mapped: DLedgerFile) -> bool:
            if mapped.file_from_offset + mapped.file_size > committed_pos:
                return False
            return now_ms >= mapped.last_modified_ms + reserved_ms or (early is not None and early(mapped))

        count = self.store.data_files.delete_oldest(deletable)
        if count:
            self.store.revise_ledger_begin_index()
            _log.info("[%s] deleted %d DLedger data file(s) (older than %d h, or forced: %s; disk %.0f %% used); "
                      "the log begins at entry %d", config.self_id, count, config.file_reserved_hours,
                      "any file" if early is _any_file else "consumed files" if early else "no", used * 100,
                      self.store.ledger_begin_index)
        return count


def _any_file(mapped: DLedgerFile) -> bool:
    """Java's forced clean: the oldest files go whatever they hold (``cleanUnconsumedFileForciblyEnable``)."""
    return True
