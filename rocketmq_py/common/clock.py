"""The two clocks: wall-clock milliseconds for timestamps that leave the process, monotonic ones for intervals.

A value that is stored, sent or compared with another host's time (a message's store timestamp, a lock's
last update, a route's last heartbeat) is wall-clock time, as Java's ``System.currentTimeMillis()``. A value
that only measures how long something took in this process (a send's timeout, an election's deadline) is
monotonic, so a clock step cannot stretch or shrink it.
"""
from __future__ import annotations

import time

__all__ = ["now_ms", "monotonic_ms"]


def now_ms() -> int:
    """Wall-clock time in whole milliseconds since the epoch (Java's ``System.currentTimeMillis()``)."""
    return time.time_ns() // 1_000_000


def monotonic_ms() -> float:
    """Milliseconds on the monotonic clock: only differences between two readings mean anything."""
    return time.monotonic() * 1000.0
