"""Deleting expired files and watching the disk (Java's DefaultMessageStore.CleanCommitLogService and
CleanConsumeQueueService).

As Java does, CommitLog files not written for ``fileReservedTime`` hours are
deleted at the ``deleteWhen`` hour, at once when the disk is over
``diskMaxUsedSpaceRatio``, and when an operator asks (DELETE_EXPIRED_COMMITLOG,
``mqadmin deleteExpiredCommitLog``: the next 20 rounds, a second apart).
Above ``diskSpaceCleanForciblyRatio`` (85 %) with ``cleanFileForciblyEnable``
files go before they expire, oldest first, but here only while each holds
nothing a consumer group has still to consume (``rocketmq_py.store.consumed``);
Java deletes them regardless, which ``cleanUnconsumedFileForciblyEnable``
brings back. An operator's request follows the same rules: it deletes no
unconsumed file that has not expired. ConsumeQueue and index files that only
point below the new CommitLog minimum follow.

Above ``diskSpaceWarningLevelRatio`` (90 %) the store marks the disk full and
refuses puts until usage drops again, so a disk of unconsumed messages refuses
sends instead of losing messages. The check runs every second; a store file
that cannot get its blocks marks the disk full at once (see
``MessageStore._make_room``). When nothing may be deleted, one line says why,
once for each cause.
"""
from __future__ import annotations

import datetime
import logging
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Hashable

from rocketmq_py.store.consumed import ConsumedFileRule
from rocketmq_py.store.flush import ServiceThread
from rocketmq_py.store.mapped_file import MappedFile

if TYPE_CHECKING:
    from rocketmq_py.store.message_store import MessageStore

_log = logging.getLogger(__name__)

MAX_MANUAL_DELETE_FILE_TIMES = 20
#: Java checks every 10 s; a fast producer fills a small disk in less, so we check every second (a statvfs).
DISK_CHECK_INTERVAL_MS = 1_000
#: After a store file could not get its blocks, puts stay refused this long whatever the ratio says.
ALLOCATION_FAILURE_HOLD_S = 10.0

DiskUsage = Callable[[Path], float]


def disk_used_ratio(path: Path) -> float:
    """Used share (0..1) of the disk holding ``path`` (Java's getDiskPartitionSpaceUsedPercent); -1 if unknown."""
    try:
        usage = shutil.disk_usage(path)
    except OSError:
        return -1.0
    return usage.used / usage.total if usage.total else -1.0


def _any_file(mapped: MappedFile) -> bool:
    """Java's forced clean: the oldest files go, consumed or not (``cleanUnconsumedFileForciblyEnable``)."""
    return True


def is_it_time_to_do(when: str, hour: int | None = None) -> bool:
    """True when the current hour is one of ``when`` (``"04"`` or ``"04;16"``)."""
    hour = datetime.datetime.now().hour if hour is None else hour
    for item in when.split(";"):
        try:
            if int(item) == hour:
                return True
        except ValueError:
            continue
    return False


