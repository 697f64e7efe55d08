"""The one event loop of a Spark process that runs every coroutine of the source and the sink.

Spark calls the data source from plain blocking Python (planner processes and the streaming
runner on the driver, pooled workers on the executors). All of them hand their coroutines to
one :class:`~rocketmq_py.remoting.blocking.BackgroundLoop` per process. The loop runs all the
time, not only during a call, so connections closed by a server between two calls (the Java
name server closes idle ones) are noticed when they close, as Netty's event loop does, and a
later call connects again instead of writing into a dead connection.

Python workers are forked; a loop thread does not survive a fork, so a child makes its own.
"""
from __future__ import annotations

import os
import threading
from typing import Any, Coroutine, TypeVar

from rocketmq_py.remoting.blocking import BackgroundLoop

__all__ = ["process_loop", "run"]

_T = TypeVar("_T")

_LOCK = threading.Lock()
_LOOP: BackgroundLoop | None = None
_LOOP_PID = 0


def process_loop() -> BackgroundLoop:
    """This process's loop, started on first use (and again in a forked child)."""
    global _LOOP, _LOOP_PID
    with _LOCK:
        if _LOOP is None or _LOOP_PID != os.getpid() or _LOOP.is_closed:
            _LOOP = BackgroundLoop(name="rocketmq-py-spark")
            _LOOP_PID = os.getpid()
        return _LOOP


def run(coro: Coroutine[Any, Any, _T], timeout: float | None = None) -> _T:
    """Run ``coro`` on the process loop and wait for its result."""
    return process_loop().run(coro, timeout)
