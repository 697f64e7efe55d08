"""A batch of messages sent as one request (Java's MessageBatch)."""
from __future__ import annotations

from typing import Sequence

from rocketmq_py.common.message import Message, MessageConst


class BatchMessage(Message):
    """The messages of one topic encoded as a SEND_BATCH_MESSAGE body.

    Each item keeps its own properties (its UNIQ_KEY among them); the batch
    itself carries only WAIT. ``msg_ids`` joins the items' ids with commas,
    as Java's SendResult does for a batch.
    """

    __slots__ = ("messages",)

    def __init__(self, messages: Sequence[Message]) -> None:
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py import codec

        first = messages[0]
        super().__init__(first.topic, b"", wait_store_msg_ok=first.wait_store_msg_ok)
        self.messages = list(messages)
        self.body = codec.encode_batch((m.flag, m.body, m.properties) for m in self.messages)

    @classmethod
    def from_messages(cls, messages: Sequence[Message]) -> "BatchMessage":
        return cls(messages)

    @property
    def msg_ids(self) -> str:
        return ",".join(m.properties.get(MessageConst.UNIQ_CLIENT_MESSAGE_ID_KEYIDX, "") for m in self.messages)