class CleanService(ServiceThread):
    """Runs the CommitLog, ConsumeQueue and index cleaning every ``cleanResourceInterval`` ms,
    and the disk-full check every second."""

    name = "CleanService"

    def __init__(self, store: MessageStore, disk_usage: DiskUsage = disk_used_ratio) -> None:
        super().__init__()
        self.store = store
        self.config = store.config
        self.disk_usage = disk_usage
        self.manual_delete_file_several_times = 0
        self.clean_immediately = False
        self._last_physical_min_offset = 0
        #: The disk's used share at the last look (0..1; -1 when unknown).
        self._used = 0.0
        #: The cause of the last "nothing may be deleted" line, so that each cause is logged once.
        self._logged_kept: Hashable = None

    def run(self) -> None:
        waited = 0.0
        while not self.stopped:
            step = min(self.config.clean_resource_interval, DISK_CHECK_INTERVAL_MS)
            self.wait_for_running(step)
            if self.stopped:
                break
            self.is_space_full()
            waited += step
            if waited >= self.config.clean_resource_interval or self.manual_delete_file_several_times:
                waited = 0.0
                self.run_once()

    def execute_delete_files_manually(self) -> None:
        self.manual_delete_file_several_times = MAX_MANUAL_DELETE_FILE_TIMES
        self.wakeup()

    def run_once(self) -> None:
        try:
            self.delete_expired_commit_log_files()
            self.delete_expired_consume_queue_files()
        except Exception:
            _log.exception("cleaning expired files failed")

    def delete_expired_commit_log_files(self) -> int:
        time_up = is_it_time_to_do(self.config.delete_when)
        space_full = self._is_space_to_delete()
        manual = self.manual_delete_file_several_times > 0
        if not space_full:
            self._logged_kept = None
        if not (time_up or space_full or manual):
            return 0
        if manual:
            self.manual_delete_file_several_times -= 1
        rule: ConsumedFileRule | None = None
        deletable: Callable[[MappedFile], bool] | None = None
        forced = "no"
        if self.config.clean_file_forcibly_enable and self.clean_immediately:
            if self.config.clean_unconsumed_file_forcibly_enable:
                deletable, forced = _any_file, "any file"
            else:
                rule = ConsumedFileRule(self.store.consume_queues(), self.store.consumer_progress())
                deletable, forced = rule.may_delete, "consumed files"
        count = self.store.commit_log.queue.delete_expired_file_by_time(
            self.config.file_reserved_time * 3_600_000, self.config.delete_commit_log_files_interval, deletable,
        )
        if count:
            self._logged_kept = None
            _log.info("deleted %d CommitLog file(s) (older than %d h, or forced: %s; time up: %s, disk %.1f %% "
                      "used, manual: %s)", count, self.config.file_reserved_time, forced, time_up, self._used * 100,
                      manual)
        elif space_full:
            self._log_kept(rule)
        return count

    def _log_kept(self, rule: ConsumedFileRule | None) -> None:
        """Say once per cause why a disk over ``diskMaxUsedSpaceRatio`` got no CommitLog file deleted."""
        reserved = f"no CommitLog file is older than fileReservedTime ({self.config.file_reserved_time} h)"
        if len(self.store.commit_log.queue.files) <= 1:
            cause: Hashable = "only the file being written"
            why = "only the CommitLog file being written is left"
        elif rule is not None and rule.kept is not None:
            cause = (rule.kept.file_name, rule.kept.cause)
            why = (f"{reserved}, and the oldest, {rule.kept.file_name}, may not go before it does: {rule.kept.why}"
                   " (see cleanUnconsumedFileForciblyEnable)")
        elif not self.config.clean_file_forcibly_enable:
            cause, why = "forced cleaning off", f"{reserved}, and cleanFileForciblyEnable is false"
        else:
            cause = "below the forced level"
            why = (f"{reserved}, and the disk is below diskSpaceCleanForciblyRatio "
                   f"({self.config.disk_space_clean_forcibly_ratio * 100:.0f} %)")
        if cause != self._logged_kept:
            self._logged_kept = cause
            _log.warning("the disk is %.1f %% used, but no CommitLog file may be deleted: %s", self._used * 100, why)

    def delete_expired_consume_queue_files(self) -> None:
        min_offset = self.store.commit_log.min_offset
        if min_offset <= self._last_physical_min_offset:
            return
        self._last_physical_min_offset = min_offset
        for consume_queue in self.store.consume_queues():
            consume_queue.delete_expired_file(min_offset)
        assert self.store.index_service is not None  # set when the store loads, before the clean service starts
        self.store.index_service.delete_expired_file(min_offset)

    def _ratio(self, path: Path) -> float:
        return self.disk_usage(path)

    def _is_space_to_delete(self) -> bool:
        ratio = self.config.effective_disk_max_used_space_ratio / 100.0
        self.clean_immediately = False
        for path in (self.config.commit_log_dir, self.config.consume_queue_dir):
            used = self._used = self._ratio(path if path.exists() else self.config.root)
            if used > self.config.disk_space_warning_level_ratio:
                self.store.mark_disk_full(True, used)
                self.clean_immediately = True
            elif used > self.config.disk_space_clean_forcibly_ratio:
                self.clean_immediately = True
            else:
                self._mark_full(False, used)
            if used < 0 or used > ratio:
                return True
        return False

    def is_space_full(self) -> bool:
        """The periodic disk check: mark the store full (puts refused) above the warning level."""
        path = self.config.commit_log_dir
        used = self._ratio(path if path.exists() else self.config.root)
        return self._mark_full(used > self.config.disk_space_warning_level_ratio, used)

    def _mark_full(self, full: bool, used: float) -> bool:
        failed_at = self.store.allocation_failed_at
        if not full and failed_at is not None and time.monotonic() - failed_at < ALLOCATION_FAILURE_HOLD_S:
            return True
        self.store.mark_disk_full(full, used)
        return full
