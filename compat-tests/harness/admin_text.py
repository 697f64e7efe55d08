"""Our ``rocketmq-py`` command run as a process beside ``mqadmin``, and readers of the text both print.

    rocketmq_py("admin", "topicStatus", "-t", "T", namesrv=ns.addr)   -> stdout text (a failure raises)
    table(text)                 -> the rows of a table (lines split at blanks), header lines left out
    header(text)                -> the header line of a table (the first line starting with '#')
    labelled(text)              -> {"Topic:": "T", ...} of lines printed as "%-20s %s"
    assignments(text)           -> {key: value} of lines printed as "%-50s=  %s" (getBrokerConfig, ...)
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


class CommandError(RuntimeError):
    pass


def rocketmq_py(*args: str, namesrv: str | None = None, input: bytes | None = None, timeout: float = 300,
                check: bool = True) -> str:
    """``python -m rocketmq_py <args> -n <namesrv>``; its stdout. With ``check`` a non-zero exit raises
    CommandError with stderr."""
    return run_rocketmq_py(*args, namesrv=namesrv, input=input, timeout=timeout, check=check).stdout.decode()


def run_rocketmq_py(*args: str, namesrv: str | None = None, input: bytes | None = None, timeout: float = 300,
                    check: bool = True) -> subprocess.CompletedProcess[bytes]:
    argv = [sys.executable, "-m", "rocketmq_py", *args]
    if namesrv:
        argv += ["-n", namesrv]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("NAMESRV_ADDR", None)
    proc = subprocess.run(argv, input=input, capture_output=True, timeout=timeout, env=env,
                          stdin=None if input is not None else subprocess.DEVNULL)
    if check and proc.returncode != 0:
        raise CommandError(f"rocketmq-py {' '.join(args)} failed (exit {proc.returncode}):\n"
                           f"{proc.stderr.decode()[-3000:]}")
    return proc


def header(text: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("#"))


def table(text: str) -> list[list[str]]:
    """The rows of a printed table: each line that is not empty and not a header, split at blanks."""
    return [line.split() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def labelled(text: str) -> dict[str, str]:
    """``{"Label:": "value"}`` of the lines ``queryMsgById`` prints as ``%-20s %s``."""
    found = {}
    for line in text.splitlines():
        label = line[:20].rstrip()
        if label.endswith(":"):
            found[label] = line[21:]
    return found


def assignments(text: str) -> dict[str, str]:
    """``{key: value}`` of the lines printed as ``%-50s=  %s`` (getBrokerConfig) or ``%-40s=  %s``."""
    found = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=  ")
        if sep and not line.startswith("="):
            found[key.strip()] = value
    return found
