"""A member's log on disk: the ``data`` and ``index`` files, the ``checkpoint``, and recovery at start.

Ports ``store/file/DLedgerMmapFileStore.java`` (dledger-all-0.3.1.2). The data files of
``dledger-{selfId}/data`` hold the entries (see :mod:`rocketmq_py.dledger.entry`); the index files of
``dledger-{selfId}/index`` hold a 32-byte unit per entry at ``index * 32``, which says where the entry is;
``dledger-{selfId}/checkpoint`` holds ``endIndex`` and ``committedIndex``, written every
``checkPointInterval`` ms and at shutdown.

A leader places an entry where its data files end; a follower places the leader's entry at the same
``pos``, so the data files of every member are byte-equal. Recovery walks the data files from one of the
last three (the first whose first entry agrees with the index), checks every entry (magic, length, its
``pos``, consecutive indexes, terms that never go down), rewrites the index from the first unit that
disagrees, and cuts the log after the last good entry.

Every method runs on the node's event loop except :meth:`DLedgerFileStore.flush`, which a thread runs.
"""
from __future__ import annotations

import logging
import os
import struct
from typing import Callable

from rocketmq_py.common.config_file import format_properties, parse_properties, read_file_with_backup
from rocketmq_py.common.config_file import write_file_safely
from rocketmq_py.dledger.codes import ResponseCode
from rocketmq_py.dledger.config import DLedgerConfig
from rocketmq_py.dledger.entry import (
    BLANK_MAGIC_CODE,
    BODY_OFFSET,
    CURRENT_MAGIC,
    HEADER_SIZE,
    INDEX_UNIT_SIZE,
    MAGIC_1,
    DLedgerEntry,
    decode_entry,
    decode_header,
    decode_index_unit,
    encode_entry,
    encode_index_unit,
    set_pos,
)
from rocketmq_py.dledger.errors import DLedgerError
from rocketmq_py.dledger.files import MmapFileList
from rocketmq_py.dledger.member_state import MemberState
from rocketmq_py.errors import StoreError

__all__ = ["DLedgerFileStore", "AppendHook", "CHECKPOINT_FILE"]

_log = logging.getLogger(__name__)

CHECKPOINT_FILE = "checkpoint"
_END_INDEX_KEY = "endIndex"
_COMMITTED_INDEX_KEY = "committedIndex"

#: Called with a leader's new entry (its index, term and pos set) and its encoded bytes (the body at
#: ``BODY_OFFSET``) before they are written; it may change the body's bytes in place, not their length.
#: The broker writes each CommitLog record's physical offset (``pos + 48``) this way.
AppendHook = Callable[[DLedgerEntry, bytearray], None]

_INT = struct.Struct(">i")


def _check(condition: bool, message: str, code: ResponseCode = ResponseCode.DISK_ERROR) -> None:
    if not condition:
        raise DLedgerError(code, message)


