"""Consumer offsets (Java's client/consumer/store: OffsetStore, RemoteBrokerOffsetStore, LocalFileOffsetStore).

Clustering consumers keep their offsets on the broker, so every consumer of
the group (Java or Python) continues where another stopped. Broadcasting
consumers keep them in ``<dir>/<clientId>/<group>/offsets.json``, written as
Java's OffsetSerializeWrapper (fastjson, MessageQueue objects as keys), with a
``.bak`` copy of the previous content; ``<dir>`` is ``~/.rocketmq_offsets``
unless ``rocketmq.client.localOffsetStoreDir`` (here ``ROCKETMQ_CLIENT_LOCAL_OFFSET_STORE_DIR``) says otherwise.
"""
from __future__ import annotations

import abc
import enum
import logging
import os
from typing import TYPE_CHECKING, Iterable

from rocketmq_py.common.combining_lock import CombiningLock
from rocketmq_py.errors import BrokerResponseError, ClientError, RocketMQError

if TYPE_CHECKING:
    from pathlib import Path
    from rocketmq_py.client.instance import MQClientInstance
    from rocketmq_py.common.message_queue import MessageQueue

_log = logging.getLogger(__name__)

OFFSET_TIMEOUT_MS = 5000
#: No offset is known.
NO_OFFSET = -1
#: The offset could not be read (the broker did not answer).
OFFSET_READ_FAILED = -2


class ReadOffsetType(enum.Enum):
    READ_FROM_MEMORY = "READ_FROM_MEMORY"
    READ_FROM_STORE = "READ_FROM_STORE"
    MEMORY_FIRST_THEN_STORE = "MEMORY_FIRST_THEN_STORE"


class OffsetStore(abc.ABC):
    """The next offset to consume, per queue, in memory and in its store."""

    def __init__(self) -> None:
        self._offsets: dict[MessageQueue, int] = {}
        # Consume threads move offsets after every message while the event loop reads and persists them; they
        # must never wait for one another here (see combining_lock), so every read holds _updates.
        self._updates = CombiningLock()

    async def load(self) -> None:
        """Read what the store already holds (the local file; nothing for the broker store)."""

    def update_offset(self, queue: MessageQueue, offset: int, increase_only: bool) -> None:
        self._updates.record(self._update, queue, offset, increase_only)

    def _update(self, queue: MessageQueue, offset: int, increase_only: bool) -> None:
        if increase_only:
            old = self._offsets.get(queue)
            if old is not None and offset <= old:
                return
        self._offsets[queue] = offset

    def read_offset_from_memory(self, queue: MessageQueue) -> int:
        offset = self._offset_in_memory(queue)
        return NO_OFFSET if offset is None else offset

    def peek_offset(self, queue: MessageQueue) -> int:
        """The offset in memory as it is now, or -1: without waiting for the lock, for the commit offset each pull
        carries (as Java reads its concurrent map), so that the event loop never waits for a consume thread here.
        An update recorded but not yet made (its thread holds the lock) is not seen: the offset may lag a moment,
        which a pull's commit offset may, as it does in Java."""
        offset = self._offsets.get(queue)
        return NO_OFFSET if offset is None else offset

    def _offset_in_memory(self, queue: MessageQueue) -> int | None:
        with self._updates:
            return self._offsets.get(queue)

    async def read_offset(self, queue: MessageQueue, kind: ReadOffsetType) -> int:
        """The offset, or -1 when none is known, or -2 when the store could not be read."""
        if kind is not ReadOffsetType.READ_FROM_STORE:
            offset = self._offset_in_memory(queue)
            if offset is not None:
                return offset
            if kind is ReadOffsetType.READ_FROM_MEMORY:
                return NO_OFFSET
        return await self._read_from_store(queue)

    @abc.abstractmethod
    async def _read_from_store(self, queue: MessageQueue) -> int:
        ...

    @abc.abstractmethod
    async def persist_all(self, queues: Iterable[MessageQueue], oneway: bool = True) -> None:
        """Write the offsets of ``queues``; forget the offsets of every other queue."""

    @abc.abstractmethod
    async def persist(self, queue: MessageQueue) -> None:
        ...

    def remove_offset(self, queue: MessageQueue) -> None:
        with self._updates:
            self._offsets.pop(queue, None)

    def clone_offset_table(self, topic: str | None = None) -> dict[MessageQueue, int]:
        with self._updates:
            return {queue: offset for queue, offset in self._offsets.items() if not topic or queue.topic == topic}


