"""Transactional producers (Java's TransactionMQProducer, TransactionListener and the transaction half of
DefaultMQProducerImpl).

A transactional send stores a half message (TRAN_MSG, PGROUP, sysFlag
PREPARED), runs the local transaction, and ends it with END_TRANSACTION
(oneway). When the end was UNKNOW or got lost, the broker asks again with
CHECK_TRANSACTION_STATE and the listener's ``check_local_transaction``
answers.
"""
from __future__ import annotations

import asyncio
import inspect
import logging
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any, Callable, Protocol

from rocketmq_py.client.producer.blocking import Producer, callback_executor
from rocketmq_py.client.producer.core import UNIQ_KEY, AsyncProducer
from rocketmq_py.client.producer.result import LocalTransactionState, SendStatus, TransactionSendResult
from rocketmq_py.common import sysflag, validators
from rocketmq_py.common.message import MessageConst
from rocketmq_py.errors import BrokerNotFoundError, InvalidArgumentError

if TYPE_CHECKING:
    from rocketmq_py.client.config import ProducerConfig
    from rocketmq_py.common.headers.transaction import CheckTransactionStateRequestHeader
    from rocketmq_py.common.message import Message, MessageExt

_log = logging.getLogger(__name__)

_END_TYPES = {
    LocalTransactionState.COMMIT_MESSAGE: sysflag.TRANSACTION_COMMIT_TYPE,
    LocalTransactionState.ROLLBACK_MESSAGE: sysflag.TRANSACTION_ROLLBACK_TYPE,
    LocalTransactionState.UNKNOW: sysflag.TRANSACTION_NOT_TYPE,
}


class TransactionListener(Protocol):
    """Runs the local transaction and answers the broker's check; either method may be a coroutine."""

    def execute_local_transaction(self, message: Message, arg: Any) -> LocalTransactionState:
        """Run the local transaction of the half message just sent; its state decides commit or rollback."""
        ...

    def check_local_transaction(self, message: MessageExt) -> LocalTransactionState:
        """The state of the local transaction of ``message``, asked by the broker when it is unresolved."""
        ...


