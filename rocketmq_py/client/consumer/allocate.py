"""Queue allocation strategies (Java's client/consumer/rebalance/*).

Every consumer of a group sorts the queues and the client ids the same way and
runs the same strategy, so each computes its own share without talking to the
others. The results match Java's for the same input, which is what lets Python
and Java consumers share a group.
"""
from __future__ import annotations

import abc
import bisect
import logging
from typing import TYPE_CHECKING, Callable, Iterable, Sequence

from rocketmq_py.errors import InvalidArgumentError

if TYPE_CHECKING:
    from rocketmq_py.common.message_queue import MessageQueue

_log = logging.getLogger(__name__)


class AllocateMessageQueueStrategy(abc.ABC):
    """Picks the queues of ``current_cid`` out of ``mq_all`` (sorted) for the consumers ``cid_all`` (sorted)."""

    name = ""

    @abc.abstractmethod
    def allocate(self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue],
                 cid_all: Sequence[str]) -> list[MessageQueue]:
        """The queues of ``current_cid`` out of ``mq_all``, given every consumer id ``cid_all``."""
        ...

    def check(self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue],
              cid_all: Sequence[str]) -> bool:
        """Whether ``current_cid`` is among ``cid_all`` (InvalidArgumentError on empty input)."""
        if not current_cid:
            raise InvalidArgumentError("currentCID is empty")
        if not mq_all:
            raise InvalidArgumentError("mqAll is null or mqAll empty")
        if not cid_all:
            raise InvalidArgumentError("cidAll is null or cidAll empty")
        if current_cid not in cid_all:
            _log.info("[BUG] consumer group %s: client id %s is not in the broker's list %s",
                      consumer_group, current_cid, list(cid_all))
            return False
        return True


class AllocateMessageQueueAveragely(AllocateMessageQueueStrategy):
    """Consecutive blocks: with 8 queues and 3 consumers, 3 + 3 + 2."""

    name = "AVG"

    def allocate(self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue],
                 cid_all: Sequence[str]) -> list[MessageQueue]:
        if not self.check(consumer_group, current_cid, mq_all, cid_all):
            return []
        index = list(cid_all).index(current_cid)
        total, consumers = len(mq_all), len(cid_all)
        mod = total % consumers
        if total <= consumers:
            average = 1
        elif mod > 0 and index < mod:
            average = total // consumers + 1
        else:
            average = total // consumers
        start = index * average if mod > 0 and index < mod else index * average + mod
        count = min(average, total - start)
        return [mq_all[(start + i) % total] for i in range(count)]


class AllocateMessageQueueAveragelyByCircle(AllocateMessageQueueStrategy):
    """Round robin: consumer i takes queues i, i + n, i + 2n, ..."""

    name = "AVG_BY_CIRCLE"

    def allocate(self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue],
                 cid_all: Sequence[str]) -> list[MessageQueue]:
        if not self.check(consumer_group, current_cid, mq_all, cid_all):
            return []
        index = list(cid_all).index(current_cid)
        return [mq_all[i] for i in range(index, len(mq_all)) if i % len(cid_all) == index]


class AllocateMessageQueueByConfig(AllocateMessageQueueStrategy):
    """A fixed list of queues, whatever the other consumers do."""

    name = "CONFIG"

    def __init__(self, message_queues: Iterable[MessageQueue]) -> None:
        self.message_queues = list(message_queues)

    def allocate(self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue],
                 cid_all: Sequence[str]) -> list[MessageQueue]:
        return list(self.message_queues)


class AllocateMessageQueueByMachineRoom(AllocateMessageQueueStrategy):
    """Only the queues of brokers named ``<room>@<name>`` whose room is in ``consumer_idcs``, spread evenly."""

    name = "MACHINE_ROOM"

    def __init__(self, consumer_idcs: Iterable[str]) -> None:
        self.consumer_idcs = set(consumer_idcs)

    def allocate(self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue],
                 cid_all: Sequence[str]) -> list[MessageQueue]:
        if not self.check(consumer_group, current_cid, mq_all, cid_all):
            return []
        index = list(cid_all).index(current_cid)
        in_rooms = []
        for queue in mq_all:
            parts = queue.broker_name.split("@")
            if len(parts) == 2 and parts[0] in self.consumer_idcs:
                in_rooms.append(queue)
        per_consumer, rest = divmod(len(in_rooms), len(cid_all))
        result = in_rooms[per_consumer * index:per_consumer * index + per_consumer]
        if rest > index:
            result.append(in_rooms[index + per_consumer * len(cid_all)])
        return result


def md5_hash(key: str) -> int:
    """Java's ConsistentHashRouter.MD5Hash: the first four MD5 bytes as an unsigned number."""
    import hashlib  # lazy: only the consistent-hash strategy needs it (see rocketmq_py/_lazy.py)

    return int.from_bytes(hashlib.md5(key.encode("utf-8")).digest()[:4], "big")