class RemoteBrokerOffsetStore(OffsetStore):
    """Offsets on the broker, committed with UPDATE_CONSUMER_OFFSET."""

    def __init__(self, instance: "MQClientInstance", group: str) -> None:
        super().__init__()
        self.instance = instance
        self.group = group

    async def _read_from_store(self, queue: MessageQueue) -> int:
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.client.consumer.brokers import broker_for_queue
        from rocketmq_py.common.headers.offset import QueryConsumerOffsetRequestHeader

        try:
            broker = await broker_for_queue(self.instance, queue)
            header = QueryConsumerOffsetRequestHeader(self.group, queue.topic, queue.queue_id, queue.broker_name)
            offset = await self.instance.api.query_consumer_offset(broker.addr, header, OFFSET_TIMEOUT_MS)
        except BrokerResponseError:
            return NO_OFFSET
        except (RocketMQError, OSError) as error:
            _log.warning("reading the offset of %s for %s failed: %s", queue, self.group, error)
            return OFFSET_READ_FAILED
        self.update_offset(queue, offset, False)
        return offset

    async def persist_all(self, queues: Iterable[MessageQueue], oneway: bool = True) -> None:
        wanted = set(queues)
        if not wanted:
            return
        for queue, offset in self.clone_offset_table().items():
            if queue in wanted:
                try:
                    await self.update_consume_offset_to_broker(queue, offset, oneway)
                except (RocketMQError, OSError) as error:
                    _log.warning("committing offset %d of %s for %s failed: %s", offset, queue, self.group, error)
            else:
                self.remove_offset(queue)

    async def persist(self, queue: MessageQueue) -> None:
        offset = self._offset_in_memory(queue)
        if offset is None:
            return
        try:
            await self.update_consume_offset_to_broker(queue, offset, oneway=False)
        except (RocketMQError, OSError) as error:
            _log.warning("committing offset %d of %s for %s failed: %s", offset, queue, self.group, error)

    async def update_consume_offset_to_broker(self, queue: MessageQueue, offset: int, oneway: bool) -> None:
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.client.consumer.brokers import broker_for_queue
        from rocketmq_py.common.headers.offset import UpdateConsumerOffsetRequestHeader

        broker = await broker_for_queue(self.instance, queue)
        header = UpdateConsumerOffsetRequestHeader(self.group, queue.topic, queue.queue_id, offset, queue.broker_name)
        if oneway:
            await self.instance.api.update_consumer_offset_oneway(broker.addr, header, OFFSET_TIMEOUT_MS)
        else:
            await self.instance.api.update_consumer_offset(broker.addr, header, OFFSET_TIMEOUT_MS)


def local_offset_store_dir() -> Path:
    # lazy: see rocketmq_py/_lazy.py
    from pathlib import Path

    configured = os.environ.get("ROCKETMQ_CLIENT_LOCAL_OFFSET_STORE_DIR")
    return Path(configured) if configured else Path.home() / ".rocketmq_offsets"


def read_offset_file(path: Path) -> dict[MessageQueue, int] | None:
    """The table of an offsets.json (falling back to ``.bak``), or None when neither exists."""
    # lazy: see rocketmq_py/_lazy.py
    from rocketmq_py import codec
    from rocketmq_py.common.consumer_body import decode_queue_table

    for candidate in (path, path.with_name(path.name + ".bak")):
        try:
            text = candidate.read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        if not text:
            continue
        try:
            data = codec.json_loads(text)
        except (ValueError, RocketMQError) as error:
            _log.warning("the offset file %s is not valid JSON (%s); trying the backup", candidate, error)
            continue
        if isinstance(data, dict):
            return decode_queue_table(data.get("offsetTable"))
    return None


def offset_file_text(table: dict[MessageQueue, int]) -> str:
    """OffsetSerializeWrapper.toJson(true) as fastjson writes it: tab-indented, each MessageQueue key an
    indented object of its own (queues in sorted order, where Java's follow its HashMap)."""
    # lazy: see rocketmq_py/_lazy.py
    from rocketmq_py import codec

    if not table:
        return '{\n\t"offsetTable":{}\n}'
    entries = []
    for queue, offset in sorted(table.items()):
        entries.append(
            '{\n\t\t\t"brokerName":' + codec.json_dumps(queue.broker_name)
            + ',\n\t\t\t"queueId":' + str(queue.queue_id)
            + ',\n\t\t\t"topic":' + codec.json_dumps(queue.topic)
            + "\n\t\t}:" + str(offset)
        )
    return '{\n\t"offsetTable":{' + ",".join(entries) + "\n\t}\n}"


def write_offset_file(path: Path, table: dict[MessageQueue, int]) -> None:
    """Java's MixAll.string2File: write ``.tmp``, copy the old content to ``.bak``, then rename over the file."""
    text = offset_file_text(table)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    try:
        previous = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        previous = None
    if previous is not None:
        path.with_name(path.name + ".bak").write_text(previous, encoding="utf-8")
    os.replace(temporary, path)


class LocalFileOffsetStore(OffsetStore):
    """Offsets of a broadcasting consumer, in Java's local file layout."""

    def __init__(self, client_id: str, group: str, base_dir: Path | None = None) -> None:
        super().__init__()
        self.group = group
        self.path = (base_dir or local_offset_store_dir()) / client_id / group / "offsets.json"

    async def load(self) -> None:
        try:
            table = read_offset_file(self.path)
        except OSError as error:
            raise ClientError(f"cannot read the offset file {self.path}: {error}") from error
        for queue, offset in (table or {}).items():
            self.update_offset(queue, offset, False)

    async def _read_from_store(self, queue: MessageQueue) -> int:
        try:
            table = read_offset_file(self.path)
        except OSError:
            return NO_OFFSET
        if table and queue in table:
            self.update_offset(queue, table[queue], False)
            return table[queue]
        return NO_OFFSET

    def _write(self, updates: dict[MessageQueue, int]) -> None:
        try:
            table = read_offset_file(self.path) or {}
            table.update(updates)
            write_offset_file(self.path, table)
        except OSError as error:
            _log.warning("writing the offset file %s failed: %s", self.path, error)

    async def persist_all(self, queues: Iterable[MessageQueue], oneway: bool = True) -> None:
        wanted = set(queues)
        if wanted:
            self._write({queue: offset for queue, offset in self.clone_offset_table().items() if queue in wanted})

    async def persist(self, queue: MessageQueue) -> None:
        offset = self._offset_in_memory(queue)
        if offset is not None:
            self._write({queue: offset})