class AsyncTransactionProducer(AsyncProducer):
    """An :class:`AsyncProducer` that also sends transactional messages.

    The listener's methods may be coroutine functions; plain functions run in
    ``listener_executor`` when one is given, else on the event loop.
    """

    def __init__(self, producer_group: str | None = None, listener: TransactionListener | None = None, *,
                 config: ProducerConfig | None = None, listener_executor: Executor | None = None,
                 **options: Any) -> None:
        super().__init__(producer_group, config=config, **options)
        self.listener = listener
        self.listener_executor = listener_executor
        self._checks: set[asyncio.Task[None]] = set()

    async def _call_listener(self, method: Callable[..., Any], *args: Any) -> LocalTransactionState:
        if inspect.iscoroutinefunction(method):
            state = await method(*args)
        elif self.listener_executor is not None:
            state = await asyncio.get_running_loop().run_in_executor(self.listener_executor, method, *args)
        else:
            state = method(*args)
        if state is None:
            return LocalTransactionState.UNKNOW
        if not isinstance(state, LocalTransactionState):
            raise InvalidArgumentError(f"a transaction listener must return a LocalTransactionState, not {state!r}")
        return state

    async def send_message_in_transaction(self, message: Message, arg: Any = None) -> TransactionSendResult:
        """Send ``message`` as a half message, run the local transaction, and end it."""
        self._running_instance()
        if self.listener is None:
            raise InvalidArgumentError("a transactional send needs a TransactionListener: pass listener=...")
        message.properties.pop(MessageConst.DELAY_TIME_LEVEL, None)
        validators.check_message(message, self.config.max_message_size)
        message.properties[MessageConst.TRANSACTION_PREPARED] = "true"
        message.properties[MessageConst.PRODUCER_GROUP] = self.group
        result = await self.send(message)
        state = LocalTransactionState.UNKNOW
        local_error: BaseException | None = None
        if result.send_status is SendStatus.SEND_OK:
            if result.transaction_id is not None:
                message.properties[MessageConst.TRANSACTION_ID] = result.transaction_id
            message.transaction_id = message.properties.get(UNIQ_KEY)
            try:
                state = await self._call_listener(self.listener.execute_local_transaction, message, arg)
            except Exception as error:
                _log.warning("the local transaction of %s raised", result.msg_id, exc_info=True)
                local_error = error
        else:
            state = LocalTransactionState.ROLLBACK_MESSAGE
        try:
            await self.end_transaction(result, state, local_error)
        except Exception:
            _log.warning("local transaction %s is %s, but ending it at the broker failed; the broker will check "
                         "back", result.msg_id, state.value, exc_info=True)
        return TransactionSendResult(
            result.send_status, result.msg_id, result.offset_msg_id, result.message_queue, result.queue_offset,
            result.transaction_id, result.region_id, result.trace_on, local_transaction_state=state,
        )

    async def end_transaction(self, result: Any, state: LocalTransactionState,
                              local_error: BaseException | None = None) -> None:
        """Tell the broker the outcome of a half message (commit, rollback or unknown)."""
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py import codec
        from rocketmq_py.common.headers.transaction import EndTransactionRequestHeader

        instance = self._running_instance()
        _, _, commit_log_offset = codec.decode_offset_msg_id(result.offset_msg_id or result.msg_id)
        broker_name = result.message_queue.broker_name
        addr = instance.find_broker_address_in_publish(broker_name)
        if addr is None:
            raise BrokerNotFoundError(f"the broker {broker_name!r} of the half message is not known any more")
        header = EndTransactionRequestHeader(
            producer_group=self.group,
            tran_state_table_offset=result.queue_offset,
            commit_log_offset=commit_log_offset,
            commit_or_rollback=_END_TYPES[state],
            msg_id=result.msg_id,
            from_transaction_check=False,
            transaction_id=result.transaction_id,
            broker_name=broker_name,
        )
        remark = f"executeLocalTransactionBranch exception: {local_error!r}" if local_error is not None else None
        await instance.api.end_transaction_oneway(addr, header, remark, self.config.send_msg_timeout)

    def check_transaction_state(self, broker_addr: str, message: MessageExt,
                                header: CheckTransactionStateRequestHeader) -> None:
        """The broker asks how a half message ended (called by the client instance)."""
        task = asyncio.get_running_loop().create_task(self._answer_check(broker_addr, message, header))
        self._checks.add(task)
        task.add_done_callback(self._checks.discard)

    async def _answer_check(self, broker_addr: str, message: MessageExt,
                            header: CheckTransactionStateRequestHeader) -> None:
        # lazy: see rocketmq_py/_lazy.py
        from rocketmq_py.common.headers.transaction import EndTransactionRequestHeader

        remark = None
        if self.listener is None:
            _log.warning("a transaction check for %s came, but the producer has no listener", message.msg_id)
            return
        try:
            state = await self._call_listener(self.listener.check_local_transaction, message)
        except Exception as error:
            _log.warning("check_local_transaction of %s raised", message.msg_id, exc_info=True)
            state = LocalTransactionState.UNKNOW
            remark = f"checkLocalTransactionState Exception: {error!r}"
        end = EndTransactionRequestHeader(
            producer_group=self.group,
            tran_state_table_offset=header.tran_state_table_offset,
            commit_log_offset=header.commit_log_offset,
            commit_or_rollback=_END_TYPES[state],
            msg_id=message.properties.get(UNIQ_KEY) or message.msg_id,
            from_transaction_check=True,
            transaction_id=header.transaction_id,
            broker_name=header.broker_name,
        )
        try:
            await self._running_instance().api.end_transaction_oneway(broker_addr, end, remark, 3000)
        except Exception:
            _log.warning("answering the transaction check of %s failed", message.msg_id, exc_info=True)

    async def shutdown(self) -> None:
        if self._checks:
            await asyncio.gather(*tuple(self._checks), return_exceptions=True)
        await super().shutdown()


class TransactionProducer(Producer):
    """The blocking twin of :class:`AsyncTransactionProducer`; the listener runs in a callback thread."""

    _core: AsyncTransactionProducer

    def __init__(self, producer_group: str | None = None, listener: TransactionListener | None = None, *,
                 config: ProducerConfig | None = None, **options: Any) -> None:
        self._listener = listener
        super().__init__(producer_group, config=config, **options)

    def _make_core(self, producer_group: str | None, config: ProducerConfig | None,
                   options: dict[str, Any]) -> AsyncProducer:
        return AsyncTransactionProducer(producer_group, self._listener, config=config,
                                        listener_executor=callback_executor(), **options)

    def send_message_in_transaction(self, message: Message, arg: Any = None) -> TransactionSendResult:
        """Send a half message, run the listener's local transaction, then commit or roll it back."""
        return self._run(self._core.send_message_in_transaction(message, arg))
