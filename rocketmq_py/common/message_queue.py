"""A message queue: topic, broker name and queue id (Java's common/message/MessageQueue)."""
from __future__ import annotations

from typing import Any

from dataclasses import dataclass

from rocketmq_py.common.json_shape import INT

#: The types of Java's MessageQueue, for :mod:`rocketmq_py.common.json_shape`.
MESSAGE_QUEUE_SHAPE = {"topic": str, "brokerName": str, "queueId": INT}


@dataclass(frozen=True, order=True)
class MessageQueue:
    """One queue of a topic on one broker: (topic, broker name, queue id)."""

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
