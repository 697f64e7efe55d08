"""The connection flags the client subcommands of ``rocketmq-py`` share (``admin``, ``produce``, ``consume``):
the name servers (``-n``, default ``NAMESRV_ADDR``), ACL keys (default: ``accessKey``/``secretKey`` of
``$ROCKETMQ_HOME/conf/tools.yml``, as mqadmin reads them) and TLS (default: the ``tls.enable`` setting)."""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

_log = logging.getLogger(__name__)


def add_connection_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-n", "--namesrvAddr", dest="namesrv_addr", default=None,
                        help="name servers, ';'-separated (default: NAMESRV_ADDR)")
    parser.add_argument("--access-key", help="ACL access key (default: accessKey of $ROCKETMQ_HOME/conf/tools.yml)")
    parser.add_argument("--secret-key", help="ACL secret key (default: secretKey of $ROCKETMQ_HOME/conf/tools.yml)")
    parser.add_argument("--tls", action="store_true", default=None,
                        help="connect with TLS (default: the tls.enable / TLS_ENABLE setting)")


def tools_acl_keys(home: str | None) -> tuple[str | None, str | None]:
    """``accessKey`` and ``secretKey`` of ``<home>/conf/tools.yml`` (mqadmin's ACL file), or None each when the
    file or either key is missing."""
    if not home:
        return None, None
    # lazy: only a command that reads the ACL file needs YAML
    import yaml

    path = Path(home) / "conf" / "tools.yml"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, None
    except (OSError, yaml.YAMLError) as error:
        _log.warning("the ACL file %s cannot be read (%s): connecting without ACL, as mqadmin does", path, error)
        return None, None
    found = {key: str(data[key]) for key in ("accessKey", "secretKey")
             if isinstance(data, dict) and data.get(key) is not None}
    access_key, secret_key = found.get("accessKey"), found.get("secretKey")
    if not (access_key or "").strip() or not (secret_key or "").strip():  # mqadmin: ACL off when either is blank
        return None, None
    return access_key, secret_key


def connection_options(args: argparse.Namespace, env: Mapping[str, str] = os.environ) -> dict[str, Any]:
    """The client options (ClientConfig fields) the connection flags ask for; a fresh instance name, so that
    the command's clients share no client instance with anything else."""
    options: dict[str, Any] = {"instance_name": f"rocketmq-py-cli-{os.getpid()}"}
    namesrv = args.namesrv_addr or env.get("NAMESRV_ADDR")
    if namesrv:
        options["namesrv_addr"] = namesrv
    access_key, secret_key = args.access_key, args.secret_key
    if access_key is None and secret_key is None:
        access_key, secret_key = tools_acl_keys(env.get("ROCKETMQ_HOME"))
    if access_key is not None or secret_key is not None:
        options.update(access_key=access_key, secret_key=secret_key)
    if args.tls:
        options["use_tls"] = True
    return options


def report_failure(command: str, error: BaseException) -> int:
    """Print what failed as one line on stderr (a server's remark can span several); the exit status, 1."""
    print(f"rocketmq-py {command}: {' '.join(str(error).split())}", file=sys.stderr)
    return 1


class Interrupt:
    """Whether SIGINT or SIGTERM stopped the command (see :func:`interruptible`)."""

    def __init__(self) -> None:
        self.interrupted = False


@contextlib.contextmanager
def interruptible(stop: Callable[[], None] | None = None) -> Iterator[Interrupt]:
    """While the block runs, SIGINT and SIGTERM call ``stop``, or by default cancel the running task (its
    clients then shut down cleanly: a consumer commits what it printed); ``interrupted`` tells afterwards
    whether a signal came."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    interrupt = Interrupt()

    def on_signal() -> None:
        interrupt.interrupted = True
        if stop is not None:
            stop()
        elif task is not None:
            task.cancel()

    installed = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, on_signal)
            installed.append(sig)
    try:
        yield interrupt
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
