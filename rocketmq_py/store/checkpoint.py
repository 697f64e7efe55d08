"""The store checkpoint (Java's store/StoreCheckpoint): a 4096-byte file holding three int64 times.

``physicMsgTimestamp`` (@0) is the store time of the last CommitLog record known
flushed, ``logicsMsgTimestamp`` (@8) the same for the ConsumeQueues and
``indexMsgTimestamp`` (@16) for the index. Abnormal recovery starts from the
CommitLog file whose first record is older than the smallest of them.
"""
from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path

from rocketmq_py.store.mapped_file import allocate_blocks

_TIMES = struct.Struct(">qqq")
CHECKPOINT_FILE_SIZE = 4096
#: Recovery goes back this much before the checkpoint, as Java does.
RECOVERY_MARGIN_MS = 3000


class StoreCheckpoint:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        existed = self.path.exists()
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        if os.fstat(self._fd).st_size < CHECKPOINT_FILE_SIZE:
            allocate_blocks(self._fd, CHECKPOINT_FILE_SIZE)
        self._mm = mmap.mmap(self._fd, CHECKPOINT_FILE_SIZE)
        self.physic_msg_timestamp = 0
        self.logics_msg_timestamp = 0
        self.index_msg_timestamp = 0
        if existed:
            times = _TIMES.unpack_from(self._mm)
            self.physic_msg_timestamp, self.logics_msg_timestamp, self.index_msg_timestamp = times

    @property
    def min_timestamp(self) -> int:
        return max(min(self.physic_msg_timestamp, self.logics_msg_timestamp) - RECOVERY_MARGIN_MS, 0)

    @property
    def min_timestamp_index(self) -> int:
        return min(self.min_timestamp, self.index_msg_timestamp)

    def flush(self) -> None:
        if self._mm.closed:
            return
        _TIMES.pack_into(self._mm, 0, self.physic_msg_timestamp, self.logics_msg_timestamp, self.index_msg_timestamp)
        os.fsync(self._fd)

    def shutdown(self) -> None:
        if self._mm.closed:
            return
        self.flush()
        self._mm.close()
        os.close(self._fd)
