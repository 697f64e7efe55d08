"""The ``rocketmq-py`` command (also ``python -m rocketmq_py``).

    rocketmq-py namesrv [-c namesrv.properties] [-p PORT]

Each subcommand runs one server in the foreground, logs through
:mod:`logging` and shuts down cleanly on SIGTERM or SIGINT. Subcommands are
registered in :data:`COMMANDS`, so ``broker`` and ``quickstart`` plug in the
same way.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from typing import Awaitable, Callable, Sequence

_log = logging.getLogger("rocketmq_py.cli")

LOG_FORMAT = "%(asctime)s %(levelname)-5s [%(name)s] %(message)s"


async def _wait_for_stop_signal() -> None:
    """Return when SIGTERM or SIGINT arrives."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    installed = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
            installed.append(sig)
    try:
        await stop.wait()
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)


async def run_until_stopped(start: Callable[[], Awaitable[object]], stop: Callable[[], Awaitable[object]]) -> None:
    """Start a server, wait for SIGTERM/SIGINT, then stop it."""
    await start()
    try:
        await _wait_for_stop_signal()
        _log.info("stop signal received; shutting down")
    finally:
        await stop()


# --- namesrv ------------------------------------------------------------------------------------


def _add_namesrv(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("namesrv", help="run a name server (Java's mqnamesrv)")
    parser.add_argument("-c", "--config", help="a namesrv.properties file (Java's keys, e.g. listenPort, kvConfigPath)")
    parser.add_argument("-p", "--port", type=int, help="the port to listen on (default: listenPort, 9876)")
    parser.add_argument("--print-config", action="store_true", help="print every config key and exit")
    parser.set_defaults(run=_run_namesrv)


def _run_namesrv(args: argparse.Namespace) -> int:
    from rocketmq_py.common.config_file import config_to_properties, format_properties
    from rocketmq_py.namesrv import NamesrvController, load_namesrv_config

    config = load_namesrv_config(args.config, listen_port=args.port)
    if args.print_config:
        sys.stdout.write(format_properties(config_to_properties(config)))
        return 0
    controller = NamesrvController(config)
    asyncio.run(run_until_stopped(controller.start, controller.shutdown))
    return 0


#: name -> function adding the subcommand's parser
COMMANDS: dict[str, Callable[[argparse._SubParsersAction], None]] = {
    "namesrv": _add_namesrv,
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rocketmq-py", description="Apache RocketMQ 4.9 in Python")
    parser.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR (default INFO)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for add in COMMANDS.values():
        add(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format=LOG_FORMAT, stream=sys.stderr)
    try:
        return int(args.run(args) or 0)
    except (OSError, ValueError) as error:
        _log.error("%s failed: %s", args.command, error)
        return 1


if __name__ == "__main__":
    sys.exit(main())
