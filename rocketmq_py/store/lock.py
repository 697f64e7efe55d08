"""The store's ``lock`` file: one broker per store directory (Java's DefaultMessageStore lock).

Java takes a POSIX record lock on byte 0 of ``{storePathRootDir}/lock`` and
writes ``lock`` into it; so do we, so that a Java broker and ours exclude each
other too. The lock must be taken before anything reads or changes the store:
a second broker that recovered the live store (its ``abort`` file is there)
would truncate and rewrite files under the running one. When the lock is
held, the holder's pid comes from ``F_GETLK`` for the message.
"""
from __future__ import annotations

import fcntl
import os
import struct
from pathlib import Path

from rocketmq_py.errors import StoreError

# struct flock on Linux: l_type, l_whence, l_start, l_len, l_pid (native alignment pads it to 32 bytes).
_FLOCK = struct.Struct("hhqqi4x")

#: POSIX locks only exclude other processes, so the roots locked by this process are tracked as well.
_LOCKED_ROOTS: set[Path] = set()


class StoreLockedError(StoreError):
    """Another running broker holds the store's lock; nothing in the store was read or changed."""


class StoreLock:
    """The lock on one store root; :meth:`acquire` before :meth:`release`."""

    def __init__(self, root: Path, lock_path: Path) -> None:
        self.root = root
        self.lock_path = lock_path
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock, or raise :class:`StoreLockedError` naming the holder (the store stays untouched)."""
        if self._fd is not None:
            return
        self.root.mkdir(parents=True, exist_ok=True)
        root = self.root.resolve()
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if root in _LOCKED_ROOTS:
                raise StoreLockedError(self._message(os.getpid()))
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
            except OSError:
                raise StoreLockedError(self._message(_holder(fd))) from None
            os.pwrite(fd, b"lock", 0)
        except BaseException:
            os.close(fd)
            raise
        _LOCKED_ROOTS.add(root)
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        os.close(self._fd)  # closing the descriptor drops the POSIX lock
        self._fd = None
        _LOCKED_ROOTS.discard(self.root.resolve())

    def _message(self, pid: int | None) -> str:
        holder = f"pid {pid}" if pid else "pid unknown"
        return (f"the store at {self.root} is locked by a running broker ({holder}): stop that broker, or give "
                f"this one another storePathRootDir")


def _holder(fd: int) -> int | None:
    try:
        answer = fcntl.fcntl(fd, fcntl.F_GETLK, _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, 0, 1, 0))
    except OSError:
        return None
    lock_type, _, _, _, pid = _FLOCK.unpack(answer)
    return pid if lock_type != fcntl.F_UNLCK and pid > 0 else None
