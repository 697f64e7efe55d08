"""The C allocator of a server process: freed large blocks kept for the next request, not given back.

A broker's requests carry buffers of tens to hundreds of kilobytes (a batch of 32 messages is ~40 KiB; a
front's PLACE message up to 256 KiB), made and freed once each, thousands of times a second. glibc's malloc
serves a block of 128 KiB or more (a threshold it raises, up to a point, as such blocks are freed) with a
fresh ``mmap`` and gives it back on ``free``, and gives back the top of its heap once 128 KiB of it is free:
each such buffer was then written into fresh pages, one page fault per 4 KiB. In a front serving batches of
32 that was four fifths of its CPU (benchmarks/broker/front_cost.py: 2.5 µs a message, 0.5 without the
faults). :func:`keep_freed_blocks` has malloc serve blocks up to :data:`MMAP_THRESHOLD` from its heap and
keep up to :data:`TRIM_THRESHOLD` of free heap, so a freed buffer's pages serve the next one. The process's
memory stays what its busiest moment needed.

An operator who sets glibc's own keys (``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``, or
``GLIBC_TUNABLES`` naming them) keeps them: the call then changes nothing. Elsewhere than glibc it changes
nothing either.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os

__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "keep_freed_blocks"]

_log = logging.getLogger(__name__)

#: Blocks up to this size come from the heap (the largest message a broker takes by default, 4 MiB).
MMAP_THRESHOLD = 4 * 1024 * 1024
#: Free heap kept rather than given back to the system.
TRIM_THRESHOLD = 64 * 1024 * 1024
# mallopt's parameter numbers (glibc's malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_OPERATOR_KEYS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")
_OPERATOR_TUNABLES = ("glibc.malloc.mmap_threshold", "glibc.malloc.trim_threshold")


def keep_freed_blocks() -> bool:
    """Set this process's malloc to keep freed large blocks (see the module); True when it did."""
    try:
        glibc = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError):  # a system that does not know the name: not glibc
        glibc = ""
    if not glibc.startswith("glibc"):
        return False
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    if any(key in os.environ for key in _OPERATOR_KEYS) or any(name in tunables for name in _OPERATOR_TUNABLES):
        _log.info("malloc's thresholds are the environment's (MALLOC_*_THRESHOLD_ or GLIBC_TUNABLES)")
        return False
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    # mallopt returns 1 on success. The trim threshold first: setting either one stops glibc's own raising
    # of both, so neither is left at its small default.
    done = libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1 and libc.mallopt(_M_MMAP_THRESHOLD,
                                                                                  MMAP_THRESHOLD) == 1
    if not done:
        _log.warning("malloc did not take its thresholds: large buffers are written into fresh pages")
    return bool(done)
