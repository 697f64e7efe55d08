"""What the asyncio lite pull consumer's ``subscribe`` and ``seek`` return, now that they are plain methods.

They were coroutines before 0.1.0; they are plain methods now, as aiokafka's are (and as the push consumer's
``subscribe`` always was), so that ``consumer.subscribe("T")`` written for aiokafka does what it says
instead of leaving an un-awaited coroutine. Their return type is ``None`` to type checkers, which therefore
report ``await consumer.subscribe(...)`` at once. Code written for the coroutines still runs meanwhile:
awaiting what they return warns (DeprecationWarning) and waits for what the coroutine waited for (the
brokers told of the new subscription; the seek checked against the queue's offsets, its error raised).
Nothing is created when the result is not awaited, so the new form leaves nothing behind.
"""
from __future__ import annotations

import warnings
from typing import Any, Awaitable, Callable, Generator

__all__ = ["FormerCoroutine"]


class FormerCoroutine:
    """The result of a method that was a coroutine: awaiting it warns, then awaits ``finish()``."""

    __slots__ = ("_method", "_finish")

    def __init__(self, method: str, finish: Callable[[], Awaitable[None]] | None = None) -> None:
        self._method = method
        self._finish = finish

    def __await__(self) -> Generator[Any, None, None]:
        warnings.warn(
            f"{self._method}() is no longer a coroutine: call it without await (awaiting it will fail in a "
            f"later release)",
            DeprecationWarning,
            stacklevel=2,
        )
        if self._finish is not None:
            yield from self._finish().__await__()
