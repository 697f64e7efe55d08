"""Writing Arrow record batches to RocketMQ: the work of the ``rocketmq`` sink on an executor.

Columns: ``body`` (binary or string) is required; ``topic``, ``tags``, ``keys`` (strings) and
``properties`` (map<string,string>) are optional. The ``topic`` option overrides the column.
Rows are sent in batch messages with several sends in flight. With a sharding key column,
each key's rows go to the queue its hash picks (as Java's SelectMessageQueueByHash), and the
sends to one queue are sequential, so each key keeps its order. Delivery is at least once:
a task that fails after some sends is retried by Spark and sends them again.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Iterator

import asyncio
import itertools
import logging
import os
import threading
from dataclasses import dataclass

from rocketmq_py.common.message import Message
from rocketmq_py.errors import SystemBusyError
from rocketmq_py.spark import tasklog
from rocketmq_py.spark.options import InvalidOptionError, SinkOptions
from rocketmq_py.spark.runtime import process_loop

if TYPE_CHECKING:
    import pyarrow as pa

    from rocketmq_py.client.producer import AsyncProducer
    from rocketmq_py.common.message_queue import MessageQueue
    from rocketmq_py.spark.options import ClientSettings

OPTIONAL_STRING_COLUMNS = ("topic", "tags", "keys")
KNOWN_COLUMNS = frozenset({"body", "topic", "tags", "keys", "properties"})
#: Messages per batch send and bytes per batch (well under the broker's 4 MiB).
BATCH_MESSAGES = 64
BATCH_BYTES = 1024 * 1024


@dataclass(frozen=True)
class ColumnPlan:
    """Which input columns feed which message field (checked on the driver, shipped to executors)."""

    has_topic: bool
    has_tags: bool
    has_keys: bool
    has_properties: bool
    sharding_key: str | None


def check_write_schema(fields: list[tuple[str, str]], options: SinkOptions) -> ColumnPlan:
    """``fields`` are (name, Spark simpleString type); raise before anything is sent when they do not fit."""
    types = {name: kind for name, kind in fields}
    if "body" not in types:
        raise InvalidOptionError(
            f"a rocketmq sink needs a 'body' column (binary or string); the DataFrame has {sorted(types)}"
        )
    if types["body"] not in ("binary", "string"):
        raise InvalidOptionError(f"column body must be binary or string, not {types['body']}")
    for name in OPTIONAL_STRING_COLUMNS:
        if name in types and types[name] != "string":
            raise InvalidOptionError(f"column {name} must be a string, not {types[name]}")
    if "properties" in types and types["properties"] != "map<string,string>":
        raise InvalidOptionError(f"column properties must be map<string,string>, not {types['properties']}")
    if options.topic is None and "topic" not in types:
        raise InvalidOptionError("no topic: set option topic or give the DataFrame a topic column")
    if options.sharding_key is not None and options.sharding_key not in types:
        raise InvalidOptionError(f"option shardingKey names column {options.sharding_key!r}, "
                                 f"which the DataFrame does not have ({sorted(types)})")
    return ColumnPlan("topic" in types, "tags" in types, "keys" in types, "properties" in types,
                      options.sharding_key)


#: Waits before sending a batch again that the broker refused with SYSTEM_BUSY (its flow control).
BUSY_RETRY_DELAYS_S = (0.2, 0.5, 1.0, 2.0, 4.0)

_log = logging.getLogger(__name__)


def _busy(error: BaseException) -> bool:
    return isinstance(error, SystemBusyError) or isinstance(error.__cause__, SystemBusyError)


#: (client settings, producer group, send timeout) -> the producer of this worker process for them
_PRODUCERS: dict[tuple[ClientSettings, str, int], _Producer] = {}
_INSTANCES = itertools.count()
_PRODUCERS_LOCK = threading.Lock()


class _Producer:
    """An AsyncProducer on the process loop, kept for the life of the worker process."""

    def __init__(self, options: SinkOptions, instance_name: str) -> None:
        from rocketmq_py.client.producer import AsyncProducer

        self.background = process_loop()
        self.pid = os.getpid()
        client = options.client

        async def started() -> AsyncProducer:  # made on the loop that will run it
            producer = AsyncProducer(
                options.producer_group, namesrv_addr=client.namesrv_addr, send_msg_timeout=options.send_timeout_ms,
                instance_name=instance_name, use_tls=client.use_tls, access_key=client.access_key,
                secret_key=client.secret_key, security_token=client.security_token,
            )
            await producer.start()
            return producer

        self.producer = self.background.run(started())


def producer_for(options: SinkOptions) -> _Producer:
    key = (options.client, options.producer_group, options.send_timeout_ms)
    with _PRODUCERS_LOCK:
        found = _PRODUCERS.get(key)
        # A forked worker makes its own: the parent's producer's connections are not its to use.
        if found is None or found.pid != os.getpid():
            # A client instance takes a producer group once: producers of other settings (TLS, credentials,
            # name server) in this process get instances of their own.
            found = _PRODUCERS[key] = _Producer(options, f"spark-{os.getpid()}-{next(_INSTANCES)}")
        return found


def messages_of(batch: pa.RecordBatch, plan: ColumnPlan,
                options: SinkOptions) -> tuple[list[Message], list[Any] | None]:
    """The batch's rows as messages, and their sharding keys (None without a sharding key)."""
    columns = {name: batch.column(name).to_pylist() for name in batch.schema.names}
    bodies = columns["body"]
    count = len(bodies)
    topics = columns["topic"] if plan.has_topic and options.topic is None else [options.topic] * count
    tags = columns.get("tags") if plan.has_tags else None
    keys = columns.get("keys") if plan.has_keys else None
    props = columns.get("properties") if plan.has_properties else None
    messages: list[Message] = []
    for i in range(count):
        body = bodies[i]
        if body is None:
            raise ValueError("a row has a null body: a message needs a body")
        if isinstance(body, str):
            body = body.encode()
        topic = topics[i]
        if not topic:
            raise ValueError("a row has a null topic: set option topic or fill the topic column")
        properties = dict(props[i]) if props is not None and props[i] else None
        messages.append(Message(topic, body, tags=tags[i] if tags else None, keys=keys[i] if keys else None,
                                properties=properties))
    shard = columns[plan.sharding_key] if plan.sharding_key else None
    return messages, shard


