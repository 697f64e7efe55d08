"""Message listeners, their statuses and contexts (Java's client/consumer/listener/*).

A listener is a function ``(messages, context) -> status`` (plain or ``async``),
or an object of :class:`MessageListenerConcurrently` /
:class:`MessageListenerOrderly`. A concurrent listener returns
``CONSUME_SUCCESS`` or ``RECONSUME_LATER``; an orderly one ``SUCCESS`` or
``SUSPEND_CURRENT_QUEUE_A_MOMENT``. As in Java, a listener that raises or
returns anything else counts as a failure (RECONSUME_LATER / SUSPEND) and is
logged; it never stops the consumer.
"""
from __future__ import annotations

import abc
import enum
import inspect
import logging
import sys
from dataclasses import dataclass
from typing import Any, Callable, Union

from rocketmq_py.common.message import MessageExt
from rocketmq_py.common.message_queue import MessageQueue
from rocketmq_py.errors import InvalidArgumentError

_log = logging.getLogger(__name__)


class ConsumeConcurrentlyStatus(enum.Enum):
    """What a concurrent listener returns: consumed, or to be consumed again later (a retry)."""

    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"


class ConsumeOrderlyStatus(enum.Enum):
    """What an orderly listener returns: consumed, or suspend the queue a moment and retry."""

    SUCCESS = "SUCCESS"
    #: Deprecated in Java; only with ``context.auto_commit = False``.
    ROLLBACK = "ROLLBACK"
    #: Deprecated in Java; only with ``context.auto_commit = False``.
    COMMIT = "COMMIT"
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"


@dataclass
class ConsumeConcurrentlyContext:
    """Passed to a concurrent listener with each batch: its queue, and how a retry is delayed."""

    message_queue: MessageQueue
    #: 0: the broker picks the retry delay (3 + reconsume times); -1: straight to the dead-letter queue.
    delay_level_when_next_consume: int = 0
    #: With CONSUME_SUCCESS, messages after this index are retried (Java's ackIndex).
    ack_index: int = sys.maxsize


@dataclass
class ConsumeOrderlyContext:
    """Passed to an orderly listener with each batch: its queue, and how the queue is suspended."""

    message_queue: MessageQueue
    auto_commit: bool = True
    #: -1: the consumer's ``suspend_current_queue_time_millis``.
    suspend_current_queue_time_millis: int = -1


class MessageListenerConcurrently(abc.ABC):
    """Messages of a queue may be consumed in parallel and out of order."""

    @abc.abstractmethod
    def consume_message(self, messages: list[MessageExt], context: ConsumeConcurrentlyContext) -> Any:
        """Return a ConsumeConcurrentlyStatus (``async def`` is allowed too)."""


class MessageListenerOrderly(abc.ABC):
    """Messages of a queue are consumed one batch at a time, in queue order."""

    @abc.abstractmethod
    def consume_message(self, messages: list[MessageExt], context: ConsumeOrderlyContext) -> Any:
        """Return a ConsumeOrderlyStatus (``async def`` is allowed too)."""


#: What a listener function looks like. The messages come as a ``list``, so a listener may annotate them as
#: ``list[MessageExt]`` or ``Sequence[MessageExt]``; the context is a ConsumeConcurrentlyContext or a
#: ConsumeOrderlyContext. It returns a status, or an awaitable of one (``async def``).
ListenerFunction = Callable[[list[MessageExt], Any], Any]
ListenerLike = Union[MessageListenerConcurrently, MessageListenerOrderly, ListenerFunction]


@dataclass(frozen=True)
class Listener:
    """A registered listener: the function to call, whether it is a coroutine function, whether it is orderly."""

    function: ListenerFunction
    is_async: bool
    orderly: bool

    @classmethod
    def of(cls, listener: ListenerLike, orderly: bool | None = None) -> "Listener":
        function: ListenerFunction
        if isinstance(listener, MessageListenerOrderly):
            kind, function = True, listener.consume_message
        elif isinstance(listener, MessageListenerConcurrently):
            kind, function = False, listener.consume_message
        elif callable(listener):
            kind, function = bool(orderly), listener
        else:
            raise InvalidArgumentError(
                "a message listener must be a function (messages, context) -> status, or a "
                f"MessageListenerConcurrently / MessageListenerOrderly object, not {type(listener).__name__}"
            )
        if orderly is not None and orderly != kind:
            raise InvalidArgumentError(f"orderly={orderly} contradicts the listener type {type(listener).__name__}")
        is_async = inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
            getattr(function, "__call__", None))
        return cls(function, is_async, kind)


def concurrently_status(value: Any, has_error: bool, where: str) -> ConsumeConcurrentlyStatus:
    """The status a concurrent listener's result counts as."""
    if isinstance(value, ConsumeConcurrentlyStatus):
        return value
    if not has_error:
        _log.warning("the listener of %s returned %r instead of a ConsumeConcurrentlyStatus; the messages are "
                     "consumed again later (return CONSUME_SUCCESS when done)", where, value)
    return ConsumeConcurrentlyStatus.RECONSUME_LATER


def orderly_status(value: Any, has_error: bool, where: str) -> ConsumeOrderlyStatus:
    """The status an orderly listener's result counts as."""
    if isinstance(value, ConsumeOrderlyStatus):
        return value
    if not has_error:
        _log.warning("the orderly listener of %s returned %r instead of a ConsumeOrderlyStatus; the queue is "
                     "suspended for a moment (return SUCCESS when done)", where, value)
    return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