class DLedgerFileStore:
    def __init__(self, config: DLedgerConfig, member_state: MemberState) -> None:
        self.config = config
        self.member_state = member_state
        self.data_files = MmapFileList(config.data_path, config.mapped_file_size_for_entry_data)
        self.index_files = MmapFileList(config.index_path, config.mapped_file_size_for_entry_index)
        self.append_hooks: list[AppendHook] = []
        self.ledger_begin_index = -1
        self.ledger_end_index = -1
        self.ledger_end_term = -1
        self.committed_index = -1
        #: Where the last committed entry ends in the data files (-1 before one is committed).
        self.committed_pos = -1
        #: Set by the clean service when the disk is too full to take more entries.
        self.disk_full = False
        self._checkpoint_path = os.path.join(config.default_path, CHECKPOINT_FILE)
        self._loaded = False
        self._recovered = False

    def __repr__(self) -> str:
        return (f"DLedgerFileStore({self.config.self_id}, begin={self.ledger_begin_index}, "
                f"end={self.ledger_end_index}, committed={self.committed_index})")

    # --- start and stop ----------------------------------------------------------------------

    def startup(self, data_starts_at: int = 0) -> None:
        """Load and recover the files. A log without data files yet starts its first one at ``data_starts_at``
        (a file boundary: where a plain CommitLog that the broker keeps ends, as Java's DLedgerCommitLog
        does)."""
        self.load()
        if not self.data_files.files and data_starts_at > 0:
            first = self.data_files.last_file_for_write(data_starts_at)
            _log.info("[%s] the DLedger data start at %d (%s)", self.config.self_id, first.file_from_offset,
                      first.file_name)
        self.recover()

    def load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        self.data_files.load()
        self.index_files.load()

    def shutdown(self) -> None:
        self.flush()
        self.persist_checkpoint()
        self.data_files.shutdown()
        self.index_files.shutdown()

    @property
    def needs_flush(self) -> bool:
        return self.data_files.needs_flush or self.index_files.needs_flush

    def flush(self) -> None:
        """Write the data and index files back to disk (a thread runs this: it may wait on the disk)."""
        self.data_files.flush()
        self.index_files.flush()

    # --- recovery ----------------------------------------------------------------------------

    def recover(self) -> None:
        if self._recovered:
            return
        self._recovered = True
        _check(self.data_files.check_self(), "the data files are not adjacent (before recovery)")
        _check(self.index_files.check_self(), "the index files are not adjacent (before recovery)")
        files = self.data_files.files
        if not files:
            self.index_files.truncate_offset(0)
            self.index_files.update_where_position(0)
            return
        last_file = files[-1]
        slot = self._first_file_to_recover()
        mapped = files[slot]
        _log.info("[%s] recovering the log from %s (file %d of %d)", self.config.self_id, mapped.file_name,
                  slot + 1, len(files))
        position = 0
        last_index = last_term = -1
        process_offset = mapped.file_from_offset
        rewrite_index = False
        while True:
            try:
                absolute = mapped.file_from_offset + position
                _check(position + 4 <= mapped.file_size, f"no room for an entry at {absolute}")
                (magic,) = _INT.unpack_from(mapped.mm, position)
                if magic == BLANK_MAGIC_CODE:
                    slot += 1
                    if slot >= len(files):
                        process_offset = mapped.file_from_offset + mapped.file_size
                        break
                    mapped = files[slot]
                    position = 0
                    process_offset = mapped.file_from_offset
                    continue
                header = decode_header(mapped.mm, position)
                if header.size == 0:
                    break
                (body_size,) = _INT.unpack_from(mapped.mm, position + HEADER_SIZE)
                _check(header.pos == absolute, f"pos {header.pos} != {absolute}")
                _check(body_size + BODY_OFFSET == header.size,
                       f"size {header.size} != {body_size} + {BODY_OFFSET}")
                position += header.size
                _check(MAGIC_1 <= magic <= CURRENT_MAGIC, f"unknown magic {magic} at {absolute}")
                if last_index != -1:
                    _check(header.index == last_index + 1,
                           f"entry {header.index} at {absolute} follows entry {last_index}")
                _check(header.term >= last_term, f"entry {header.index} at {absolute} has term {header.term} "
                       f"below the term {last_term} before it")
                _check(header.size > HEADER_SIZE, f"size {header.size} at {absolute} is too small")
                if not rewrite_index and not self._index_agrees(header, absolute):
                    unit_offset = header.index * INDEX_UNIT_SIZE
                    _log.warning("[%s] the index disagrees with the data from entry %d on: rewriting it",
                                 self.config.self_id, header.index)
                    old_end = self.index_files.max_wrote_position
                    self.index_files.truncate_offset(unit_offset, zero_from=old_end)
                    if self.index_files.max_wrote_position != unit_offset:
                        _check(self.index_files.rebuild_with_pos(unit_offset),
                               f"rebuilding the index at {unit_offset} failed")
                    rewrite_index = True
                if rewrite_index:
                    unit = encode_index_unit(absolute, header.size, magic, header.index, header.term)
                    unit_pos = self.index_files.append(unit, use_blank=False)
                    _check(unit_pos == header.index * INDEX_UNIT_SIZE, f"index unit of {header.index} went to "
                           f"{unit_pos}")
                last_index, last_term = header.index, header.term
                process_offset += header.size
            except DLedgerError as error:
                _log.info("[%s] the log ends in %s: %s", self.config.self_id, mapped.file_name, error)
                break
        _log.info("[%s] recovered the log to entry %d, data end %d", self.config.self_id, last_index,
                  process_offset)
        if last_file.file_from_offset - process_offset > last_file.file_size:
            raise StoreError(f"DLedger recovery of {self.data_files.store_path} stopped at {process_offset}, more "
                             f"than a file before the last file {last_file.file_name}: check the data files "
                             f"before removing anything")
        self.ledger_end_index, self.ledger_end_term = last_index, last_term
        if last_index != -1:
            entry = self.get(last_index)
            _check(entry.index == last_index, f"entry {last_index} reads back as {entry.index}")
            self.revise_ledger_begin_index()
        self.data_files.truncate_offset(process_offset)
        self.data_files.zero_garbage_after(process_offset)
        self.data_files.update_where_position(process_offset)
        index_end = (last_index + 1) * INDEX_UNIT_SIZE
        self.index_files.truncate_offset(index_end)
        self.index_files.zero_garbage_after(index_end)
        self.index_files.update_where_position(index_end)
        self.member_state.update_ledger_end(self.ledger_end_index, self.ledger_end_term)
        _check(self.data_files.check_self(), "the data files are not adjacent (after recovery)")
        _check(self.index_files.check_self(), "the index files are not adjacent (after recovery)")
        committed = self.load_checkpoint().get(_COMMITTED_INDEX_KEY, "").strip()
        if committed:
            try:
                committed_index = int(committed)
            except ValueError:
                _log.warning("[%s] %s has committedIndex %r, not a number: ignored", self.config.self_id,
                             self._checkpoint_path, committed)
            else:
                _log.info("[%s] committed index %d from the checkpoint", self.config.self_id, committed_index)
                self.update_committed_index(self.member_state.current_term, committed_index)

    def _first_file_to_recover(self) -> int:
        """Of the last three data files, the last whose first entry agrees with the index (0 if none does)."""
        files = self.data_files.files
        for slot in range(max(len(files) - 3, 0), -1, -1):
            mapped = files[slot]
            try:
                header = decode_header(mapped.mm, 0)
                _check(header.magic != BLANK_MAGIC_CODE and header.magic >= MAGIC_1, f"magic {header.magic}")
                _check(header.size > HEADER_SIZE, f"size {header.size}")
                _check(header.pos == mapped.file_from_offset, f"pos {header.pos} != {mapped.file_from_offset}")
                (body_size,) = _INT.unpack_from(mapped.mm, HEADER_SIZE)
                _check(body_size + BODY_OFFSET == header.size, f"size {header.size} != {body_size} + 48")
                _check(self._index_agrees(header, mapped.file_from_offset), "the index unit differs")
                return slot
            except DLedgerError as error:
                _log.warning("[%s] %s cannot start the recovery: %s", self.config.self_id, mapped.file_name, error)
        return 0

    def _index_agrees(self, header: DLedgerEntry, absolute: int) -> bool:
        data = self.index_files.read(header.index * INDEX_UNIT_SIZE, INDEX_UNIT_SIZE)
        if data is None:
            return False
        unit = decode_index_unit(data)
        return (unit.magic, unit.size, unit.index, unit.term, unit.pos) == \
            (header.magic, header.size, header.index, header.term, absolute)

    def revise_ledger_begin_index(self) -> None:
        """The begin index is the first entry of the first data file; the index files start at its unit."""
        first = self.data_files.first_file()
        if first is None:
            return
        self.ledger_begin_index = decode_header(first.mm, first.start_position).index
        self.index_files.reset_offset(self.ledger_begin_index * INDEX_UNIT_SIZE)

    # --- appending ---------------------------------------------------------------------------

    def append_as_leader(self, body: bytes) -> DLedgerEntry:
        """Append ``body`` as the next entry of the leader's current term; return the entry (with the body as
        written, after the append hooks)."""
        state = self.member_state
        _check(state.is_leader, f"{state.self_id} is {state.role.name}, not the leader", ResponseCode.NOT_LEADER)
        _check(state.transferee is None, f"leadership is moving to {state.transferee}",
               ResponseCode.LEADER_TRANSFERRING)
        _check(not self.disk_full, "the disk is full", ResponseCode.DISK_FULL)
        entry = DLedgerEntry(index=self.ledger_end_index + 1, term=state.current_term, magic=CURRENT_MAGIC,
                             body=body)
        encoded = encode_entry(entry)
        entry.pos = self.data_files.pre_append(len(encoded))
        set_pos(encoded, entry.pos)
        for hook in self.append_hooks:
            hook(entry, encoded)
        entry.body = bytes(encoded[BODY_OFFSET:])
        data_pos = self.data_files.append(encoded)
        _check(data_pos == entry.pos, f"entry {entry.index} went to {data_pos}, not {entry.pos}")
        self._append_index_unit(entry)
        self.ledger_end_index = entry.index
        self.ledger_end_term = entry.term
        if self.ledger_begin_index == -1:
            self.ledger_begin_index = entry.index
        state.update_ledger_end(self.ledger_end_index, self.ledger_end_term)
        return entry

    def append_as_follower(self, entry: DLedgerEntry, leader_term: int, leader_id: str) -> DLedgerEntry:
        """Append the leader's ``entry`` at the same index and pos as in the leader's files."""
        state = self.member_state
        _check(state.is_follower, f"{state.self_id} is {state.role.name}", ResponseCode.NOT_FOLLOWER)
        _check(not self.disk_full, "the disk is full", ResponseCode.DISK_FULL)
        encoded = encode_entry(entry)
        _check(entry.index == self.ledger_end_index + 1, f"entry {entry.index} does not follow "
               f"{self.ledger_end_index}", ResponseCode.INCONSISTENT_INDEX)
        _check(leader_term == state.current_term, f"term {leader_term} != {state.current_term}",
               ResponseCode.INCONSISTENT_TERM)
        _check(leader_id == state.leader_id, f"leader {leader_id} != {state.leader_id}",
               ResponseCode.INCONSISTENT_LEADER)
        position = self.data_files.pre_append(len(encoded))
        _check(position == entry.pos, f"entry {entry.index} belongs at {entry.pos} but the data ends at {position}")
        self.data_files.append(encoded)
        self._append_index_unit(entry)
        self.ledger_end_index = entry.index
        self.ledger_end_term = entry.term
        if self.ledger_begin_index == -1:
            self.ledger_begin_index = entry.index
        state.update_ledger_end(self.ledger_end_index, self.ledger_end_term)
        return entry

    def truncate(self, entry: DLedgerEntry, leader_term: int, leader_id: str) -> int:
        """Make the leader's ``entry`` this member's last: cut everything after it (and it, when it differs),
        then write it. Returns its index."""
        state = self.member_state
        _check(state.is_follower, f"{state.self_id} is {state.role.name}", ResponseCode.NOT_FOLLOWER)
        encoded = encode_entry(entry)
        _check(leader_term == state.current_term, f"term {leader_term} != {state.current_term}",
               ResponseCode.INCONSISTENT_TERM)
        _check(leader_id == state.leader_id, f"leader {leader_id} != {state.leader_id}",
               ResponseCode.INCONSISTENT_LEADER)
        try:
            existing = entry.same_as(self.get(entry.index))
        except DLedgerError:
            existing = False
        truncate_pos = entry.pos + entry.size if existing else entry.pos
        data_end = self.data_files.max_wrote_position
        if truncate_pos != data_end:
            _log.warning("[%s] truncating the data at %d (entry %d), where %d bytes ended", state.self_id,
                         truncate_pos, entry.index, data_end)
        self.data_files.truncate_offset(truncate_pos, zero_from=data_end)
        if self.data_files.max_wrote_position != truncate_pos:
            _check(self.data_files.rebuild_with_pos(truncate_pos), f"rebuilding the data at {truncate_pos} failed")
        self.data_files.flushed_where = min(self.data_files.flushed_where, truncate_pos)
        if not existing:
            data_pos = self.data_files.append(encoded)
            _check(data_pos == entry.pos, f"entry {entry.index} went to {data_pos}, not {entry.pos}")
        unit_offset = entry.index * INDEX_UNIT_SIZE
        index_end = self.index_files.max_wrote_position
        self.index_files.truncate_offset(unit_offset, zero_from=index_end)
        if self.index_files.max_wrote_position != unit_offset:
            _check(self.index_files.rebuild_with_pos(unit_offset), f"rebuilding the index at {unit_offset} failed")
        self.index_files.flushed_where = min(self.index_files.flushed_where, unit_offset)
        self._append_index_unit(entry)
        self.ledger_end_index = entry.index
        self.ledger_end_term = entry.term
        self.revise_ledger_begin_index()
        if self.committed_index > self.ledger_end_index:
            _log.error("[%s][BUG] truncated to entry %d below the committed index %d", state.self_id,
                       self.ledger_end_index, self.committed_index)
            self.committed_index = self.ledger_end_index
            self.committed_pos = entry.pos + entry.size
        state.update_ledger_end(self.ledger_end_index, self.ledger_end_term)
        return entry.index

    def _append_index_unit(self, entry: DLedgerEntry) -> None:
        unit = encode_index_unit(entry.pos, entry.size, entry.magic, entry.index, entry.term)
        unit_pos = self.index_files.append(unit, use_blank=False)
        _check(unit_pos == entry.index * INDEX_UNIT_SIZE, f"the index unit of entry {entry.index} went to {unit_pos}")

    # --- reading -----------------------------------------------------------------------------

    def _check_index(self, index: int) -> None:
        _check(index >= 0, f"index {index} is negative", ResponseCode.INDEX_OUT_OF_RANGE)
        _check(index >= self.ledger_begin_index, f"entry {index} is before the first entry "
               f"{self.ledger_begin_index}", ResponseCode.INDEX_LESS_THAN_LOCAL_BEGIN)
        _check(index <= self.ledger_end_index, f"entry {index} is not in {self.ledger_begin_index}.."
               f"{self.ledger_end_index}", ResponseCode.INDEX_OUT_OF_RANGE)

    def pos_and_size(self, index: int) -> tuple[int, int]:
        """Where entry ``index`` is in the data files, and its size."""
        self._check_index(index)
        data = self.index_files.read(index * INDEX_UNIT_SIZE, INDEX_UNIT_SIZE)
        _check(data is not None, f"no index unit for entry {index}")
        assert data is not None
        unit = decode_index_unit(data)
        return unit.pos, unit.size

    def get(self, index: int) -> DLedgerEntry:
        """Entry ``index``; raises INDEX_OUT_OF_RANGE / INDEX_LESS_THAN_LOCAL_BEGIN when it is not in the log."""
        pos, size = self.pos_and_size(index)
        data = self.data_files.read(pos, size)
        _check(data is not None, f"no data for entry {index} at {pos}")
        assert data is not None
        entry = decode_entry(data)
        _check(entry.pos == pos, f"entry {index} says it is at {entry.pos}, its index unit says {pos}")
        return entry

    def entry_at(self, pos: int) -> DLedgerEntry:
        """The entry that starts at ``pos`` in the data files (DISK_ERROR when none does)."""
        header = self.data_files.read(pos, BODY_OFFSET)
        _check(header is not None, f"no entry header at {pos}")
        assert header is not None
        size = decode_header(header).size
        data = self.data_files.read(pos, size) if size >= BODY_OFFSET else None
        _check(data is not None, f"no entry of {size} bytes at {pos}")
        assert data is not None
        entry = decode_entry(data)
        _check(entry.pos == pos, f"the entry at {pos} says it is at {entry.pos}")
        return entry

    # --- commit ------------------------------------------------------------------------------

    def update_committed_index(self, term: int, committed_index: int) -> bool:
        """Move the committed index forward to ``committed_index`` (at most the log's end); True when it moved.

        A leader's old term, a backwards move or a move below the log's begin are ignored, as in Java.
        """
        if (committed_index == -1 or self.ledger_end_index == -1 or term < self.member_state.current_term
                or committed_index == self.committed_index):
            return False
        if committed_index < self.committed_index or committed_index < self.ledger_begin_index:
            _log.warning("[%s] committed index %d not moved to %d (log begins at %d)", self.config.self_id,
                         self.committed_index, committed_index, self.ledger_begin_index)
            return False
        committed_index = min(committed_index, self.ledger_end_index)
        if committed_index == self.committed_index:
            return False
        pos, size = self.pos_and_size(committed_index)
        self.committed_index = committed_index
        self.committed_pos = pos + size
        return True

    def persist_checkpoint(self) -> None:
        text = format_properties({_END_INDEX_KEY: self.ledger_end_index,
                                  _COMMITTED_INDEX_KEY: self.committed_index})
        try:
            write_file_safely(self._checkpoint_path, text)
        except OSError as error:
            _log.error("[%s] writing %s failed: %s", self.config.self_id, self._checkpoint_path, error)

    def load_checkpoint(self) -> dict[str, str]:
        text = read_file_with_backup(self._checkpoint_path)
        return {} if text is None else parse_properties(text)
