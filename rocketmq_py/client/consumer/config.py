"""Consumer settings (Java's DefaultMQPushConsumer and DefaultLitePullConsumer), in Python spelling.

Times are in milliseconds as in Java, except ``consume_timeout`` (minutes,
as Java's). Enumerations take their Java names as strings too
(``message_model="BROADCASTING"``).
"""
from __future__ import annotations

import dataclasses
import enum
import time
from dataclasses import dataclass, field
from typing import Any, TypeVar

from rocketmq_py.client.config import ClientConfig
from rocketmq_py.client.consumer.allocate import resolve_strategy
from rocketmq_py.common import topic as topics
from rocketmq_py.common import validators
from rocketmq_py.common.heartbeat_consumer import ConsumeFromWhere, MessageModel
from rocketmq_py.errors import InvalidArgumentError, NoNameServerError

DEFAULT_CONSUMER_GROUP = "DEFAULT_CONSUMER"
_E = TypeVar("_E", bound=enum.Enum)
_C = TypeVar("_C", bound="ConsumerConfig")
TIMESTAMP_FORMAT = "%Y%m%d%H%M%S"


def half_an_hour_ago() -> str:
    """Java's default consumeTimestamp: 30 minutes ago, ``yyyyMMddHHmmss`` in local time."""
    return time.strftime(TIMESTAMP_FORMAT, time.localtime(time.time() - 1800))


def parse_consume_timestamp(text: str) -> int:
    """``yyyyMMddHHmmss`` (local time) as epoch milliseconds."""
    from datetime import datetime  # lazy: see rocketmq_py/_lazy.py

    try:
        return int(datetime.strptime(text, TIMESTAMP_FORMAT).timestamp() * 1000)
    except (TypeError, ValueError):
        raise InvalidArgumentError(
            f"consume_timestamp {text!r} is not valid: the format is yyyyMMddHHmmss, e.g. '20240131235959'"
        ) from None


def _in_range(name: str, value: int, low: int, high: int) -> None:
    if not isinstance(value, int) or not low <= value <= high:
        raise InvalidArgumentError(f"{name} must be in [{low}, {high}], got {value!r}")


@dataclass
class ConsumerConfig(ClientConfig):
    """What push and lite pull consumers share."""

    consumer_group: str = ""
    message_model: MessageModel = MessageModel.CLUSTERING
    consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    #: Where CONSUME_FROM_TIMESTAMP starts, ``yyyyMMddHHmmss`` in local time.
    consume_timestamp: str = field(default_factory=half_an_hour_ago)
    #: ``"AVG"`` (default), ``"AVG_BY_CIRCLE"``, ``"CONSISTENT_HASH"`` or an AllocateMessageQueueStrategy object.
    allocate_message_queue_strategy: Any = "AVG"
    unit_mode: bool = False
    pull_threshold_for_queue: int = 1000
    #: MiB of cached message bodies per queue.
    pull_threshold_size_for_queue: int = 100
    persist_consumer_offset_interval: int = 5_000

    def __post_init__(self) -> None:
        if isinstance(self.message_model, str):
            self.message_model = _enum(MessageModel, self.message_model, "message_model")
        if isinstance(self.consume_from_where, str):
            self.consume_from_where = _enum(ConsumeFromWhere, self.consume_from_where, "consume_from_where")
        super().__post_init__()

    def validate(self) -> None:
        validators.check_group(self.consumer_group)
        if self.consumer_group == DEFAULT_CONSUMER_GROUP:
            raise InvalidArgumentError(
                f"the consumer group cannot be {DEFAULT_CONSUMER_GROUP!r}: give the consumer its own group name"
            )
        if not isinstance(self.message_model, MessageModel):
            raise InvalidArgumentError(f"message_model must be CLUSTERING or BROADCASTING, got {self.message_model!r}")
        if not isinstance(self.consume_from_where, ConsumeFromWhere):
            raise InvalidArgumentError(f"consume_from_where is not valid: {self.consume_from_where!r}")
        parse_consume_timestamp(self.consume_timestamp)
        resolve_strategy(self.allocate_message_queue_strategy)
        _in_range("pull_threshold_for_queue", self.pull_threshold_for_queue, 1, 65535)
        _in_range("pull_threshold_size_for_queue", self.pull_threshold_size_for_queue, 1, 1024)
        self.serialize_type_code()
        if (self.access_key is None) != (self.secret_key is None):
            raise InvalidArgumentError("set both access_key and secret_key for ACL, or neither")
        if not self.namesrv_addresses():
            raise NoNameServerError("no name server address: pass namesrv_addr='host:9876' or set NAMESRV_ADDR")

    @property
    def group(self) -> str:
        """The group as sent on the wire (with the namespace, if any)."""
        return self.with_namespace(self.consumer_group)

    @property
    def retry_topic(self) -> str:
        """The group's retry topic (``%RETRY%group``)."""
        return topics.retry_topic(self.group)


