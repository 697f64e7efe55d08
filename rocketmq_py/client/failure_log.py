"""Repeated failures logged once per interval with a count, not once per attempt.

A producer retrying through a broker outage fails thousands of times a second; one line per attempt
drowns the log and the disk. Here the first failure for a key (a broker) is logged at once, the later
ones are counted, and the count is logged with the last error when the interval has passed: at most one
line per key and interval, and the lines add up to every failure.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Callable

#: Seconds between two lines about the same key.
DEFAULT_INTERVAL_S = 5.0


@dataclass
class _Pending:
    last_logged: float
    count: int = 0
    last_error: BaseException | None = None


class FailureLog:
    """Logs failures per key at most once per ``interval_s``; the lines say how many failures they stand for.

    Thread-safe: the blocking producer's threads send (and fail) at the same time as its loop does.
    """

    def __init__(self, logger: logging.Logger, what: str, interval_s: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.logger = logger
        self.what = what
        self.interval_s = DEFAULT_INTERVAL_S if interval_s is None else interval_s
        self._clock = clock
        self._pending: dict[str, _Pending] = {}
        self._lock = threading.Lock()

    def failed(self, key: str, error: BaseException, action: str) -> None:
        """One more failure for ``key``; ``action`` says what happens next (``"trying again"``)."""
        with self._lock:
            now = self._clock()
            pending = self._pending.get(key)
            if pending is None:
                self._pending[key] = _Pending(now)
                self.logger.warning("%s %s failed, %s: %s (further failures of %s are counted and logged every "
                                    "%g s)", self.what, key, action, error, key, self.interval_s)
                return
            pending.count += 1
            pending.last_error = error
            if now - pending.last_logged >= self.interval_s:
                self._report(key, pending, now)

    def succeeded(self, key: str) -> None:
        """``key`` works again: report the failures not logged yet once the interval allows it."""
        if key not in self._pending:
            return  # the common case, without the lock
        with self._lock:
            pending = self._pending.get(key)
            if pending is None:
                return
            now = self._clock()
            if now - pending.last_logged < self.interval_s:
                return
            if pending.count:
                self._report(key, pending, now, recovered=True)
            del self._pending[key]

    def flush(self) -> None:
        """Log every count not logged yet (at shutdown)."""
        with self._lock:
            now = self._clock()
            for key, pending in list(self._pending.items()):
                if pending.count:
                    self._report(key, pending, now)
            self._pending.clear()

    def _report(self, key: str, pending: _Pending, now: float, recovered: bool = False) -> None:
        suffix = "; it works again" if recovered else ""
        self.logger.warning("%s %s failed %d more time(s) in the last %.1f s; last error: %s%s", self.what, key,
                            pending.count, now - pending.last_logged, pending.last_error, suffix)
        pending.last_logged = now
        pending.count = 0
        pending.last_error = None
