"""CPU time of a process as the kernel counts it, for the benchmarks' CPU-per-message figures."""
from __future__ import annotations

import os

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _stat_cpu_s(path: str) -> float:
    """User plus system CPU seconds of a ``stat`` file of /proc (fields 14 and 15)."""
    with open(path, "rb") as stat:
        fields = stat.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def process_cpu_s(pid: int) -> float:
    """User plus system CPU seconds of every thread of ``pid`` (``/proc/<pid>/stat``)."""
    return _stat_cpu_s(f"/proc/{pid}/stat")


def main_thread_cpu_s(pid: int) -> float:
    """CPU seconds of the main thread of ``pid`` alone (``/proc/<pid>/task/<pid>/stat``): for our servers, the
    event loop's thread, apart from the store's flush, prefault and clean threads."""
    return _stat_cpu_s(f"/proc/{pid}/task/{pid}/stat")


def thread_cpu_s(pid: int, thread_id: int) -> float:
    """CPU seconds of one thread of ``pid`` (``/proc/<pid>/task/<thread_id>/stat``; Python's ``Thread.native_id``)."""
    return _stat_cpu_s(f"/proc/{pid}/task/{thread_id}/stat")


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


def main_thread_sched_s(pid: int) -> tuple[float, float]:
    """Seconds the main thread of ``pid`` ran on a CPU and seconds it waited in the run queue for one
    (``/proc/<pid>/task/<pid>/schedstat``, in ns). Over a window of wall time, what remains of it is time the
    thread slept: an event loop that runs plus waits for about the whole window is bound by the CPU it gets,
    one that mostly sleeps is bound by what it waits for."""
    with open(f"/proc/{pid}/task/{pid}/schedstat") as schedstat:
        ran_ns, waited_ns = schedstat.read().split()[:2]
    return int(ran_ns) / 1e9, int(waited_ns) / 1e9

