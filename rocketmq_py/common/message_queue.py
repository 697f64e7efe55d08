"""A message queue: topic, broker name and queue id (Java's common/message/MessageQueue)."""
from __future__ import annotations

from dataclasses import dataclass

from rocketmq_py.common.json_shape import INT

#: The types of Java's MessageQueue, for :mod:`rocketmq_py.common.json_shape`.
MESSAGE_QUEUE_SHAPE = {"topic": str, "brokerName": str, "queueId": INT}


@dataclass(frozen=True, order=True)
class MessageQueue:
    topic: str
    broker_name: str
    queue_id: int

    def to_json(self) -> dict:
        return {"brokerName": self.broker_name, "queueId": self.queue_id, "topic": self.topic}

    @classmethod
    def from_json(cls, data: dict) -> "MessageQueue":
        return cls(data.get("topic", ""), data.get("brokerName", ""), int(data.get("queueId", 0)))

    def __str__(self) -> str:
        return f"MessageQueue [topic={self.topic}, brokerName={self.broker_name}, queueId={self.queue_id}]"
