"""A lock that the threads recording updates never wait for (flat combining).

Why not a plain ``threading.Lock``: under the GIL, a thread can lose the GIL
inside its critical section. Every other thread that reaches the lock then
blocks, and each release wakes a thread that must first win the GIL back
before it can take the lock, by which time the releasing thread has often
taken the lock again. With many threads doing little work each (a push
consumer's 20 consume threads recording statistics and offsets for every
message), this convoy, once formed, lasts: the consumer of issue 33 ran at
one of two speeds, ~100k messages/s with ~3k context switches per run, or
~30k with 60k–150k, and in the slow runs every message cost a handful of
context switches on these locks. Java's consume threads use atomics for the
same figures and never wait.

Here a thread that records a change makes it at once when the lock is free
at that instant; otherwise it appends the change to a deque (thread-safe
without a lock), and the thread holding the lock, or the next one to find it
free, makes it; every holder makes what is pending before it releases the
lock. A reader holds the lock (waiting if it must) with everything pending
made first, so it sees every change recorded before it. Pending changes are
made one at a time in the order they were recorded.
"""
from __future__ import annotations

import threading
from collections import deque
from types import TracebackType
from typing import Any, Callable


class CombiningLock:
    """Guards a structure that the changes given to ``record`` make; see the module's docstring.

    ``with lock:`` holds it with every change recorded so far made: for reads, and for changes that must come
    after those.
    """

    __slots__ = ("_pending", "_lock")

    def __init__(self) -> None:
        self._pending: deque[tuple[Callable[..., None], tuple[Any, ...]]] = deque()
        self._lock = threading.Lock()

    def record(self, change: Callable[..., None], *args: Any) -> None:
        """Run ``change(*args)`` now if the lock is free, else leave it to whoever holds the lock or takes it next."""
        # Called for every message by every consume thread: kept to the fewest Python calls.
        lock, pending = self._lock, self._pending
        if lock.acquire(False):
            try:
                if pending:
                    self._make_pending()
                change(*args)
            finally:
                lock.release()
            if not pending:
                return
        else:
            pending.append((change, args))
        # A change recorded meanwhile, or ours: the holder may have released the lock after its last look at the
        # deque and before the append.
        if lock.acquire(False):
            self._release()

    def __enter__(self) -> None:
        # Taken by a consume thread for every batch of an orderly queue: nothing is called when nothing is pending.
        self._lock.acquire()
        if self._pending:
            try:
                self._make_pending()
            except BaseException:
                self._release()
                raise

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        lock, pending = self._lock, self._pending
        if pending:
            self._release()
            return
        lock.release()
        # A change recorded after the look at the deque: make it unless a new holder will.
        if pending and lock.acquire(False):
            self._release()

    def _release(self) -> None:
        """Make what is pending, then release; again if a change came in between and the lock is still free, so
        that no change waits for a later holder."""
        lock, pending = self._lock, self._pending
        while True:
            try:
                self._make_pending()
            finally:
                lock.release()
            if not pending or not lock.acquire(False):
                return

    def _make_pending(self) -> None:
        pending = self._pending
        while pending:
            change, args = pending.popleft()
            change(*args)
