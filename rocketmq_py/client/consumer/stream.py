"""The push consumer as an async iterator of batches (``async for batch in consumer.messages()``).

The consumer's machinery stays as it is: a listener call is still made per batch by the consume service,
with its flow control (the process queue stays full while batches wait) and its retries (a batch that
was not consumed goes back to the broker with RECONSUME_LATER). Here the listener call only hands its
batch to the iterator and waits: the batch counts as consumed when the loop body that received it is
done, that is when the iterator is asked for the next batch. A loop left early (``break``, an exception)
or a shutdown while a batch is in the body sends that batch back to be consumed again (at least once).
"""
from __future__ import annotations

import asyncio
import collections
from typing import TYPE_CHECKING, Any, AsyncIterator, Sequence

from rocketmq_py.client.consumer.listener import ConsumeConcurrentlyStatus

if TYPE_CHECKING:
    from rocketmq_py.common.message import MessageExt

_CONSUMED = ConsumeConcurrentlyStatus.CONSUME_SUCCESS
_AGAIN = ConsumeConcurrentlyStatus.RECONSUME_LATER


class _Delivery:
    __slots__ = ("messages", "outcome")

    def __init__(self, messages: list[MessageExt], outcome: "asyncio.Future[ConsumeConcurrentlyStatus]") -> None:
        self.messages = messages
        self.outcome = outcome

    def settle(self, status: ConsumeConcurrentlyStatus) -> None:
        if not self.outcome.done():
            self.outcome.set_result(status)


class BatchStream:
    """Batches handed from the push consumer's listener calls to ``async for`` loops."""

    def __init__(self) -> None:
        self._waiting: collections.deque[_Delivery] = collections.deque()
        self._in_body: set[_Delivery] = set()
        self._arrived = asyncio.Event()
        self.closed = False

    async def listener(self, messages: Sequence[MessageExt], context: Any) -> ConsumeConcurrentlyStatus:
        """The concurrent listener registered on the consumer: waits until the batch was consumed."""
        if self.closed:
            return _AGAIN
        delivery = _Delivery(list(messages), asyncio.get_running_loop().create_future())
        self._waiting.append(delivery)
        self._arrived.set()
        try:
            return await delivery.outcome
        finally:
            if delivery in self._waiting:
                self._waiting.remove(delivery)

    async def iterate(self) -> AsyncIterator[list[MessageExt]]:
        """One ``async for`` loop: each batch is settled as consumed when the next one is asked for."""
        current: _Delivery | None = None
        try:
            while True:
                if current is not None:
                    self._in_body.discard(current)
                    current.settle(_CONSUMED)
                    current = None
                delivery = await self._next()
                if delivery is None:
                    return
                current = delivery
                self._in_body.add(current)
                yield current.messages
        finally:
            if current is not None:
                self._in_body.discard(current)
                current.settle(_AGAIN)

    async def _next(self) -> _Delivery | None:
        while not self.closed:
            while self._waiting:
                delivery = self._waiting.popleft()
                if not delivery.outcome.done():
                    return delivery
            self._arrived.clear()
            await self._arrived.wait()
        return None

    def close(self) -> None:
        """End every loop; batches not consumed yet (waiting, or in a loop body) go back to be consumed again."""
        self.closed = True
        for delivery in list(self._waiting) + list(self._in_body):
            delivery.settle(_AGAIN)
        self._waiting.clear()
        self._in_body.clear()
        self._arrived.set()