@dataclass
class PushConsumerConfig(ConsumerConfig):
    """DefaultMQPushConsumer's settings; the defaults are Java's."""

    consume_thread_min: int = 20
    #: Listener calls that may run at once (threads of the blocking consumer, tasks of the asyncio one).
    consume_thread_max: int = 20
    consume_concurrently_max_span: int = 2000
    pull_threshold_for_topic: int = -1
    pull_threshold_size_for_topic: int = -1
    pull_interval: int = 0
    consume_message_batch_max_size: int = 1
    pull_batch_size: int = 32
    post_subscription_when_pull: bool = False
    #: -1 means 16 for concurrent listeners and no limit for orderly ones, as in Java.
    max_reconsume_times: int = -1
    suspend_current_queue_time_millis: int = 1000
    #: Minutes a message may be in consumption before it is sent back for a retry.
    consume_timeout: int = 15
    #: How long shutdown waits for listener calls in progress (Java's default 0 does not wait; here they finish).
    await_termination_millis_when_shutdown: int = 60_000
    pull_time_delay_millis_when_exception: int = 3000

    def validate(self) -> None:
        """Check the values together (ranges, pairs); InvalidArgumentError names the first wrong one."""
        super().validate()
        _in_range("consume_thread_min", self.consume_thread_min, 1, 1000)
        _in_range("consume_thread_max", self.consume_thread_max, 1, 1000)
        if self.consume_thread_min > self.consume_thread_max:
            raise InvalidArgumentError(
                f"consume_thread_min ({self.consume_thread_min}) is larger than consume_thread_max "
                f"({self.consume_thread_max})"
            )
        _in_range("consume_concurrently_max_span", self.consume_concurrently_max_span, 1, 65535)
        if self.pull_threshold_for_topic != -1:
            _in_range("pull_threshold_for_topic", self.pull_threshold_for_topic, 1, 6553500)
        if self.pull_threshold_size_for_topic != -1:
            _in_range("pull_threshold_size_for_topic", self.pull_threshold_size_for_topic, 1, 102400)
        _in_range("pull_interval", self.pull_interval, 0, 65535)
        _in_range("consume_message_batch_max_size", self.consume_message_batch_max_size, 1, 1024)
        _in_range("pull_batch_size", self.pull_batch_size, 1, 1024)
        if self.max_reconsume_times < -1:
            raise InvalidArgumentError(f"max_reconsume_times must be -1 (default) or >= 0, got {self.max_reconsume_times}")

    def concurrent_max_reconsume_times(self) -> int:
        """The retries of a concurrent listener's message: 16 when ``max_reconsume_times`` is -1."""
        return 16 if self.max_reconsume_times == -1 else self.max_reconsume_times


@dataclass
class LitePullConsumerConfig(ConsumerConfig):
    """DefaultLitePullConsumer's settings; the defaults are Java's."""

    broker_suspend_max_time_millis: int = 20_000
    consumer_timeout_millis_when_suspend: int = 30_000
    consumer_pull_timeout_millis: int = 10_000
    auto_commit: bool = True
    auto_commit_interval_millis: int = 5_000
    pull_batch_size: int = 10
    pull_threshold_for_all: int = 10_000
    consume_max_span: int = 2000
    poll_timeout_millis: int = 5_000
    topic_metadata_check_interval_millis: int = 30_000
    pull_time_delay_millis_when_exception: int = 1000

    def validate(self) -> None:
        """Check the values together (ranges, pairs); InvalidArgumentError names the first wrong one."""
        super().validate()
        if self.consumer_timeout_millis_when_suspend < self.broker_suspend_max_time_millis:
            raise InvalidArgumentError(
                "consumer_timeout_millis_when_suspend must be at least broker_suspend_max_time_millis (long polling)"
            )
        _in_range("pull_batch_size", self.pull_batch_size, 1, 1024)
        if self.auto_commit_interval_millis < 1000:
            raise InvalidArgumentError("auto_commit_interval_millis must be at least 1000")


def _enum(kind: type[_E], value: str, name: str) -> _E:
    try:
        return kind(value.strip().upper())
    except ValueError:
        choices = ", ".join(member.value for member in kind)
        raise InvalidArgumentError(f"{name} {value!r} is not one of {choices}") from None


def make_config(kind: type[_C], group: str | None, config: ConsumerConfig | None, options: dict[str, Any]) -> _C:
    base = dataclasses.replace(config) if config is not None else kind()
    if not isinstance(base, kind):
        raise InvalidArgumentError(f"config must be a {kind.__name__}, got {type(config).__name__}")
    if group is not None:
        options = {**options, "consumer_group": group}
    known = {f.name for f in dataclasses.fields(kind)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise InvalidArgumentError(f"unknown consumer option(s) {', '.join(unknown)}; see {kind.__name__}")
    return dataclasses.replace(base, **options)
