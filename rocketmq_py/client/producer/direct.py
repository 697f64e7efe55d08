"""The blocking producer's sync send, run in the calling thread (see :mod:`rocketmq_py.remoting.direct`).

A blocking ``Producer.send`` that hopped to the background loop spent more CPU
on the two thread switches than on the send itself. Here the calling thread
does the whole send, as a Java thread does: it picks the queue, builds the
request, writes it on its own connection to the broker and reads the answer.
The retry loop, the queue choice, the request and the result are the asyncio
producer's own (:meth:`AsyncProducer.sync_attempts`, ``send_request_parts``,
``send_result``), so both paths send the same bytes and give the same results
and errors.

What needs the loop still goes there: the first send to a topic (its route
comes from the name server), a broker address missing from the routes, and
every send while send hooks (message trace) are installed, since those hooks
belong to the loop.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Generator, Sequence

from rocketmq_py.client.api import stored_or_raise
from rocketmq_py.client.producer.core import AsyncProducer, CommunicationMode, ServiceState, no_broker_error
from rocketmq_py.common.clock import monotonic_ms
from rocketmq_py.common.message import Message
from rocketmq_py.remoting.direct import DirectChannels

if TYPE_CHECKING:
    from rocketmq_py.client.producer.publish_info import TopicPublishInfo
    from rocketmq_py.client.producer.result import SendResult
    from rocketmq_py.client.producer.selector import SelectorLike
    from rocketmq_py.common.message_queue import MessageQueue
    from rocketmq_py.remoting.blocking import BackgroundLoop


class DirectSender:
    """Sends for one blocking producer from the calling threads; :meth:`send` returns None when the send
    must go through the loop instead (decided before anything is sent)."""

    def __init__(self, core: AsyncProducer, loop: BackgroundLoop) -> None:
        """``core`` is started: its client instance holds the remoting settings (TLS included) to follow."""
        assert core.instance is not None
        self._core = core
        self._loop = loop
        self._instance = core.instance
        self._api = core.instance.api
        self._channels = DirectChannels(self._api.remoting.config, self._api.remoting.ssl_context)

    def send(self, message: Message | Sequence[Message], queue: MessageQueue | None, selector: SelectorLike | None,
             arg: Any, timeout_ms: float | None) -> SendResult | None:
        core = self._core
        info = self._ready_route(message)
        if info is None:
            return None
        timeout = core.config.send_msg_timeout if timeout_ms is None else timeout_ms
        prepared = core.prepare_message(message)
        if selector is not None:
            chosen, remaining = core.selected_queue(info, prepared, selector, arg, monotonic_ms(), timeout)
            return self._send_kernel(prepared, chosen, remaining)
        if queue is not None:
            return self._send_kernel(prepared, core.target_queue(prepared, queue), timeout)
        return _run_attempts(core.sync_attempts(prepared, info, CommunicationMode.SYNC, timeout, monotonic_ms()),
                             lambda attempt: self._send_kernel(prepared, *attempt))

    def close(self) -> None:
        self._channels.close()

    def _ready_route(self, message: Message | Sequence[Message]) -> TopicPublishInfo | None:
        """The cached route of the message's topic when this send can be made here, else None."""
        core = self._core
        if core.state is not ServiceState.RUNNING or core.send_hooks or self._loop.in_loop_thread():
            return None  # (on the loop's thread, the loop's send raises: a blocking call there would stall it)
        if isinstance(message, Message):
            topic = message.topic
        elif isinstance(message, (list, tuple)) and message and isinstance(message[0], Message):
            topic = message[0].topic
        else:
            return None  # the loop's send raises the error
        info = core.publish_infos.get(core.config.with_namespace(topic))
        return info if info is not None and info.ok() else None

    def _send_kernel(self, message: Message, queue: MessageQueue, timeout_ms: float) -> SendResult:
        core = self._core
        started = monotonic_ms()
        addr = self._broker_address(queue)
        code, header, body, remaining = core.send_request_parts(message, queue, started, timeout_ms)
        request = self._api.send_message_request(code, header, body)
        response = self._channels.get(addr).call(request, remaining)
        return core.send_result(message, queue, stored_or_raise(response, addr))

    def _broker_address(self, queue: MessageQueue) -> str:
        addr = self._instance.find_broker_address_in_publish(queue.broker_name)
        if addr is None:
            self._loop.run(self._core.find_publish_info(queue.topic))  # the route refresh belongs to the loop
            addr = self._instance.find_broker_address_in_publish(queue.broker_name)
        if addr is None:
            raise no_broker_error(queue)
        return addr


def _run_attempts(attempts: Generator[tuple[MessageQueue, float], SendResult | None, SendResult | None],
                  attempt: Callable[[tuple[MessageQueue, float]], SendResult]) -> SendResult:
    """Drive :meth:`AsyncProducer.sync_attempts` with blocking attempts."""
    try:
        planned = next(attempts)
        while True:
            try:
                result = attempt(planned)
            except BaseException as error:
                planned = attempts.throw(error)
            else:
                planned = attempts.send(result)
    except StopIteration as end:
        final: SendResult | None = end.value
        assert final is not None  # a sync send ends with a result or an error
        return final
