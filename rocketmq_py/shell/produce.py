"""``rocketmq-py produce``: one message per line of stdin (or ``-f FILE``) to a topic, as ``kcat -P`` is for Kafka.

Lines go in batches (``--batch-size`` messages, at most :data:`MAX_BATCH_BYTES` of bodies and properties per
request), one batch after another, so the lines keep their order on each queue. Delayed messages cannot be
batched (the broker refuses it), so with ``--delay`` each line is one request. The line's end (``\\n``, and a
``\\r`` before it) is not part of the body. RocketMQ refuses an empty body: an empty line is skipped, and the
count of skipped lines is reported on stderr at the end, with the count of messages sent.
"""
from __future__ import annotations

import argparse
import asyncio
import sys
from typing import IO, TYPE_CHECKING, Iterator

from rocketmq_py.cli_connection import add_connection_options, connection_options, report_failure

if TYPE_CHECKING:
    from rocketmq_py.client.producer.core import AsyncProducer
    from rocketmq_py.common.message import Message

#: The producer group of ``rocketmq-py produce`` unless ``-g`` names one.
DEFAULT_PRODUCER_GROUP = "rocketmq_py_cli_producer"
#: Bodies and properties per batch request: well under the broker's 4 MiB maxMessageSize.
MAX_BATCH_BYTES = 1024 * 1024
#: What each message of a batch adds to its body and properties in the request (lengths, flags, CRC).
BATCH_ITEM_OVERHEAD = 24


def add_produce(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("produce", help="send one message per line of stdin to a topic (as kcat -P)",
                                   description="Send one message per line of stdin (or -f FILE) to a topic.")
    add_connection_options(parser)
    parser.add_argument("-t", "--topic", required=True, help="the topic to send to")
    parser.add_argument("-f", "--file", help="read the lines from FILE instead of stdin")
    parser.add_argument("-g", "--group", default=DEFAULT_PRODUCER_GROUP,
                        help=f"the producer group (default {DEFAULT_PRODUCER_GROUP})")
    parser.add_argument("--tags", help="the tag of every message")
    parser.add_argument("--keys", help="the keys of every message (space-separated)")
    parser.add_argument("--property", dest="properties", action="append", default=[], metavar="K=V",
                        help="a user property of every message (repeatable)")
    parser.add_argument("--delay", type=int, default=0, metavar="LEVEL",
                        help="delay level 1-18 (1s 5s 10s 30s 1m ... 2h); delayed messages are sent one by one")
    parser.add_argument("--batch-size", type=int, default=100, metavar="N", help="messages per request (default 100)")
    # Only the summary on stderr, unless --log-level asks for the producer's logs.
    parser.set_defaults(run=_run_produce, default_log_level="WARNING")


def parse_properties(items: list[str]) -> dict[str, str]:
    """``["k=v", ...]`` as a dict; ValueError naming an item without ``=`` or with an empty key."""
    found = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--property {item!r} is not KEY=VALUE")
        found[key] = value
    return found


def read_lines(stream: IO[bytes]) -> Iterator[bytes]:
    """The lines of ``stream`` without their ``\\n`` (or ``\\r\\n``)."""
    for line in stream:
        if line.endswith(b"\n"):
            line = line[:-2] if line.endswith(b"\r\n") else line[:-1]
        yield line


def _run_produce(args: argparse.Namespace) -> int:
    from rocketmq_py.errors import RocketMQError

    try:
        if args.batch_size < 1:
            raise ValueError(f"--batch-size must be at least 1, not {args.batch_size}")
        properties = parse_properties(args.properties)
        if args.file:
            with open(args.file, "rb") as stream:
                sent, skipped = asyncio.run(produce(args, read_lines(stream), properties))
        else:
            sent, skipped = asyncio.run(produce(args, read_lines(sys.stdin.buffer), properties))
    except (RocketMQError, OSError, ValueError) as error:
        return report_failure("produce", error)
    note = f", skipped {skipped} empty line(s): RocketMQ refuses empty bodies" if skipped else ""
    print(f"sent {sent} message(s) to {args.topic}{note}", file=sys.stderr)
    return 0


async def produce(args: argparse.Namespace, lines: Iterator[bytes], properties: dict[str, str]) -> tuple[int, int]:
    """Send every non-empty line; (messages sent, empty lines skipped)."""
    # lazy: see rocketmq_py/_lazy.py
    from rocketmq_py.client.producer.core import AsyncProducer
    from rocketmq_py.common.message import Message

    sent = skipped = 0
    batch: list[Message] = []
    batch_bytes = 0
    async with AsyncProducer(args.group, **connection_options(args)) as producer:
        for line in lines:
            if not line:
                skipped += 1
                continue
            message = Message(args.topic, line, tags=args.tags, keys=args.keys, properties=properties)
            if args.delay:
                message.delay_time_level = args.delay
                await producer.send(message)
                sent += 1
                continue
            size = len(line) + BATCH_ITEM_OVERHEAD + sum(len(k) + len(v) + 2 for k, v in message.properties.items())
            if batch and (len(batch) >= args.batch_size or batch_bytes + size > MAX_BATCH_BYTES):
                sent += await _send(producer, batch)
                batch, batch_bytes = [], 0
            batch.append(message)
            batch_bytes += size
        if batch:
            sent += await _send(producer, batch)
    return sent, skipped


async def _send(producer: AsyncProducer, batch: list[Message]) -> int:
    await (producer.send(batch[0]) if len(batch) == 1 else producer.send_batch(batch))
    return len(batch)
