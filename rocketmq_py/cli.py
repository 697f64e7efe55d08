"""The ``rocketmq-py`` command (also ``python -m rocketmq_py``).

    rocketmq-py namesrv [-c namesrv.properties] [-p PORT]
    rocketmq-py broker [-c broker.conf] [-n NAMESRV_ADDR] [-p] [--workers N]
    rocketmq-py quickstart [--messages N] [--keep DIR] [--json] [-v]
    rocketmq-py admin COMMAND [-n NAMESRV_ADDR] [--json] ...   (mqadmin's commands: rocketmq_py/admin/cli/)
    rocketmq-py produce -n NAMESRV_ADDR -t TOPIC ...            (stdin to a topic: rocketmq_py/shell/)
    rocketmq-py consume -n NAMESRV_ADDR -t TOPIC [-g GROUP] ...  (a topic to stdout)
    rocketmq-py --version

Each server subcommand runs one server in the foreground, logs through
:mod:`logging` (INFO by default) and shuts down cleanly on SIGTERM or
SIGINT; ``quickstart`` prints only its summary unless ``-v`` asks for its
logs. ``--log-level`` goes before or after the subcommand. Subcommands are
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
from typing import Awaitable, Callable, Iterator, Sequence

_log = logging.getLogger("rocketmq_py.cli")

LOG_FORMAT = "%(asctime)s %(levelname)-5s [%(name)s] %(message)s"


@contextlib.contextmanager
def _stop_signals() -> Iterator[asyncio.Event]:
    """An event set by SIGTERM or SIGINT while the block runs."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    installed = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
            installed.append(sig)
    try:
        yield stop
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)


async def run_until_stopped(start: Callable[[], Awaitable[object]], stop: Callable[[], Awaitable[object]]) -> None:
    """Start a server, wait for SIGTERM/SIGINT, then stop it.

    The handlers are in place before the server starts: a signal that comes while it starts (its port is
    already open) stops it cleanly instead of killing the process.
    """
    with _stop_signals() as stopping:
        await start()
        try:
            await stopping.wait()
            _log.info("stop signal received; shutting down")
        finally:
            await stop()


# --- namesrv ------------------------------------------------------------------------------------


