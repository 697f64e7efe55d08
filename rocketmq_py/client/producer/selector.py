"""Queue selectors for ordered sends (Java's MessageQueueSelector, SelectMessageQueueByHash and ByRandom)."""
from __future__ import annotations

from typing import Any, Callable, Protocol, Sequence, Union, cast

from rocketmq_py.common.message import Message
from rocketmq_py.common.message_queue import MessageQueue


class MessageQueueSelector(Protocol):
    """Picks the queue of a message (Java's MessageQueueSelector): ordered messages of one key go to one queue."""

    def select(self, queues: Sequence[MessageQueue], message: Message, arg: Any) -> MessageQueue:
        """The queue of ``queues`` that ``message`` goes to, for ``arg``."""
        ...


#: A selector object, or a plain function ``(queues, message, arg) -> queue``.
SelectorLike = Union[MessageQueueSelector, Callable[[Sequence[MessageQueue], Message, Any], MessageQueue]]


def _java_hash(arg: Any) -> int:
    # lazy: see rocketmq_py/_lazy.py
    from rocketmq_py import codec

    if isinstance(arg, str):
        return codec.java_string_hash(arg)
    if isinstance(arg, bool):
        return 1231 if arg else 1237
    if isinstance(arg, int):
        if -(1 << 31) <= arg < (1 << 31):
            return arg
        value = arg & 0xFFFFFFFFFFFFFFFF
        folded = (value ^ (value >> 32)) & 0xFFFFFFFF
        return folded - (1 << 32) if folded & 0x80000000 else folded
    return hash(arg)


class SelectMessageQueueByHash:
    """The queue at ``abs(hash(sharding_key)) % len(queues)``; strings and ints hash as in Java,
    so a Python and a Java producer put the same key on the same queue."""

    def select(self, queues: Sequence[MessageQueue], message: Message, arg: Any) -> MessageQueue:
        """The queue at Java's ``hashCode(arg) % len(queues)``: the same queue Java picks."""
        return queues[abs(_java_hash(arg)) % len(queues)]


class SelectMessageQueueByRandom:
    """Picks a random queue (Java's SelectMessageQueueByRandom)."""

    def select(self, queues: Sequence[MessageQueue], message: Message, arg: Any) -> MessageQueue:
        """A random queue."""
        import random  # lazy: see rocketmq_py/_lazy.py

        return random.choice(list(queues))


def as_selector_function(selector: SelectorLike) -> Callable[[Sequence[MessageQueue], Message, Any], MessageQueue]:
    select = getattr(selector, "select", None)
    if callable(select):
        return cast(Callable[[Sequence[MessageQueue], Message, Any], MessageQueue], select)
    if callable(selector):
        return selector
    raise TypeError(f"a selector has a select(queues, message, arg) method or is a function, not {selector!r}")