class AllocateMessageQueueConsistentHash(AllocateMessageQueueStrategy):
    """A hash ring of ``virtual_node_count`` points per consumer; a queue goes to the next point of its hash."""

    name = "CONSISTENT_HASH"

    def __init__(self, virtual_node_count: int = 10, hash_function: Callable[[str], int] | None = None) -> None:
        if virtual_node_count < 0:
            raise InvalidArgumentError(f"illegal virtual_node_count: {virtual_node_count}")
        self.virtual_node_count = virtual_node_count
        self.hash_function = hash_function or md5_hash

    def allocate(self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue],
                 cid_all: Sequence[str]) -> list[MessageQueue]:
        if not self.check(consumer_group, current_cid, mq_all, cid_all):
            return []
        ring: dict[int, str] = {}
        for cid in cid_all:
            for replica in range(self.virtual_node_count):
                ring[self.hash_function(f"{cid}-{replica}")] = cid
        if not ring:
            return []
        points = sorted(ring)
        result = []
        for queue in mq_all:
            position = bisect.bisect_left(points, self.hash_function(str(queue)))
            owner = ring[points[position % len(points)]]
            if owner == current_cid:
                result.append(queue)
        return result


class AllocateMachineRoomNearby(AllocateMessageQueueStrategy):
    """Queues go to consumers of the same machine room (by ``strategy``); rooms without consumers are shared by all.

    ``broker_room(queue)`` and ``consumer_room(client_id)`` name the room of a queue's broker and of a consumer.
    """

    def __init__(self, strategy: AllocateMessageQueueStrategy, broker_room: Callable[[MessageQueue], str],
                 consumer_room: Callable[[str], str]) -> None:
        self.strategy = strategy
        self.broker_room = broker_room
        self.consumer_room = consumer_room
        self.name = f"MACHINE_ROOM_NEARBY-{strategy.name}"

    def allocate(self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue],
                 cid_all: Sequence[str]) -> list[MessageQueue]:
        if not self.check(consumer_group, current_cid, mq_all, cid_all):
            return []
        queues_by_room: dict[str, list[MessageQueue]] = {}
        for queue in mq_all:
            room = self.broker_room(queue)
            if not room:
                raise InvalidArgumentError(f"machine room is empty for {queue}")
            queues_by_room.setdefault(room, []).append(queue)
        consumers_by_room: dict[str, list[str]] = {}
        for cid in cid_all:
            room = self.consumer_room(cid)
            if not room:
                raise InvalidArgumentError(f"machine room is empty for consumer {cid}")
            consumers_by_room.setdefault(room, []).append(cid)
        current_room = self.consumer_room(current_cid)
        result = []
        local = queues_by_room.pop(current_room, None)
        if local:
            result += self.strategy.allocate(consumer_group, current_cid, local, consumers_by_room[current_room])
        for room in sorted(queues_by_room):
            if room not in consumers_by_room:
                result += self.strategy.allocate(consumer_group, current_cid, queues_by_room[room], cid_all)
        return result


_BY_NAME: dict[str, Callable[[], AllocateMessageQueueStrategy]] = {
    "AVG": AllocateMessageQueueAveragely,
    "AVERAGELY": AllocateMessageQueueAveragely,
    "AVG_BY_CIRCLE": AllocateMessageQueueAveragelyByCircle,
    "AVERAGELY_BY_CIRCLE": AllocateMessageQueueAveragelyByCircle,
    "CONSISTENT_HASH": AllocateMessageQueueConsistentHash,
}


def resolve_strategy(strategy: "AllocateMessageQueueStrategy | str | None") -> AllocateMessageQueueStrategy:
    """A strategy object from itself or a name (``"AVG"``, ``"AVG_BY_CIRCLE"``, ``"CONSISTENT_HASH"``)."""
    if strategy is None:
        return AllocateMessageQueueAveragely()
    if isinstance(strategy, AllocateMessageQueueStrategy):
        return strategy
    if isinstance(strategy, str):
        factory = _BY_NAME.get(strategy.strip().upper())
        if factory is not None:
            return factory()
        if strategy.strip().upper() in ("CONFIG", "MACHINE_ROOM", "MACHINE_ROOM_NEARBY"):
            raise InvalidArgumentError(
                f"the strategy {strategy!r} needs parameters: pass an AllocateMessageQueueByConfig(queues), "
                "AllocateMessageQueueByMachineRoom(rooms) or AllocateMachineRoomNearby(...) object"
            )
    raise InvalidArgumentError(
        f"unknown allocation strategy {strategy!r}: use 'AVG', 'AVG_BY_CIRCLE', 'CONSISTENT_HASH' "
        "or an AllocateMessageQueueStrategy object"
    )
