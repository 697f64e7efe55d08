"""Checks a client makes before anything is sent (Java's client/Validators and TopicValidator).

Every failure raises :class:`InvalidArgumentError` whose message says what is
wrong and what to do; ``code`` is MESSAGE_ILLEGAL (13) for message checks, as
Java's MQClientException carries it.
"""
from __future__ import annotations

from typing import Sequence

from rocketmq_py.common import topic as topics
from rocketmq_py.common.codes import ResponseCode
from rocketmq_py.common.message import Message, MessageConst
from rocketmq_py.errors import InvalidArgumentError

#: Levels of the broker's default ``messageDelayLevel`` ("1s 5s 10s 30s 1m ... 2h").
MAX_DELAY_LEVEL = 18

_ALLOWED = "^[%|a-zA-Z0-9_-]+$"


def check_group(group: object) -> None:
    if not isinstance(group, str) or not group.strip():
        raise InvalidArgumentError("the producer/consumer group is blank: give a group name such as 'order_producer'")
    if len(group) > topics.GROUP_MAX_LENGTH:
        raise InvalidArgumentError(
            f"the group {group[:40]!r}... has {len(group)} characters; at most {topics.GROUP_MAX_LENGTH} are allowed"
        )
    if topics.is_topic_or_group_illegal(group):
        raise InvalidArgumentError(f"the group {group!r} contains illegal characters; only {_ALLOWED} is allowed")


def check_producer_group(group: object) -> None:
    check_group(group)
    if group == topics.DEFAULT_PRODUCER_GROUP:
        raise InvalidArgumentError(
            f"the producer group cannot be {topics.DEFAULT_PRODUCER_GROUP!r}: give the producer its own group name"
        )


def check_topic(topic: object) -> None:
    if not isinstance(topic, str) or not topic.strip():
        raise InvalidArgumentError("the topic is blank: set Message.topic")
    if len(topic) > topics.TOPIC_MAX_LENGTH:
        raise InvalidArgumentError(
            f"the topic {topic[:40]!r}... has {len(topic)} characters; at most {topics.TOPIC_MAX_LENGTH} are allowed"
        )
    if topics.is_topic_or_group_illegal(topic):
        raise InvalidArgumentError(f"the topic {topic!r} contains illegal characters; only {_ALLOWED} is allowed")


def check_send_topic(topic: object) -> None:
    """A topic a producer may send to: valid, and not one of the broker's internal topics."""
    check_topic(topic)
    if topics.is_not_allowed_send_topic(topic):  # type: ignore[arg-type]
        raise InvalidArgumentError(f"sending to the system topic {topic!r} is forbidden: send to a topic of your own")


def check_message(message: object, max_message_size: int) -> None:
    if not isinstance(message, Message):
        raise InvalidArgumentError(
            f"expected a rocketmq_py Message, got {type(message).__name__}", ResponseCode.MESSAGE_ILLEGAL
        )
    check_send_topic(message.topic)
    body = message.body
    if body is None:
        raise InvalidArgumentError("the message body is None: give the message a body", ResponseCode.MESSAGE_ILLEGAL)
    if not isinstance(body, (bytes, bytearray, memoryview)):
        raise InvalidArgumentError(
            f"the message body must be bytes, not {type(body).__name__} (encode text with .encode())",
            ResponseCode.MESSAGE_ILLEGAL,
        )
    if len(body) == 0:
        raise InvalidArgumentError("the message body is empty: RocketMQ refuses empty bodies",
                                   ResponseCode.MESSAGE_ILLEGAL)
    if len(body) > max_message_size:
        raise InvalidArgumentError(
            f"the message body has {len(body)} bytes, over the limit of {max_message_size} bytes "
            "(max_message_size): split it, compress it yourself, or raise the limit on producer and broker",
            ResponseCode.MESSAGE_ILLEGAL,
        )
    check_delay_level(message)


def check_delay_level(message: Message) -> None:
    text = message.properties.get(MessageConst.DELAY_TIME_LEVEL)
    if text is None:
        return
    try:
        level = int(text)
    except ValueError:
        level = -1
    if not 0 <= level <= MAX_DELAY_LEVEL:
        raise InvalidArgumentError(
            f"the delay level {text!r} is not valid: use 1..{MAX_DELAY_LEVEL} "
            "(1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h), or 0 for no delay",
            ResponseCode.MESSAGE_ILLEGAL,
        )


def check_batch(messages: Sequence[Message], max_message_size: int) -> None:
    """The checks of Java's MessageBatch.generateFromList plus the per-message checks."""
    if not messages:
        raise InvalidArgumentError("the batch is empty: give at least one message", ResponseCode.MESSAGE_ILLEGAL)
    first = messages[0]
    for message in messages:
        check_message(message, max_message_size)
        if message.delay_time_level > 0:
            raise InvalidArgumentError("a batch cannot carry delayed messages: send delayed messages one by one",
                                       ResponseCode.MESSAGE_ILLEGAL)
        if message.topic.startswith(topics.RETRY_GROUP_TOPIC_PREFIX):
            raise InvalidArgumentError(f"a batch cannot be sent to the retry topic {message.topic!r}",
                                       ResponseCode.MESSAGE_ILLEGAL)
        if message.topic != first.topic:
            raise InvalidArgumentError(
                f"all messages of a batch must have the same topic, found {first.topic!r} and {message.topic!r}: "
                "send one batch per topic", ResponseCode.MESSAGE_ILLEGAL,
            )
        if message.wait_store_msg_ok != first.wait_store_msg_ok:
            raise InvalidArgumentError("all messages of a batch must have the same wait_store_msg_ok",
                                       ResponseCode.MESSAGE_ILLEGAL)
