"""Memory-mapped store files and the ordered queue of them (Java's store/MappedFile and MappedFileQueue).

A file is named after the global offset of its first byte, zero-padded to 20
digits, and always has the configured size (Java refuses to load a file of
another size). A new file is allocated with ``posix_fallocate``, so a full disk
refuses its creation (:class:`StoreDiskFullError`) rather than killing the
process with SIGBUS on a later write. Writes go into a shared ``mmap``; flushing writes back the mapped
pages (``layout.write_back``, msync, what fdatasync does for the range) without holding the GIL: of a
CommitLog file whose next pages were faulted in ahead, up to the write position only.

The file list is replaced, never changed in place, so a reader that took
``queue.files`` keeps a consistent list while the clean service deletes old
files; reading a file deleted meanwhile returns ``None``.
"""
from __future__ import annotations

import errno
import logging
import mmap
import os
import threading
import time
from pathlib import Path
from typing import Callable

from rocketmq_py.common.clock import now_ms
from rocketmq_py.errors import StoreError
from rocketmq_py.store import layout

_log = logging.getLogger(__name__)

OS_PAGE_SIZE = 4096
#: The clean service deletes at most this many files per round (Java's DELETE_FILES_BATCH_MAX).
DELETE_FILES_BATCH_MAX = 10


class StoreDiskFullError(StoreError):
    """A store file could not get its blocks: the disk (or the quota) is full. Puts are refused meanwhile."""


def allocate_blocks(fd: int, size: int) -> None:
    """Give the file ``size`` bytes backed by real blocks (what Java's warmMapedFileEnable is for): a full disk
    then fails here, cleanly, instead of as SIGBUS when a write into the mapping finds no block."""
    try:
        os.posix_fallocate(fd, 0, size)
    except OSError as error:
        if error.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
            raise
        os.ftruncate(fd, size)  # a file system without fallocate: sparse, as before


def offset_to_file_name(offset: int) -> str:
    return f"{offset:020d}"


class MappedFile:
    """One store file mapped into memory; ``wrote_position`` is how far it holds data."""

    def __init__(self, path: Path, file_size: int) -> None:
        self.path = Path(path)
        self.file_name = self.path.name
        self.file_from_offset = int(self.path.name)
        self.file_size = file_size
        self.path.parent.mkdir(parents=True, exist_ok=True)
        created = not self.path.exists()
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if os.fstat(self._fd).st_size < file_size:
                allocate_blocks(self._fd, file_size)
            self.mm = mmap.mmap(self._fd, file_size)
        except OSError as error:
            os.close(self._fd)
            if created:
                self.path.unlink(missing_ok=True)
            if error.errno in (errno.ENOSPC, errno.EDQUOT):
                raise StoreDiskFullError(f"no room on the disk for {self.path} ({file_size} bytes)") from None
            raise
        self.wrote_position = 0
        self.flushed_position = 0
        #: Store time of the last record appended (CommitLog files), for the checkpoint.
        self.store_timestamp = 0
        self.first_create_in_queue = False
        self._lock = threading.Lock()
        self.available = True
        #: Whether pages after the write position were made writable ahead (:meth:`prefault`): a flush then
        #: writes back only up to the write position.
        self._populated_ahead = False

    def __repr__(self) -> str:
        return f"MappedFile({self.path}, wrote={self.wrote_position}, flushed={self.flushed_position})"

    @property
    def is_full(self) -> bool:
        return self.wrote_position >= self.file_size

    def append(self, data: bytes) -> bool:
        """Append raw bytes (the CommitLog bytes a slave receives); False when they do not fit."""
        position = self.wrote_position
        if position + len(data) > self.file_size:
            return False
        self.mm[position:position + len(data)] = data
        self.wrote_position = position + len(data)
        return True

    def read(self, position: int, size: int) -> bytes | None:
        """A copy of ``size`` bytes at ``position`` within what was written; None when not there (or deleted)."""
        if position < 0 or size < 0 or position + size > self.wrote_position:
            return None
        try:
            return self.mm[position:position + size]
        except ValueError:  # the mapping was closed by the clean service
            return None

    def open_for_reading(self) -> int | None:
        """A new read-only descriptor of the file while it is open, None once it is closed: a front process
        reads records through it (``RecordRegion``), and the data stay readable through it after the clean
        service deletes the file, until the descriptor is closed."""
        with self._lock:  # close() and destroy()'s unlink wait: the path is this file's while it is available
            if not self.available:
                return None
            return os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)

    def able_to_flush(self, least_pages: int) -> bool:
        if self.is_full and self.flushed_position < self.wrote_position:
            return True
        if least_pages > 0:
            return self.wrote_position // OS_PAGE_SIZE - self.flushed_position // OS_PAGE_SIZE >= least_pages
        return self.wrote_position > self.flushed_position

    def flush(self, least_pages: int) -> int:
        """Write back what was appended (when ``least_pages`` pages are pending); return the flushed position."""
        if self.able_to_flush(least_pages):
            target = self.wrote_position
            with self._lock:
                if self.available:
                    # Past the write position, a prefaulted file holds zeros the prefault made dirty: written
                    # back, they would go to disk twice and be made read-only again, so that the putting thread
                    # took a fault on each page anyway. Any other file is written back whole (what it holds
                    # past the position, e.g. the zeros of a DLedger truncation, must reach the disk too).
                    layout.write_back(self.mm, target if self._populated_ahead else self.file_size)
                    self.flushed_position = target
        return self.flushed_position

    def prefault(self, position: int, length: int) -> bool:
        """Fault the pages under ``[position, position + length)`` in, writable, ahead of their writes, without
        changing a byte (see ``rocketmq_py.store.prefault``). False only when the kernel cannot; a file closed
        meanwhile is left alone."""
        with self._lock:  # close() waits, so the mapping stays while the kernel works on it
            if not self.available:
                return True
            self._populated_ahead = True
            return layout.populate_for_writing(self.mm, position, length)

    @property
    def last_modified_ms(self) -> int:
        try:
            return int(os.stat(self.path).st_mtime * 1000)
        except FileNotFoundError:
            return 0

    def touch(self) -> None:
        """Mark the file modified now (mapped writes do not always update mtime at once)."""
        try:
            os.utime(self.path)
        except FileNotFoundError:
            pass

    def close(self) -> None:
        with self._lock:
            if not self.available:
                return
            self.available = False
            try:
                self.mm.close()
            except BufferError:
                _log.warning("%s is still being read; its mapping stays until the reader finishes", self.path)
            os.close(self._fd)

    def destroy(self) -> bool:
        self.close()
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
        _log.info("deleted store file %s", self.path)
        return True