def _chunks(messages: list[Message]) -> Iterator[list[Message]]:
    """Consecutive runs of one topic, at most BATCH_MESSAGES and about BATCH_BYTES each."""
    run: list[Message] = []
    size = 0
    for message in messages:
        if run and (message.topic != run[0].topic or len(run) >= BATCH_MESSAGES
                    or size + len(message.body) > BATCH_BYTES):
            yield run
            run, size = [], 0
        run.append(message)
        size += len(message.body)
    if run:
        yield run


class _Sender:
    """The sends of one task: its coroutines run on the process loop, fed batch by batch by the task's thread."""

    def __init__(self, producer: AsyncProducer, options: SinkOptions) -> None:
        from rocketmq_py.client.producer.selector import SelectMessageQueueByHash

        self.producer = producer
        self.limit = max(1, options.max_in_flight // BATCH_MESSAGES)
        self.pending: set[asyncio.Future[Any]] = set()
        self.errors: list[BaseException] = []
        #: the last send to each queue chosen by a sharding key, which the next send to it waits for
        self.chains: dict[MessageQueue, asyncio.Future[Any]] = {}
        self.selector = SelectMessageQueueByHash()

    async def _send_after(self, previous: asyncio.Future[Any] | None, run: list[Message],
                          queue: MessageQueue | None) -> None:
        if previous is not None:
            await asyncio.shield(previous)
        for delay_s in BUSY_RETRY_DELAYS_S:
            try:
                await self.producer.send(run if len(run) > 1 else run[0], queue)
                return
            except Exception as error:  # noqa: BLE001 - only the broker's flow control is retried
                if not _busy(error):
                    raise
                # The broker dropped the request unread (flow control): sending again adds no duplicate,
                # where failing the task would make Spark send the task's earlier batches a second time.
                _log.info("broker busy (%s); sending %d message(s) again in %.1f s", error, len(run), delay_s)
                await asyncio.sleep(delay_s)
        await self.producer.send(run if len(run) > 1 else run[0], queue)

    def _collect(self, done: set[asyncio.Future[Any]]) -> None:
        for task in done:
            error = task.exception()
            if error is not None:
                self.errors.append(error)

    async def _make_room(self) -> None:
        while len(self.pending) >= self.limit:
            done, self.pending = await asyncio.wait(self.pending, return_when=asyncio.FIRST_COMPLETED)
            self._collect(done)
        if self.errors:
            raise RuntimeError(f"a batch send of this task failed: {self.errors[0]!r}") from self.errors[0]

    async def add(self, messages: list[Message], shard: list[Any] | None) -> None:
        """Start sending ``messages``; returns when they are all in flight."""
        groups: list[tuple[MessageQueue | None, list[Message]]]
        if shard is None:
            groups = [(None, messages)]
        else:
            by_queue: dict[MessageQueue, list[Message]] = {}
            for message, key in zip(messages, shard):
                queues = await self.producer.fetch_publish_message_queues(message.topic)
                chosen = self.selector.select(queues, message, "" if key is None else key)
                by_queue.setdefault(chosen, []).append(message)
            groups = list(by_queue.items())
        for queue, queued in groups:
            for run in _chunks(queued):
                await self._make_room()
                # Sends to one chosen queue go one after the other, so a sharding key keeps its order.
                task = asyncio.ensure_future(self._send_after(self.chains.get(queue) if queue else None, run, queue))
                if queue is not None:
                    self.chains[queue] = task
                self.pending.add(task)

    async def finish(self) -> None:
        """Wait for every send in flight; raise if any failed."""
        if self.pending:
            done, self.pending = await asyncio.wait(self.pending)
            self._collect(done)
        if self.errors:
            raise RuntimeError(f"{len(self.errors)} batch send(s) of this task failed; the first: "
                               f"{self.errors[0]!r}") from self.errors[0]

    async def abandon(self) -> None:
        for task in self.pending:
            task.cancel()
        await asyncio.gather(*self.pending, return_exceptions=True)


def write_batches(batches: Iterable[pa.RecordBatch], plan: ColumnPlan, options: SinkOptions) -> int:
    """Send every row of the Arrow batches; the number of messages sent."""
    holder = producer_for(options)
    run = holder.background.run
    sender = _Sender(holder.producer, options)
    sent = 0
    try:
        # Spark's input iterator is read here, in the task's thread; only the sends run on the loop.
        for batch in batches:
            messages, shard = messages_of(batch, plan, options)
            run(sender.add(messages, shard))
            sent += len(messages)
        run(sender.finish())
        tasklog.record("write", messages=sent)
    except BaseException:
        run(sender.abandon())
        raise
    return sent
