"""The ordered files of one DLedger directory (``data`` or ``index``): Java's ``MmapFileList``.

Ports ``store/file/MmapFileList.java`` and the positions of ``DefaultMmapFile.java`` (dledger-all-0.3.1.2)
over the store's :class:`~rocketmq_py.store.mapped_file.MappedFile` (a file of the configured size, named
after the offset of its first byte in 20 digits, mapped, its blocks allocated when it is made).

A data file never splits an entry: when the next entry and an 8-byte blank do not fit, the rest of the
file is padded (``-1``, the padding's length, zeros) and the entry opens the next file. An index file
holds whole 32-byte units (its size is a multiple of 32), so it needs no padding.

Unlike Java, a truncation zeroes the bytes it cuts off (Java leaves them for the next writes to cover):
the files of a follower whose tail was cut are then byte-equal to the leader's, and no stale entry
waits behind the end for a later recovery to misread.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable

from rocketmq_py.dledger.codes import ResponseCode
from rocketmq_py.dledger.entry import MIN_BLANK_LEN, encode_blank
from rocketmq_py.dledger.errors import DLedgerError
from rocketmq_py.errors import StoreError
from rocketmq_py.store.mapped_file import DELETE_FILES_BATCH_MAX, MappedFile, offset_to_file_name

__all__ = ["DLedgerFile", "MmapFileList"]

_log = logging.getLogger(__name__)

#: Recovery zeroes what follows the last good entry in chunks of this size, up to the first chunk of zeros.
_ZERO_CHUNK = 64 * 1024


class DLedgerFile(MappedFile):
    """A mapped file that may start its valid bytes past 0 (its head was cleaned away, or a follower's first
    file was made for an entry in its middle)."""

    def __init__(self, path: Path, file_size: int) -> None:
        super().__init__(path, file_size)
        self.start_position = 0


class MmapFileList:
    def __init__(self, store_path: str, mapped_file_size: int) -> None:
        self.store_path = Path(store_path)
        self.mapped_file_size = mapped_file_size
        self.files: list[DLedgerFile] = []
        #: Where the flushed bytes end (the files before it are on disk).
        self.flushed_where = 0

    def __repr__(self) -> str:
        return f"MmapFileList({self.store_path}, files={len(self.files)}, end={self.max_wrote_position})"

    # --- loading ------------------------------------------------------------------------------

    def load(self) -> None:
        """Map every file of the directory as full (recovery then says where the data ends)."""
        if not self.store_path.is_dir():
            return
        names = sorted(p.name for p in self.store_path.iterdir() if p.is_file() and p.name.isdigit())
        files: list[DLedgerFile] = []
        for name in names:
            path = self.store_path / name
            size = path.stat().st_size
            if size != self.mapped_file_size:
                for loaded in files:
                    loaded.close()
                raise StoreError(f"{path} has {size} bytes but the DLedger file size is {self.mapped_file_size}: "
                                 f"configure the size the files were written with (mappedFileSizeCommitLog)")
            mapped = DLedgerFile(path, self.mapped_file_size)
            mapped.wrote_position = mapped.flushed_position = self.mapped_file_size
            files.append(mapped)
        self.files = files

    def check_self(self) -> bool:
        """True when the files follow each other without a gap."""
        for previous, current in zip(self.files, self.files[1:]):
            if current.file_from_offset - previous.file_from_offset != self.mapped_file_size:
                _log.error("DLedger files %s and %s of %s are not adjacent", previous.file_name,
                           current.file_name, self.store_path)
                return False
        return True

    # --- lookups ------------------------------------------------------------------------------

    def first_file(self) -> DLedgerFile | None:
        return self.files[0] if self.files else None

    def last_file(self) -> DLedgerFile | None:
        return self.files[-1] if self.files else None

    @property
    def max_wrote_position(self) -> int:
        """Where the written bytes end (0 without files)."""
        last = self.last_file()
        return last.file_from_offset + last.wrote_position if last is not None else 0

    @property
    def min_offset(self) -> int:
        """Where the valid bytes start (0 without files)."""
        first = self.first_file()
        return first.file_from_offset + first.start_position if first is not None else 0

    def find_file(self, offset: int) -> DLedgerFile | None:
        """The file holding ``offset``, or None."""
        files = self.files
        if not files or offset < files[0].file_from_offset:
            return None
        slot = (offset - files[0].file_from_offset) // self.mapped_file_size
        if slot < len(files) and files[slot].file_from_offset <= offset < files[slot].file_from_offset + \
                self.mapped_file_size:
            return files[slot]
        return None

    def read(self, offset: int, size: int) -> bytes | None:
        """``size`` written bytes at ``offset`` (within one file), or None when they are not all there."""
        mapped = self.find_file(offset)
        if mapped is None:
            return None
        return mapped.read(offset - mapped.file_from_offset, size)

    # --- appending ----------------------------------------------------------------------------

    def last_file_for_write(self, start_offset: int = 0) -> DLedgerFile:
        """The file to write into, making the next one when the last is full (the first one at the file
        boundary at or below ``start_offset`` when there is none)."""
        last = self.last_file()
        if last is not None and not last.is_full:
            return last
        create_offset = (start_offset - start_offset % self.mapped_file_size if last is None
                         else last.file_from_offset + self.mapped_file_size)
        mapped = DLedgerFile(self.store_path / offset_to_file_name(create_offset), self.mapped_file_size)
        self.files = self.files + [mapped]
        return mapped

    def pre_append(self, length: int, use_blank: bool = True) -> int:
        """Where ``length`` bytes will go: the end of the last file, or (after padding the last file) the start
        of a new one."""
        mapped = self.last_file_for_write()
        blank = MIN_BLANK_LEN if use_blank else 0
        room = mapped.file_size - mapped.wrote_position
        if length + blank > room:
            if not use_blank:
                raise DLedgerError(ResponseCode.DISK_ERROR, f"{length} bytes do not fit the {room} left in "
                                   f"{mapped.path}, and this file list is not padded")
            if not mapped.append(encode_blank(room)):
                raise DLedgerError(ResponseCode.DISK_ERROR, f"padding {mapped.path} failed")
            mapped = self.last_file_for_write()
            if length + blank > mapped.file_size:
                raise DLedgerError(ResponseCode.DISK_ERROR, f"{length} bytes do not fit a file of "
                                   f"{mapped.file_size} bytes")
        return mapped.file_from_offset + mapped.wrote_position

    def append(self, data: bytes | bytearray, use_blank: bool = True) -> int:
        """Append ``data`` (padding and rolling to a new file first when needed); return where it went."""
        position = self.pre_append(len(data), use_blank)
        mapped = self.files[-1]
        if not mapped.append(bytes(data)):
            raise DLedgerError(ResponseCode.DISK_ERROR, f"appending {len(data)} bytes to {mapped.path} failed")
        return position

    # --- cutting ------------------------------------------------------------------------------

    def truncate_offset(self, offset: int, *, zero_from: int | None = None) -> None:
        """Make ``offset`` the end: the file holding it is cut there, later files are deleted. With
        ``zero_from`` (the old end), the bytes cut off the kept file are zeroed too."""
        kept: list[DLedgerFile] = []
        for mapped in self.files:
            tail = mapped.file_from_offset + self.mapped_file_size
            if tail <= offset:
                kept.append(mapped)
            elif offset >= mapped.file_from_offset:
                position = offset - mapped.file_from_offset
                if zero_from is not None:
                    end = min(mapped.wrote_position, max(zero_from - mapped.file_from_offset, position))
                    mapped.mm[position:end] = bytes(end - position)
                mapped.wrote_position = position
                mapped.flushed_position = min(mapped.flushed_position, position)
                kept.append(mapped)
            else:
                mapped.destroy()
        self.files = kept

    def zero_garbage_after(self, offset: int) -> None:
        """Zero what a crash left after ``offset`` in its file (a partly written entry), up to the first chunk
        that is all zeros already."""
        mapped = self.find_file(offset)
        if mapped is None:
            return
        position = offset - mapped.file_from_offset
        zeros = bytes(_ZERO_CHUNK)
        while position < mapped.file_size:
            end = min(position + _ZERO_CHUNK, mapped.file_size)
            if mapped.mm[position:end] == zeros[:end - position]:
                return
            mapped.mm[position:end] = zeros[:end - position]
            position = end

    def reset_offset(self, offset: int) -> None:
        """Make ``offset`` the first valid byte: files wholly before it are deleted, the one holding it starts
        there."""
        kept: list[DLedgerFile] = []
        for mapped in self.files:
            if mapped.file_from_offset <= offset:
                if offset < mapped.file_from_offset + self.mapped_file_size:
                    mapped.start_position = offset - mapped.file_from_offset
                    kept.append(mapped)
                else:
                    mapped.destroy()
            else:
                kept.append(mapped)
        self.files = kept

    def rebuild_with_pos(self, pos: int) -> bool:
        """Start over with one file whose valid bytes start and end at ``pos`` (a follower whose log does not
        meet the leader's)."""
        old_end = self.max_wrote_position
        self.truncate_offset(-1)
        self.last_file_for_write(pos)
        self.truncate_offset(pos, zero_from=max(old_end, pos))
        self.reset_offset(pos)
        return pos == self.max_wrote_position and pos == self.min_offset

    def update_where_position(self, where: int) -> None:
        if where > self.max_wrote_position:
            _log.warning("%s: flushed position %d is past the end %d", self.store_path, where,
                         self.max_wrote_position)
            return
        self.flushed_where = where

    # --- durability and lifecycle --------------------------------------------------------------

    @property
    def needs_flush(self) -> bool:
        """True when bytes were appended since the last flush."""
        return any(mapped.flushed_position < mapped.wrote_position for mapped in self.files)

    def flush(self) -> None:
        """Write the appended bytes back to disk (runs on a thread: it may wait on the disk)."""
        target = self.max_wrote_position
        for mapped in list(self.files):
            if mapped.flushed_position < mapped.wrote_position:
                mapped.flush(0)
        self.flushed_where = target

    def delete_oldest(self, deletable: Callable[[DLedgerFile], bool]) -> int:
        """Delete files from the oldest on (never the last) while ``deletable`` lets each go, at most
        ``DELETE_FILES_BATCH_MAX`` a round, so no gap opens; return how many went."""
        removed: list[DLedgerFile] = []
        for mapped in self.files[:-1]:
            if len(removed) >= DELETE_FILES_BATCH_MAX or not deletable(mapped):
                break
            mapped.destroy()
            removed.append(mapped)
        if removed:
            self.files = [f for f in self.files if f not in removed]
        return len(removed)

    def shutdown(self) -> None:
        for mapped in self.files:
            mapped.close()
