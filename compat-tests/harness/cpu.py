"""CPU time of a process as the kernel counts it, for the benchmarks' CPU-per-message figures."""
from __future__ import annotations

import os

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid: int) -> float:
    """User plus system CPU seconds of every thread of ``pid`` (``/proc/<pid>/stat`` fields 14 and 15)."""
    with open(f"/proc/{pid}/stat", "rb") as stat:
        fields = stat.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS
