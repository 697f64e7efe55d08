"""``rocketmq-py consume``: a topic's messages to stdout, one line each, as ``kcat -C`` is for Kafka.

With ``-g GROUP`` the command is a member of the group: its queues come from the group's rebalance, it starts
where the group committed (a new group where ``--from-beginning`` / ``--from-timestamp`` say, else at the
end), and it commits what it printed. Without a group it reads every queue of the topic (assign and seek, as
the group ``TOOLS_CONSUMER``, committing nothing) from ``--from-beginning``, ``--from-timestamp``,
``--offset`` or the end. ``--exit-at-end`` stops once every queue is read up to the end it had when the
command first saw the queue; ``--max N`` after N messages; SIGINT or SIGTERM whenever it comes (the group
then commits what was printed, and the exit status is 0). Each message is printed as its body, as
``--format`` says, or as a JSON line (``--json``).
"""
from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import sys
import time
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from rocketmq_py.cli_connection import add_connection_options, connection_options, interruptible, report_failure

if TYPE_CHECKING:
    from rocketmq_py.client.consumer.lite_pull import AsyncLitePullConsumer
    from rocketmq_py.common.message import MessageExt
    from rocketmq_py.common.message_queue import MessageQueue

#: The group of a consumer without ``-g`` (Java's MixAll.TOOLS_CONSUMER_GROUP, as mqadmin's readers use it).
TOOLS_CONSUMER_GROUP = "TOOLS_CONSUMER"
#: How often a group member waiting for the end wakes to look at its assignment, which a rebalance can change.
ASSIGNMENT_CHECK_S = 1.0
#: The fields a ``--format`` string can name.
FORMAT_FIELDS = ("topic", "broker", "queue_id", "offset", "msg_id", "offset_msg_id", "tags", "keys", "body",
                 "store_timestamp", "born_timestamp", "properties", "reconsume_times")


def add_consume(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("consume", help="print a topic's messages, one per line (as kcat -C)",
                                   description="Print a topic's messages, one per line: with a group as its "
                                               "member, or without one from a given start.")
    add_connection_options(parser)
    parser.add_argument("-t", "--topic", required=True, help="the topic to read")
    parser.add_argument("-g", "--group", help="consume as a member of this group (commits what it prints)")
    start = parser.add_mutually_exclusive_group()
    start.add_argument("--from-beginning", action="store_true", help="start at the first message")
    start.add_argument("--from-timestamp", metavar="TS",
                       help="start at the first message stored at or after TS (ms, or yyyy-MM-dd#HH:mm:ss:SSS)")
    start.add_argument("--offset", type=int,
                       help="start every queue at this offset; negative: that many messages before the end "
                            "(no group only)")
    parser.add_argument("--max", type=int, metavar="N", help="stop after N messages")
    parser.add_argument("--exit-at-end", action="store_true", help="stop at the end of the topic")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--format", help="print each message with this format string, e.g. "
                                         "'{queue_id} {offset} {keys} {body}' (fields: " + ", ".join(FORMAT_FIELDS) + ")")
    output.add_argument("--json", action="store_true", help="print each message as a JSON line")
    parser.set_defaults(run=_run_consume, default_log_level="WARNING")


def _run_consume(args: argparse.Namespace) -> int:
    # lazy: see rocketmq_py/_lazy.py
    from rocketmq_py.admin.cli.java_text import parse_timestamp
    from rocketmq_py.errors import RocketMQError

    try:
        if args.group and args.offset is not None:
            raise ValueError("--offset reads without a group: a group starts where it committed")
        if args.max is not None and args.max < 0:
            raise ValueError(f"--max cannot be negative, got {args.max}")
        timestamp = parse_timestamp(args.from_timestamp) if args.from_timestamp else None
        count = asyncio.run(consume(args, timestamp, sys.stdout.buffer))
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (``| head``): stop quietly, as kcat does, and keep Python from failing to flush.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (RocketMQError, OSError, ValueError) as error:
        return report_failure("consume", error)
    print(f"consumed {count} message(s) from {args.topic}", file=sys.stderr)
    return 0


def message_json(message: MessageExt) -> dict[str, Any]:
    """A message as a JSON line's object: its body as text when it is UTF-8, else as ``body_base64``."""
    data: dict[str, Any] = {
        "topic": message.topic, "broker_name": message.broker_name, "queue_id": message.queue_id,
        "queue_offset": message.queue_offset, "msg_id": message.msg_id, "offset_msg_id": message.offset_msg_id,
        "tags": message.tags, "keys": message.keys, "store_timestamp": message.store_timestamp,
        "born_timestamp": message.born_timestamp, "reconsume_times": message.reconsume_times,
        "properties": message.properties,
    }
    try:
        data["body"] = message.body.decode("utf-8")
    except UnicodeDecodeError:
        data["body_base64"] = base64.b64encode(message.body).decode("ascii")
    return data