class MappedFileQueue:
    """The files of one CommitLog or ConsumeQueue directory, ordered by offset."""

    def __init__(self, store_path: Path, mapped_file_size: int) -> None:
        self.store_path = Path(store_path)
        self.mapped_file_size = mapped_file_size
        self.files: list[MappedFile] = []
        self.flushed_where = 0
        #: Store time of the last record covered by a complete flush.
        self.store_timestamp = 0
        self._lock = threading.Lock()

    def load(self) -> None:
        """Map every file of the directory (all as full; recovery then sets where writing ends)."""
        if not self.store_path.is_dir():
            return
        names = sorted(p.name for p in self.store_path.iterdir() if p.is_file() and p.name.isdigit())
        files: list[MappedFile] = []
        for name in names:
            path = self.store_path / name
            size = path.stat().st_size
            if size != self.mapped_file_size:
                for mapped in files:
                    mapped.close()
                raise StoreError(f"{path} has {size} bytes but the configured file size is "
                                 f"{self.mapped_file_size}: set mappedFileSize* to the size the store was "
                                 f"written with")
            mapped = MappedFile(path, self.mapped_file_size)
            mapped.wrote_position = mapped.flushed_position = self.mapped_file_size
            files.append(mapped)
        self.files = files

    # --- lookups -----------------------------------------------------------------------------

    def last_file(self) -> MappedFile | None:
        files = self.files
        return files[-1] if files else None

    def first_file(self) -> MappedFile | None:
        files = self.files
        return files[0] if files else None

    def get_last_mapped_file(self, start_offset: int = 0, need_create: bool = True) -> MappedFile | None:
        """The file to write into, creating the next one when the last is full (or there is none)."""
        last = self.last_file()
        create_offset = -1
        if last is None:
            create_offset = start_offset - start_offset % self.mapped_file_size
        elif last.is_full:
            create_offset = last.file_from_offset + self.mapped_file_size
        if create_offset < 0 or not need_create:
            return last
        mapped = MappedFile(self.store_path / offset_to_file_name(create_offset), self.mapped_file_size)
        with self._lock:
            if not self.files:
                mapped.first_create_in_queue = True
            self.files = self.files + [mapped]
        return mapped

    def find_mapped_file_by_offset(self, offset: int, return_first_on_not_found: bool = False) -> MappedFile | None:
        files = self.files
        if not files:
            return None
        first = files[0]
        index = offset // self.mapped_file_size - first.file_from_offset // self.mapped_file_size
        if 0 <= index < len(files):
            candidate = files[index]
            if candidate.file_from_offset <= offset < candidate.file_from_offset + self.mapped_file_size:
                return candidate
        for candidate in files:
            if candidate.file_from_offset <= offset < candidate.file_from_offset + self.mapped_file_size:
                return candidate
        return first if return_first_on_not_found else None

    def get_mapped_file_by_time(self, timestamp: int) -> MappedFile | None:
        files = self.files
        for mapped in files:
            if mapped.last_modified_ms >= timestamp:
                return mapped
        return files[-1] if files else None

    @property
    def min_offset(self) -> int:
        first = self.first_file()
        return first.file_from_offset if first is not None else -1

    @property
    def max_offset(self) -> int:
        last = self.last_file()
        return last.file_from_offset + last.wrote_position if last is not None else 0

    def remain_to_flush(self) -> int:
        return self.max_offset - self.flushed_where

    # --- changes -------------------------------------------------------------------------------

    def truncate_dirty_files(self, offset: int) -> None:
        """Make ``offset`` the end of the data: files after it are deleted, the one holding it cut there."""
        removed = []
        for mapped in self.files:
            if mapped.file_from_offset + self.mapped_file_size <= offset:
                continue
            if offset >= mapped.file_from_offset:
                position = offset - mapped.file_from_offset
                mapped.wrote_position = mapped.flushed_position = position
            else:
                mapped.destroy()
                removed.append(mapped)
        self._remove(removed)

    def delete_last_mapped_file(self) -> None:
        last = self.last_file()
        if last is not None:
            last.destroy()
            self._remove([last])

    def _remove(self, removed: list[MappedFile]) -> None:
        if removed:
            with self._lock:
                self.files = [f for f in self.files if f not in removed]

    def delete_expired_file_by_time(self, expired_ms: int, delete_files_interval_ms: int,
                                    deletable_before_expiry: Callable[[MappedFile], bool] | None = None) -> int:
        """Delete files (never the last), oldest first, while each is expired (not written for ``expired_ms``)
        or ``deletable_before_expiry`` lets it go; return how many. The first file that must stay ends the
        round, so no gap opens in the middle."""
        files = self.files[:-1]
        removed = []
        now = now_ms()
        for index, mapped in enumerate(files):
            expired = now >= mapped.last_modified_ms + expired_ms
            if not (expired or (deletable_before_expiry is not None and deletable_before_expiry(mapped))):
                break
            mapped.destroy()
            removed.append(mapped)
            if len(removed) >= DELETE_FILES_BATCH_MAX:
                break
            if delete_files_interval_ms > 0 and index + 1 < len(files):
                time.sleep(delete_files_interval_ms / 1000)
        self._remove(removed)
        return len(removed)

    def delete_expired_file_by_offset(self, offset: int, unit_size: int) -> int:
        """Delete ConsumeQueue files (never the last) whose last unit points below CommitLog ``offset``."""
        removed = []
        for mapped in self.files[:-1]:
            tail = mapped.read(self.mapped_file_size - unit_size, 8)
            if tail is None or int.from_bytes(tail, "big", signed=True) >= offset:
                break
            mapped.destroy()
            removed.append(mapped)
        self._remove(removed)
        return len(removed)

    def flush(self, least_pages: int) -> bool:
        """Flush the file holding ``flushed_where``; True when nothing new needed flushing."""
        mapped = self.find_mapped_file_by_offset(self.flushed_where, self.flushed_where == 0)
        if mapped is None:
            return True
        last_timestamp = mapped.store_timestamp
        where = mapped.file_from_offset + mapped.flush(least_pages)
        unchanged = where == self.flushed_where
        self.flushed_where = where
        if least_pages == 0:
            self.store_timestamp = last_timestamp
        return unchanged

    def shutdown(self) -> None:
        for mapped in self.files:
            mapped.close()

    def destroy(self) -> None:
        for mapped in self.files:
            mapped.destroy()
        with self._lock:
            self.files = []
        self.flushed_where = 0
        try:
            self.store_path.rmdir()
        except OSError:
            pass
