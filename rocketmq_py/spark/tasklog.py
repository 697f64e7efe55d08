"""Where Spark ran the source's tasks: with ``ROCKETMQ_PY_SPARK_TASK_LOG=<directory>`` in the
executors' environment (``spark.executorEnv.ROCKETMQ_PY_SPARK_TASK_LOG``), every read and write task
appends one JSON line (what it did, its process id, parent process id and host) to a file of that
directory named after the process. Off when the variable is unset; the tests use it to show which
executor processes did the reads.
"""
from __future__ import annotations

import json
import os
import socket

ENV = "ROCKETMQ_PY_SPARK_TASK_LOG"


def record(kind: str, **what: object) -> None:
    directory = os.environ.get(ENV)
    if not directory:
        return
    line = json.dumps({"kind": kind, "pid": os.getpid(), "ppid": os.getppid(), "host": socket.gethostname(),
                       **what}, sort_keys=True)
    # One file per process and O_APPEND: lines of concurrent tasks never interleave.
    with open(os.path.join(directory, f"tasks-{os.getpid()}.jsonl"), "a", encoding="utf-8") as out:
        out.write(line + "\n")
