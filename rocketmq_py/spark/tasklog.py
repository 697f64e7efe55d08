"""Where Spark ran the source's tasks: with ``ROCKETMQ_PY_SPARK_TASK_LOG=<directory>`` in the
executors' environment (``spark.executorEnv.ROCKETMQ_PY_SPARK_TASK_LOG``), every read and write task
appends one JSON line (what it did, its process id, its ancestors' process ids, the pid of the
executor JVM above it, and the host) to a file of that directory named after the process. Off when the variable is unset; the tests use it to show which
executor processes did the reads.
"""
from __future__ import annotations

import json
import os
import socket

ENV = "ROCKETMQ_PY_SPARK_TASK_LOG"


def _ancestors(limit: int = 6) -> tuple[list[int], int | None]:
    """Parent pids (nearest first) and the executor JVM among them, from /proc (empty where there is none)."""
    chain: list[int] = []
    executor = None
    pid = os.getppid()
    while pid > 1 and len(chain) < limit:
        try:
            cmdline = open(f"/proc/{pid}/cmdline", "rb").read()
            stat = open(f"/proc/{pid}/stat", encoding="ascii", errors="replace").read()
        except OSError:
            break
        chain.append(pid)
        if executor is None and b"CoarseGrainedExecutorBackend" in cmdline:
            executor = pid
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return chain, executor


def record(kind: str, **what: object) -> None:
    directory = os.environ.get(ENV)
    if not directory:
        return
    ancestors, executor = _ancestors()
    line = json.dumps({"kind": kind, "pid": os.getpid(), "ppid": os.getppid(), "ancestors": ancestors,
                       "executorJvm": executor, "host": socket.gethostname(), **what}, sort_keys=True)
    # One file per process and O_APPEND: lines of concurrent tasks never interleave.
    with open(os.path.join(directory, f"tasks-{os.getpid()}.jsonl"), "a", encoding="utf-8") as out:
        out.write(line + "\n")
