"""``rocketmq-py admin COMMAND``: mqadmin's commands, names and flags, printing what mqadmin prints, or JSON.

Each area module (cluster, topics, consumers, messages) lists its commands as :class:`Command` objects; this
module builds their parsers with the options every command shares (the connection's, see
:mod:`rocketmq_py.cli_connection`, and ``--json``) and runs one with an :class:`AsyncAdmin`. A failure is one
line on stderr and exit status 1.
"""
from __future__ import annotations

import argparse
import asyncio
import dataclasses
import enum
import json
import sys
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Mapping

from rocketmq_py.cli_connection import add_connection_options, connection_options, report_failure

if TYPE_CHECKING:
    from rocketmq_py.admin.core import AsyncAdmin

@dataclasses.dataclass(frozen=True)
class Output:
    """What a command printed: mqadmin's text, and the same data for ``--json``."""

    text: str
    data: object


@dataclasses.dataclass(frozen=True)
class Command:
    """One mqadmin command: its name and description, its own options, and what it does."""

    name: str
    description: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[AsyncAdmin, argparse.Namespace], Awaitable[Output]]


def _commands() -> list[Command]:
    from rocketmq_py.admin.cli import cluster, consumers, messages, topics

    return [*cluster.COMMANDS, *topics.COMMANDS, *consumers.COMMANDS, *messages.COMMANDS]


def add_admin(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``admin`` and its commands (``rocketmq-py admin clusterList -n host:9876``)."""
    parser = subparsers.add_parser("admin", help="administer a cluster, as Java's mqadmin (same commands and flags)",
                                   description="mqadmin's commands: the same names, flags and printed columns; "
                                               "--json prints the same data as JSON")
    commands = parser.add_subparsers(dest="admin_command", metavar="COMMAND")
    commands.required = True
    for command in _commands():
        sub = commands.add_parser(command.name, help=command.description, description=command.description)
        _add_common(sub)
        command.add_arguments(sub)
        # Only what the command prints, unless --log-level asks for the clients' logs.
        sub.set_defaults(run=_run, admin_run=command.run, default_log_level="WARNING")


def _add_common(parser: argparse.ArgumentParser) -> None:
    add_connection_options(parser)
    parser.add_argument("--json", action="store_true", help="print the result as JSON instead of mqadmin's text")
    parser.add_argument("--timeout-ms", type=int, default=None, help="timeout of each request (default 5000)")


def _run(args: argparse.Namespace) -> int:
    from rocketmq_py.errors import RocketMQError

    try:
        output = asyncio.run(_run_command(args))
    except (RocketMQError, OSError, ValueError) as error:
        return report_failure(f"admin {args.admin_command}", error)
    if args.json:
        json.dump(jsonable(output.data), sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(output.text)
    sys.stdout.flush()
    return 0


async def _run_command(args: argparse.Namespace) -> Output:
    from rocketmq_py.admin.core import AsyncAdmin

    options = connection_options(args)
    if args.timeout_ms is not None:
        options["timeout_millis"] = args.timeout_ms
    async with AsyncAdmin(**options) as admin:
        output: Output = await args.admin_run(admin, args)
        return output


def jsonable(value: object) -> object:
    """``value`` as JSON data: dataclasses as objects of their fields, enums by value, sets sorted, bytes as
    UTF-8 text, and maps keyed by a message queue as lists of objects with the queue's fields first."""
    # lazy: see rocketmq_py/_lazy.py
    from rocketmq_py.common.message import MessageExt
    from rocketmq_py.common.message_queue import MessageQueue

    if isinstance(value, MessageExt):
        return jsonable(value.fields() | {"msg_id": value.msg_id})
    if isinstance(value, MessageQueue):  # a named tuple, written as an object like the dataclasses
        return _queue_fields(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: jsonable(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return jsonable(value.value)
    if isinstance(value, Mapping):
        if value and all(isinstance(key, MessageQueue) for key in value):
            return [{**_queue_fields(queue), **_as_object(jsonable(item))} for queue, item in sorted(value.items())]
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, (set, frozenset)):
        return sorted(jsonable(item) for item in value)  # type: ignore[type-var]
    if isinstance(value, (list, tuple)):
        return [jsonable(item) for item in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def _queue_fields(queue: Any) -> dict[str, object]:
    return {"topic": queue.topic, "broker_name": queue.broker_name, "queue_id": queue.queue_id}


def _as_object(value: object) -> dict[str, object]:
    return value if isinstance(value, dict) else {"value": value}
