"""``rocketmq-py produce``: one message per line of stdin (or ``-f FILE``) to a topic, as ``kcat -P`` is for Kafka.

Lines go in batches (``--batch-size`` messages, at most :data:`MAX_BATCH_BYTES` of bodies and properties per
request), one batch after another, so the lines keep their order on each queue; a batch goes as soon as no
more input is waiting, so lines typed at a terminal are sent one by one. SIGINT or SIGTERM ends the input:
the lines handed to the sender already are sent, and the exit status is 130. Delayed messages cannot be
batched (the broker refuses it), so with ``--delay`` each line is one request. The line's end (``\\n``, and a
``\\r`` before it) is not part of the body. RocketMQ refuses an empty body: an empty line is skipped, and the
count of skipped lines is reported on stderr at the end, with the count of messages sent.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rocketmq_py.cli_connection import add_connection_options, connection_options, interruptible, report_failure

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


def split_chunk(pending: bytes, data: bytes) -> tuple[list[bytes], bytes]:
    """The whole lines of ``pending + data`` without their ``\n`` (or ``\r\n``), and the unfinished rest."""
    *lines, rest = (pending + data).split(b"\n")
    return [line[:-1] if line.endswith(b"\r") else line for line in lines], rest


class LineReader:
    """Reads a file descriptor in a thread and hands the loop whole lines, as many as one read returned: a
    pipe comes in large chunks (sent in full batches), a terminal line by line (each sent at once)."""

    CHUNK_BYTES = 1 << 16

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[list[bytes] | BaseException | None] = asyncio.Queue()
        self._stopped = False
        threading.Thread(target=self._read, name="rocketmq-py-produce-stdin", daemon=True).start()

    def _read(self) -> None:
        pending = b""
        try:
            while data := os.read(self.fd, self.CHUNK_BYTES):
                lines, pending = split_chunk(pending, data)
                if lines:
                    self._loop.call_soon_threadsafe(self._queue.put_nowait, lines)
            if pending:
                self._loop.call_soon_threadsafe(self._queue.put_nowait, split_chunk(pending, b"\n")[0])
            self._loop.call_soon_threadsafe(self._queue.put_nowait, None)
        except OSError as error:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, error)

    async def next_lines(self) -> list[bytes] | None:
        """The next lines read; None at the end of the input, or once :meth:`stop` was called."""
        lines = None if self._stopped else await self._queue.get()
        if self._stopped:
            return None
        if isinstance(lines, BaseException):
            raise lines
        return lines

    def waiting(self) -> bool:
        """Whether more lines are read already (else whatever is batched should go now)."""
        return not self._stopped and not self._queue.empty()

    def stop(self) -> None:
        """End the input now: the lines handed out already are still sent, those read after are not."""
        self._stopped = True
        self._queue.put_nowait(None)  # wakes a next_lines() that waits


@dataclass
class Progress:
    sent: int = 0
    skipped: int = 0


def _run_produce(args: argparse.Namespace) -> int:
    from rocketmq_py.errors import RocketMQError

    progress = Progress()
    try:
        if args.batch_size < 1:
            raise ValueError(f"--batch-size must be at least 1, not {args.batch_size}")
        properties = parse_properties(args.properties)
        if args.file:
            with open(args.file, "rb") as stream:
                interrupted = asyncio.run(produce(args, stream.fileno(), properties, progress))
        else:
            interrupted = asyncio.run(produce(args, sys.stdin.buffer.fileno(), properties, progress))
    except (RocketMQError, OSError, ValueError) as error:
        return report_failure("produce", error)
    note = f", skipped {progress.skipped} empty line(s): RocketMQ refuses empty bodies" if progress.skipped else ""
    print(f"sent {progress.sent} message(s) to {args.topic}{note}{' (interrupted)' if interrupted else ''}",
          file=sys.stderr)
    return 130 if interrupted else 0


async def produce(args: argparse.Namespace, fd: int, properties: dict[str, str], progress: Progress) -> bool:
    """Send every non-empty line read from ``fd``, counting in ``progress``; whether SIGINT or SIGTERM
    stopped it first (what was read before was sent)."""
    # lazy: see rocketmq_py/_lazy.py
    from rocketmq_py.client.producer.core import AsyncProducer

    async with AsyncProducer(args.group, **connection_options(args)) as producer:
        reader = LineReader(fd)
        with interruptible(reader.stop) as interrupt:
            await _send_lines(args, reader, properties, producer, progress)
    return interrupt.interrupted


async def _send_lines(args: argparse.Namespace, reader: LineReader, properties: dict[str, str],
                      producer: AsyncProducer, progress: Progress) -> None:
    # lazy: see rocketmq_py/_lazy.py
    from rocketmq_py.common.message import Message

    batch: list[Message] = []
    batch_bytes = 0
    while (lines := await reader.next_lines()) is not None:
        for line in lines:
            if not line:
                progress.skipped += 1
                continue
            message = Message(args.topic, line, tags=args.tags, keys=args.keys, properties=properties)
            if args.delay:
                message.delay_time_level = args.delay
                await producer.send(message)
                progress.sent += 1
                continue
            size = len(line) + BATCH_ITEM_OVERHEAD + sum(len(k) + len(v) + 2 for k, v in message.properties.items())
            if batch and (len(batch) >= args.batch_size or batch_bytes + size > MAX_BATCH_BYTES):
                progress.sent += await _send(producer, batch)
                batch, batch_bytes = [], 0
            batch.append(message)
            batch_bytes += size
        if batch and not reader.waiting():
            progress.sent += await _send(producer, batch)
            batch, batch_bytes = [], 0
    if batch:
        progress.sent += await _send(producer, batch)


async def _send(producer: AsyncProducer, batch: list[Message]) -> int:
    await (producer.send(batch[0]) if len(batch) == 1 else producer.send_batch(batch))
    return len(batch)