def render(message: MessageExt, fmt: str | None, as_json: bool) -> bytes:
    """One output line of ``message`` (with its newline)."""
    if as_json:
        return json.dumps(message_json(message), ensure_ascii=False).encode("utf-8") + b"\n"
    if fmt is None:
        return message.body + b"\n"
    fields = {"topic": message.topic, "broker": message.broker_name, "queue_id": message.queue_id,
              "offset": message.queue_offset, "msg_id": message.msg_id, "offset_msg_id": message.offset_msg_id,
              "tags": message.tags or "", "keys": message.keys or "", "body": message.body.decode("utf-8", "replace"),
              "store_timestamp": message.store_timestamp, "born_timestamp": message.born_timestamp,
              "properties": message.properties, "reconsume_times": message.reconsume_times}
    try:
        return (fmt.format_map(fields) + "\n").encode("utf-8")
    except (KeyError, IndexError, ValueError) as error:
        raise ValueError(f"--format {fmt!r} cannot be filled ({error!r}); the fields are "
                         + ", ".join(FORMAT_FIELDS)) from None


@dataclass
class Printed:
    count: int = 0


@dataclass
class EndTracker:
    """Where each queue ends (the max offset when the command first saw it) and how far it was read."""

    ends: dict[MessageQueue, int] = field(default_factory=dict)
    positions: dict[MessageQueue, int] = field(default_factory=dict)

    def advance(self, message: MessageExt) -> None:
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.common.message_queue import MessageQueue

        queue = MessageQueue(message.topic, message.broker_name or "", message.queue_id)
        self.positions[queue] = max(self.positions.get(queue, 0), message.queue_offset + 1)

    def done(self, assigned: set[MessageQueue]) -> bool:
        return bool(assigned) and all(self.positions.get(q, 0) >= self.ends.get(q, 1) for q in assigned)


class _Start:
    """Where a queue without a committed offset starts, as the command line says."""

    def __init__(self, args: argparse.Namespace, timestamp_ms: int | None) -> None:
        self.from_beginning: bool = args.from_beginning
        self.offset: int | None = args.offset
        self.timestamp_ms = timestamp_ms

    async def offset_of(self, consumer: AsyncLitePullConsumer, queue: MessageQueue) -> int:
        low, high = await consumer.min_offset(queue), await consumer.max_offset(queue)
        if self.from_beginning:
            return low
        if self.timestamp_ms is not None:
            return await consumer.search_offset(queue, self.timestamp_ms)
        if self.offset is not None:
            wanted = high + self.offset if self.offset < 0 else self.offset
            return min(max(wanted, low), high)
        return high


async def consume(args: argparse.Namespace, timestamp_ms: int | None, out: IO[bytes]) -> int:
    """Print the messages as the arguments say; how many were printed."""
    # lazy: see rocketmq_py/_lazy.py
    from rocketmq_py.client.consumer.lite_pull import AsyncLitePullConsumer
    from rocketmq_py.common.heartbeat_consumer import ConsumeFromWhere

    options = connection_options(args)
    if args.group:
        options.update(auto_commit=True, pull_batch_size=32)
        if args.from_beginning:
            options["consume_from_where"] = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
        elif timestamp_ms is not None:
            # The group's start takes whole seconds (Java's consumeTimestamp); so does the end tracking below.
            timestamp_ms -= timestamp_ms % 1000
            options["consume_from_where"] = ConsumeFromWhere.CONSUME_FROM_TIMESTAMP
            options["consume_timestamp"] = time.strftime("%Y%m%d%H%M%S", time.localtime(timestamp_ms / 1000))
    else:
        options.update(auto_commit=False, pull_batch_size=32)
    start = _Start(args, timestamp_ms)
    tracker = EndTracker()
    printed = Printed()
    with interruptible() as interrupt:
        try:
            async with AsyncLitePullConsumer(args.group or TOOLS_CONSUMER_GROUP, **options) as consumer:
                await _consume(args, consumer, start, tracker, out, printed)
        except asyncio.CancelledError:
            if not interrupt.interrupted:
                raise
    return printed.count


async def _consume(args: argparse.Namespace, consumer: AsyncLitePullConsumer, start: _Start, tracker: EndTracker,
                   out: IO[bytes], printed: Printed) -> None:
    """Set the consumer up as the arguments say, then print until the end, ``--max`` or a signal, counting in
    ``printed`` as it goes."""
    if args.group:
        consumer.subscribe(args.topic)
    else:
        queues = await consumer.fetch_message_queues(args.topic)
        consumer.assign(queues)
        for queue in sorted(queues):
            offset = await start.offset_of(consumer, queue)
            consumer.seek(queue, offset)
            tracker.positions[queue] = offset
    while args.max is None or printed.count < args.max:
        if args.exit_at_end:
            await _learn_ends(consumer, tracker, start, bool(args.group))
            if tracker.done(consumer.assignment()):
                return
        wake = ASSIGNMENT_CHECK_S if args.exit_at_end and args.group else None
        try:
            message = await asyncio.wait_for(consumer.__anext__(), wake)
        except asyncio.TimeoutError:
            continue
        except StopAsyncIteration:
            return
        out.write(render(message, args.format, args.json))
        printed.count += 1
        tracker.advance(message)


async def _learn_ends(consumer: AsyncLitePullConsumer, tracker: EndTracker, start: _Start, group: bool) -> None:
    """The end and the start of each queue assigned since the last look."""
    for queue in consumer.assignment() - tracker.ends.keys():
        tracker.ends[queue] = await consumer.max_offset(queue)
        if group:
            committed = await consumer.committed(queue)
            begin = committed if committed >= 0 else await start.offset_of(consumer, queue)
            tracker.positions[queue] = max(tracker.positions.get(queue, 0), begin,
                                           await consumer.min_offset(queue))