def _add_namesrv(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("namesrv", help="run a name server (Java's mqnamesrv)")
    parser.add_argument("-c", "--config", help="a namesrv.properties file (Java's keys, e.g. listenPort, kvConfigPath)")
    parser.add_argument("--port", type=int, help="the port to listen on (default: listenPort, 9876)")
    # -p prints the configuration, as it does for Java's mqnamesrv and mqbroker.
    parser.add_argument("-p", "--print-config", action="store_true", help="print every config key and exit")
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


# --- broker -------------------------------------------------------------------------------------


def _add_broker(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("broker", help="run a broker (Java's mqbroker)")
    parser.add_argument("-c", "--config", help="a broker.conf file (Java's keys: brokerName, namesrvAddr, listenPort, "
                                               "storePathRootDir, flushDiskType, ...)")
    parser.add_argument("-n", "--namesrv-addr", help="name servers, ';'-separated (overrides namesrvAddr)")
    parser.add_argument("-p", "--print-config", action="store_true", help="print every config key and exit")
    parser.add_argument("--workers", type=int, metavar="N",
                        help="front processes that own the client sockets (overrides serverWorkerProcesses; 0: none)")
    parser.set_defaults(run=_run_broker)


def _run_broker(args: argparse.Namespace) -> int:
    from rocketmq_py.broker import BrokerController, load_broker_config
    from rocketmq_py.broker.config import settle_worker_processes
    from rocketmq_py.common.config_file import config_to_properties, format_properties
    from rocketmq_py.remoting.allocator import keep_freed_blocks

    broker_config, store_config = load_broker_config(args.config, namesrv_addr=args.namesrv_addr,
                                                     server_worker_processes=args.workers)
    origin = "--workers" if args.workers is not None else settle_worker_processes(broker_config)
    if args.print_config:
        sys.stdout.write(format_properties(config_to_properties(broker_config, store_config)))
        return 0
    keep_freed_blocks()
    controller = BrokerController(broker_config, store_config)

    async def start() -> None:
        await controller.start()
        # Once started: a broker that refuses to start says so in its one line.
        fronts = broker_config.server_worker_processes
        if fronts:
            _log.info("%d front process%s, from %s; serverWorkerProcesses=0 runs the broker as one process",
                      fronts, "" if fronts == 1 else "es", origin)
        else:
            _log.info("no front processes, from %s: the broker serves its clients in one process", origin)

    from rocketmq_py.remoting.loop import run_on_new_loop

    run_on_new_loop(run_until_stopped(start, controller.shutdown))
    return 0


# --- quickstart ----------------------------------------------------------------------------------


def _add_quickstart(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("quickstart", help="run a name server and a broker in a temporary directory, "
                                                      "send and consume messages, print a summary")
    parser.add_argument("--messages", type=int, default=100, help="how many messages to send (default 100)")
    parser.add_argument("--keep", metavar="DIR", help="use (and keep) DIR instead of a temporary directory")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what the servers and clients do (INFO)")
    # Only the summary by default: the logs of two servers and two clients would bury it.
    parser.set_defaults(run=_run_quickstart, default_log_level="ERROR")


def _run_quickstart(args: argparse.Namespace) -> int:
    from rocketmq_py.broker.quickstart import run_quickstart

    return run_quickstart(args.messages, args.keep, args.json)


def _add_admin(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from rocketmq_py.admin.cli import add_admin

    add_admin(subparsers)


def _add_produce(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from rocketmq_py.shell.produce import add_produce

    add_produce(subparsers)


def _add_consume(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from rocketmq_py.shell.consume import add_consume

    add_consume(subparsers)


#: name -> function adding the subcommand's parser
COMMANDS: dict[str, Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]] = {
    "namesrv": _add_namesrv,
    "broker": _add_broker,
    "quickstart": _add_quickstart,
    "admin": _add_admin,
    "produce": _add_produce,
    "consume": _add_consume,
}


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _log_level(text: str) -> str:
    level = text.strip().upper()
    if level not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(LOG_LEVELS)}")
    return level


def _add_log_level(parser: argparse.ArgumentParser, default: object) -> None:
    parser.add_argument("--log-level", type=_log_level, default=default,
                        help="DEBUG, INFO, WARNING or ERROR (default INFO; quickstart: ERROR unless -v)")


def build_parser() -> argparse.ArgumentParser:
    from rocketmq_py._version import __version__

    parser = argparse.ArgumentParser(prog="rocketmq-py", description="Apache RocketMQ 4.9 in Python")
    parser.add_argument("--version", action="version", version=f"rocketmq-py {__version__}")
    _add_log_level(parser, None)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for add in COMMANDS.values():
        add(subparsers)
    for subparser in subparsers.choices.values():
        # SUPPRESS: a --log-level given before the subcommand is kept unless one is given after it too.
        _add_log_level(subparser, argparse.SUPPRESS)
    return parser


def chosen_log_level(args: argparse.Namespace) -> str:
    """The --log-level given (before or after the subcommand), else the subcommand's default."""
    if args.log_level is not None:
        return str(args.log_level)
    if getattr(args, "verbose", False):
        return "INFO"
    return str(getattr(args, "default_log_level", "INFO"))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``rocketmq-py`` command; the exit status."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=chosen_log_level(args), format=LOG_FORMAT, stream=sys.stderr)
    from rocketmq_py.errors import RocketMQError

    try:
        return int(args.run(args) or 0)
    except (RocketMQError, OSError, ValueError) as error:
        # A refusal at start (a key's value, a missing package, a locked store, a port in use): one line, no
        # traceback; anything else is a bug and keeps its traceback.
        _log.error("%s failed: %s", args.command, error)
        return 1


if __name__ == "__main__":
    sys.exit(main())
