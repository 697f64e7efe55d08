"""The public rebalance listener: told which queues a consumer was given and which it lost, as aiokafka's
``ConsumerRebalanceListener`` is told about partitions (Java's lite pull consumer has MessageQueueListener)."""
from __future__ import annotations

import abc
import inspect
import logging
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from rocketmq_py.common.message_queue import MessageQueue

_log = logging.getLogger(__name__)


class RebalanceListener(abc.ABC):
    """Subclass it and pass it as ``rebalance_listener=`` to a push or lite pull consumer.

    Both methods may be plain or ``async def``; they run on the consumer's event loop (the blocking
    consumers' background loop), so they must not block for long. ``on_queues_revoked`` is called after
    the revoked queues' offsets were committed and their pulls stopped; ``on_queues_assigned`` before the
    first pull of the new queues. A listener that raises is logged and the rebalance goes on.
    """

    def on_queues_revoked(self, revoked: set[MessageQueue]) -> object:
        """Queues this consumer no longer owns (default: nothing to do)."""
        return None

    def on_queues_assigned(self, assigned: set[MessageQueue]) -> object:
        """Queues this consumer now owns (default: nothing to do)."""
        return None


async def notify(listener: RebalanceListener | None, group: str, revoked: set[MessageQueue],
                 assigned: set[MessageQueue]) -> None:
    """Call the listener for a change of queues; its errors are logged, never raised."""
    if listener is None:
        return
    calls: list[tuple[Callable[[set[MessageQueue]], object], set[MessageQueue]]] = []
    if revoked:
        calls.append((listener.on_queues_revoked, revoked))
    if assigned:
        calls.append((listener.on_queues_assigned, assigned))
    for method, queues in calls:
        try:
            result = method(set(queues))
            if inspect.isawaitable(result):
                await result
        except Exception:
            _log.exception("the rebalance listener of %s failed in %s", group, method.__name__)
