"""Messages as producers build them and as consumers receive them.

Ports Java's ``common/message/Message.java``, ``MessageExt.java`` and
``MessageConst.java``. Reserved property names are the strings Java uses.
"""
from __future__ import annotations

from typing import Any, Mapping


class MessageConst:
    """Reserved property names (Java's MessageConst)."""

    KEYS = "KEYS"
    TAGS = "TAGS"
    WAIT_STORE_MSG_OK = "WAIT"
    DELAY_TIME_LEVEL = "DELAY"
    RETRY_TOPIC = "RETRY_TOPIC"
    REAL_TOPIC = "REAL_TOPIC"
    REAL_QUEUE_ID = "REAL_QID"
    TRANSACTION_PREPARED = "TRAN_MSG"
    PRODUCER_GROUP = "PGROUP"
    MIN_OFFSET = "MIN_OFFSET"
    MAX_OFFSET = "MAX_OFFSET"
    BUYER_ID = "BUYER_ID"
    ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
    TRANSFER_FLAG = "TRANSFER_FLAG"
    CORRECTION_FLAG = "CORRECTION_FLAG"
    MQ2_FLAG = "MQ2_FLAG"
    RECONSUME_TIME = "RECONSUME_TIME"
    MSG_REGION = "MSG_REGION"
    TRACE_SWITCH = "TRACE_ON"
    UNIQ_CLIENT_MESSAGE_ID_KEYIDX = "UNIQ_KEY"
    MAX_RECONSUME_TIMES = "MAX_RECONSUME_TIMES"
    CONSUME_START_TIMESTAMP = "CONSUME_START_TIME"
    TRANSACTION_PREPARED_QUEUE_OFFSET = "TRAN_PREPARED_QUEUE_OFFSET"
    TRANSACTION_CHECK_TIMES = "TRANSACTION_CHECK_TIMES"
    CHECK_IMMUNITY_TIME_IN_SECONDS = "CHECK_IMMUNITY_TIME_IN_SECONDS"
    INSTANCE_ID = "INSTANCE_ID"
    CORRELATION_ID = "CORRELATION_ID"
    MESSAGE_REPLY_TO_CLIENT = "REPLY_TO_CLIENT"
    MESSAGE_TTL = "TTL"
    REPLY_MESSAGE_ARRIVE_TIME = "ARRIVE_TIME"
    PUSH_REPLY_TIME = "PUSH_REPLY_TIME"
    CLUSTER = "CLUSTER"
    MESSAGE_TYPE = "MSG_TYPE"
    INNER_MULTI_DISPATCH = "INNER_MULTI_DISPATCH"
    INNER_MULTI_QUEUE_OFFSET = "INNER_MULTI_QUEUE_OFFSET"
    TRANSACTION_ID = "__transactionId__"
    START_DELIVER_TIME = "__STARTDELIVERTIME"

    KEY_SEPARATOR = " "


class Message:
    """A message to send: topic, body, flag and string properties (tags and keys among them)."""

    __slots__ = ("topic", "body", "flag", "properties", "transaction_id")

    transaction_id: str | None

    def __init__(
        self,
        topic: str,
        body: bytes = b"",
        tags: str | None = None,
        keys: str | list[str] | None = None,
        flag: int = 0,
        properties: Mapping[str, str] | None = None,
        wait_store_msg_ok: bool = True,
    ) -> None:
        self.topic = topic
        self.body = body
        self.flag = flag
        self.properties: dict[str, str] = dict(properties) if properties else {}
        self.transaction_id: str | None = None
        if tags:
            self.properties[MessageConst.TAGS] = tags
        if keys:
            self.keys = keys
        self.properties[MessageConst.WAIT_STORE_MSG_OK] = "true" if wait_store_msg_ok else "false"

    @property
    def tags(self) -> str | None:
        """The TAGS property (what consumers filter on), or None."""
        return self.properties.get(MessageConst.TAGS)

    @tags.setter
    def tags(self, value: str | None) -> None:
        self._set(MessageConst.TAGS, value)

    @property
    def keys(self) -> str | None:
        """The KEYS property (space-separated keys for lookups), or None."""
        return self.properties.get(MessageConst.KEYS)

    @keys.setter
    def keys(self, value: str | list[str] | None) -> None:
        if isinstance(value, (list, tuple)):
            value = MessageConst.KEY_SEPARATOR.join(value)
        self._set(MessageConst.KEYS, value)

    @property
    def delay_time_level(self) -> int:
        """The delay level (1-18 with the broker's default levels; 0 for none)."""
        return int(self.properties.get(MessageConst.DELAY_TIME_LEVEL, "0"))

    @delay_time_level.setter
    def delay_time_level(self, level: int) -> None:
        self.properties[MessageConst.DELAY_TIME_LEVEL] = str(level)

    @property
    def wait_store_msg_ok(self) -> bool:
        """Whether the broker answers only after the message is stored (WAIT property)."""
        return self.properties.get(MessageConst.WAIT_STORE_MSG_OK) != "false"

    def _set(self, name: str, value: str | None) -> None:
        if value is None:
            self.properties.pop(name, None)
        else:
            self.properties[name] = value

    def __repr__(self) -> str:
        return f"{type(self).__name__}(topic={self.topic!r}, tags={self.tags!r}, keys={self.keys!r}, body=<{len(self.body)} bytes>)"


class MessageExt(Message):
    """A stored message, as a pull, view or query returns it.

    ``msg_id`` is the client id (the UNIQ_KEY property) when the producer set
    one, else the offset message id, as Java's ``MessageClientExt`` does.
    """

    __slots__ = (
        "queue_id", "store_size", "queue_offset", "sys_flag", "born_timestamp",
        "born_host", "store_timestamp", "store_host", "offset_msg_id", "commit_log_offset",
        "body_crc", "reconsume_times", "prepared_transaction_offset", "broker_name",
    )

    def __init__(self, topic: str = "", body: bytes = b"") -> None:
        self.topic = topic
        self.body = body
        self.flag = 0
        self.properties = {}
        self.transaction_id = None
        self.queue_id = 0
        self.store_size = 0
        self.queue_offset = 0
        self.sys_flag = 0
        self.born_timestamp = 0
        self.born_host = ""
        self.store_timestamp = 0
        self.store_host = ""
        self.offset_msg_id = ""
        self.commit_log_offset = 0
        self.body_crc = 0
        self.reconsume_times = 0
        self.prepared_transaction_offset = 0
        self.broker_name: str | None = None

    @property
    def msg_id(self) -> str:
        """The client message id (UNIQ_KEY) when there is one, else the offset message id."""
        return self.properties.get(MessageConst.UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or self.offset_msg_id

    def fields(self) -> dict[str, Any]:
        """Every stored field as a plain dict (handy for comparing and for logs)."""
        names = ("topic", "body", "flag", "properties") + MessageExt.__slots__
        return {name: getattr(self, name) for name in names}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MessageExt):
            return NotImplemented
        return self.fields() == other.fields()

    __hash__ = None  # type: ignore[assignment]
