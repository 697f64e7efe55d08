"""CPU time of a process as the kernel counts it, for the benchmarks' CPU-per-message figures."""
from __future__ import annotations

import os

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid: int) -> float:
    """User plus system CPU seconds of every thread of ``pid`` (``/proc/<pid>/stat`` fields 14 and 15)."""
    with open(f"/proc/{pid}/stat", "rb") as stat:
        fields = stat.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def descendants(pid: int) -> list[int]:
    """The live child processes of ``pid``, and theirs (``/proc/<pid>/task/*/children``)."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as children:
                kids = [int(kid) for kid in children.read().split()]
        except FileNotFoundError:
            continue
        for kid in kids:
            found.append(kid)
            found.extend(descendants(kid))
    return found


def process_tree_cpu_s(pid: int) -> float:
    """CPU seconds of ``pid`` and of its live descendants (a broker and its front processes)."""
    total = process_cpu_s(pid)
    for kid in descendants(pid):
        try:
            total += process_cpu_s(kid)
        except FileNotFoundError:
            pass  # it exited between the listing and the reading
    return total
