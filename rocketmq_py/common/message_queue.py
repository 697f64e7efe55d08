"""A message queue: topic, broker name and queue id (Java's common/message/MessageQueue)."""
from __future__ import annotations

from typing import Any, NamedTuple

from rocketmq_py.common.json_shape import INT

#: The types of Java's MessageQueue, for :mod:`rocketmq_py.common.json_shape`.
MESSAGE_QUEUE_SHAPE = {"topic": str, "brokerName": str, "queueId": INT}


class MessageQueue(NamedTuple):
    """One queue of a topic on one broker: (topic, broker name, queue id).

    Immutable, equal and ordered by its fields, as Java's. A named tuple rather than a frozen dataclass: a
    consumer looks its queues up in dicts for every pull and every consumed batch (offsets, process queues,
    locks), and a tuple's hash and equality run in C where a dataclass's ``__hash__`` and ``__eq__`` are
    Python calls.
    """

    topic: str
    broker_name: str
    queue_id: int

    def to_json(self) -> dict[str, Any]:
        """The JSON object Java writes for a MessageQueue."""
        return {"brokerName": self.broker_name, "queueId": self.queue_id, "topic": self.topic}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "MessageQueue":
        """A MessageQueue from Java's JSON object."""
        return cls(data.get("topic", ""), data.get("brokerName", ""), int(data.get("queueId", 0)))

    def __str__(self) -> str:
        return f"MessageQueue [topic={self.topic}, brokerName={self.broker_name}, queueId={self.queue_id}]"
