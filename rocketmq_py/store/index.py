"""The message key index (Java's store/index/IndexFile and IndexService).

Files ``{root}/index/{yyyyMMddHHmmssSSS}`` with a 40-byte header, a hash slot
table and entries (see :mod:`rocketmq_py.store._layout_py`). Keys are
``topic#UNIQ_KEY`` and ``topic#key`` for each space-separated KEYS token
(:func:`index_keys`); rolled-back transactional records are not indexed. A
full file is replaced by a new one that starts where it ended. The entries
are written by the store's write path (:mod:`rocketmq_py.store.write_path`),
as it dispatches each record; this module keeps the files and answers queries.
"""
from __future__ import annotations

import datetime
import logging
import threading
from pathlib import Path

from rocketmq_py.store import layout
from rocketmq_py.store.checkpoint import StoreCheckpoint
from rocketmq_py.store.config import MessageStoreConfig
from rocketmq_py.store.mapped_file import MappedFile

_log = logging.getLogger(__name__)


def index_keys(topic: str, keys: str | None, uniq_key: str | None) -> list[str]:
    """The index keys of a record, in the order they are put (``topic#UNIQ_KEY`` first), as Java's
    IndexService.buildIndex makes them."""
    found = [f"{topic}#{uniq_key}"] if uniq_key else []
    if keys:
        for key in keys.split(" "):
            if key:
                found.append(f"{topic}#{key}")
    return found


def _file_name_now() -> str:
    now = datetime.datetime.now()
    return now.strftime("%Y%m%d%H%M%S") + f"{now.microsecond // 1000:03d}"


class IndexFile:
    def __init__(self, path: Path, hash_slot_num: int, index_num: int) -> None:
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        self.mapped = MappedFile(path, layout.index_file_size(hash_slot_num, index_num))
        self.mapped.wrote_position = self.mapped.file_size

    @property
    def file_name(self) -> str:
        return self.mapped.file_name

    def header(self) -> tuple[int, int, int, int, int, int]:
        return layout.index_header(self.mapped.mm)

    @property
    def begin_timestamp(self) -> int:
        return self.header()[0]

    @property
    def end_timestamp(self) -> int:
        return self.header()[1]

    @property
    def end_phy_offset(self) -> int:
        return self.header()[3]

    @property
    def is_write_full(self) -> bool:
        return self.header()[5] >= self.index_num

    def is_time_matched(self, begin: int, end: int) -> bool:
        first, last = self.header()[:2]
        return (begin < first and end > last) or first <= begin <= last or first <= end <= last

    def select(self, key: str, max_num: int, begin: int, end: int) -> list[int]:
        try:
            return layout.index_select(self.mapped.mm, self.hash_slot_num, self.index_num,
                                       layout.index_key_hash(key), max_num, begin, end)
        except ValueError:  # deleted meanwhile
            return []

    def flush(self) -> None:
        self.mapped.flushed_position = 0
        self.mapped.flush(0)


class IndexService:
    def __init__(self, config: MessageStoreConfig, checkpoint: StoreCheckpoint) -> None:
        self.config = config
        self.checkpoint = checkpoint
        self.directory = config.index_dir
        self.files: list[IndexFile] = []
        self._lock = threading.Lock()

    def load(self, last_exit_ok: bool) -> None:
        if not self.directory.is_dir():
            return
        files = []
        expected = layout.index_file_size(self.config.max_hash_slot_num, self.config.max_index_num)
        for path in sorted(p for p in self.directory.iterdir() if p.is_file() and p.name.isdigit()):
            if path.stat().st_size != expected:
                _log.warning("index file %s has %d bytes, not the configured %d; ignoring it (set maxHashSlotNum "
                             "and maxIndexNum as the store was written)", path, path.stat().st_size, expected)
                continue
            index_file = IndexFile(path, self.config.max_hash_slot_num, self.config.max_index_num)
            if not last_exit_ok and index_file.end_timestamp > self.checkpoint.index_msg_timestamp:
                index_file.mapped.destroy()
                continue
            files.append(index_file)
        self.files = files

    def writable_file(self) -> IndexFile:
        """The index file to write into, created when the last one is full (raises StoreDiskFullError)."""
        with self._lock:
            last = self.files[-1] if self.files else None
            if last is not None and not last.is_write_full:
                return last
            end_phy, end_ts = (last.end_phy_offset, last.end_timestamp) if last is not None else (0, 0)
            name = _file_name_now()
            while any(f.file_name >= name for f in self.files):
                name = str(int(name) + 1)
            created = IndexFile(self.directory / name, self.config.max_hash_slot_num, self.config.max_index_num)
            layout.index_start(created.mapped.mm, end_phy, end_ts)
            self.files = self.files + [created]
        if last is not None:
            self._flush_full(last)
        return created

    def _flush_full(self, index_file: IndexFile) -> None:
        timestamp = index_file.end_timestamp if index_file.is_write_full else 0
        index_file.flush()
        if timestamp > 0:
            self.checkpoint.index_msg_timestamp = timestamp
            self.checkpoint.flush()

    def query_offset(self, topic: str, key: str, max_num: int, begin: int, end: int) -> tuple[list[int], int, int]:
        """``(physical offsets, last update time, last update offset)`` of ``topic#key`` within [begin, end]."""
        max_num = min(max_num, self.config.max_msgs_num_batch)
        files = self.files
        offsets: list[int] = []
        if not files:
            return offsets, 0, 0
        last = files[-1].header()
        for index_file in reversed(files):
            if index_file.is_time_matched(begin, end):
                offsets.extend(index_file.select(f"{topic}#{key}", max_num - len(offsets), begin, end))
            if index_file.begin_timestamp < begin or len(offsets) >= max_num:
                break
        return offsets, last[1], last[3]

    def delete_expired_file(self, commit_log_min_offset: int) -> None:
        files = self.files
        expired = [f for f in files[:-1] if f.end_phy_offset < commit_log_min_offset]
        if not expired:
            return
        with self._lock:
            self.files = [f for f in self.files if f not in expired]
        for index_file in expired:
            index_file.mapped.destroy()

    def flush(self) -> None:
        for index_file in self.files:
            index_file.flush()

    def shutdown(self) -> None:
        for index_file in self.files:
            index_file.flush()
            index_file.mapped.close()

    def destroy(self) -> None:
        for index_file in self.files:
            index_file.mapped.destroy()
        self.files = []
