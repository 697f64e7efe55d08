"""Faulting the CommitLog's next pages in ahead of the writes (our own service; Java has none by default).

The first write to a page of a CommitLog file costs a page fault in the putting thread, in which the kernel
reads the file's unwritten blocks into the page cache as zeros. Under batch sends that was about half of the
putting thread's CPU. This service has the kernel do it for the ``commitLogPrefaultBytes`` after the write
position (MADV_POPULATE_WRITE, Linux 5.14 and later) from its own thread, which does not hold the GIL while
the kernel works: the putting thread's writes then find their pages mapped, and the work runs on another
core. Nothing is written: the pages hold what the file holds (zeros), and recovery reads them as before.
On a kernel that cannot, the service logs that once and stops.
"""
from __future__ import annotations

import logging

from rocketmq_py.store.flush import ServiceThread
from rocketmq_py.store.mapped_file import MappedFile, MappedFileQueue

_log = logging.getLogger(__name__)

#: How long the service waits between looks at the write position: short while writes keep it busy, longer
#: when idle (a window of 32 MiB lasts ~100 ms at the fastest batch sends measured).
BUSY_INTERVAL_S = 0.002
IDLE_INTERVAL_S = 0.02
#: Bytes per kernel call, so that a file closed meanwhile waits at most for one of them.
CHUNK = 1 << 20


class CommitLogPrefaultService(ServiceThread):
    name = "CommitLogPrefaultService"

    def __init__(self, queue: MappedFileQueue, ahead: int) -> None:
        super().__init__()
        self.queue = queue
        self.ahead = ahead
        #: Where in the CommitLog's last file the pages are faulted in up to.
        self.prefaulted_to = 0
        self._file: MappedFile | None = None
        self.unsupported = False

    def run(self) -> None:
        while not self.stopped and not self.unsupported:
            busy = self.prefault_ahead() > 0
            self._stopped.wait(BUSY_INTERVAL_S if busy else IDLE_INTERVAL_S)

    def prefault_ahead(self) -> int:
        """Fault in the last file's pages from its write position to ``ahead`` bytes past it: the bytes done."""
        mapped = self.queue.last_file()
        if mapped is None or self.unsupported:
            return 0
        if mapped is not self._file:
            self._file = mapped
            self.prefaulted_to = 0
        target = min(mapped.file_size, mapped.wrote_position + self.ahead)
        position = max(self.prefaulted_to, mapped.wrote_position)
        done = 0
        while position < target and not self.stopped:
            end = min(target, position + CHUNK)
            if not mapped.prefault(position, end - position):
                self.unsupported = True
                _log.info("this kernel cannot fault pages in ahead (MADV_POPULATE_WRITE, Linux 5.14): "
                          "the putting thread takes the CommitLog's page faults itself")
                break
            done += end - position
            position = self.prefaulted_to = end
        return done
