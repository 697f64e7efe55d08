"""Transactional messages (Java's broker/transaction/queue TransactionalMessageBridge,
TransactionalMessageServiceImpl, DefaultTransactionalMessageCheckListener and TransactionalMessageCheckService).

A half message is stored on RMQ_SYS_TRANS_HALF_TOPIC queue 0 with its real
topic and queue in REAL_TOPIC / REAL_QID. END_TRANSACTION commits it (the
real message is stored) or rolls it back, and either way an op message
(tag ``d``, body = the half message's queue offset) goes to
RMQ_SYS_TRANS_OP_HALF_TOPIC. Every ``transactionCheckInterval`` the check
walks the half queue from the offset of group CID_RMQ_SYS_TRANS: a half
message without an op message, older than ``transactionTimeOut`` (or its
CHECK_IMMUNITY_TIME_IN_SECONDS), is stored again with TRANSACTION_CHECK_TIMES
raised and its producer group is asked with CHECK_TRANSACTION_STATE; after
``transactionCheckMax`` checks it goes to TRANS_CHECK_MAX_TIME_TOPIC.
"""
from __future__ import annotations

import asyncio
import ipaddress
import logging
from typing import Any, TYPE_CHECKING

from rocketmq_py import codec
from rocketmq_py.common.clock import now_ms
from rocketmq_py.common.codes import RequestCode
from rocketmq_py.common.headers.transaction import CheckTransactionStateRequestHeader
from rocketmq_py.common.message import MessageConst, MessageExt
from rocketmq_py.common.route import PermName
from rocketmq_py.common.sysflag import TRANSACTION_NOT_TYPE, TRANSACTION_TYPE_MASK
from rocketmq_py.common.topic import (
    RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
    RMQ_SYS_TRANS_HALF_TOPIC,
    RMQ_SYS_TRANS_OP_HALF_TOPIC,
)
from rocketmq_py.remoting import create_request
from rocketmq_py.store import GetMessageStatus, StoreMessage

if TYPE_CHECKING:
    from rocketmq_py.broker.controller import BrokerController
    from rocketmq_py.remoting import RemotingCommand, RemotingConnection

_log = logging.getLogger(__name__)

CHECK_GROUP = "CID_RMQ_SYS_TRANS"
REMOVE_TAG = "d"
MAX_PROCESS_TIME_LIMIT_S = 60
MAX_RETRY_COUNT_WHEN_HALF_NULL = 1
#: The check runs on the event loop: a pass looks at this many half messages per queue at most.
MAX_MESSAGES_PER_PASS = 2000
PERM_RW = PermName.READ | PermName.WRITE


def _to_int(text: str | None, default: int = -1) -> int:
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default


class TransactionalMessageService:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker
        try:
            ip = ipaddress.ip_address(broker.config.broker_ip1).packed
        except ValueError:
            ip = b"\x7f\x00\x00\x01"
        self._unique_ids = codec.UniqueIdGenerator(ip)
        self._send_tasks: set[asyncio.Task[Any]] = set()

    # --- half, commit, rollback -----------------------------------------------------------------

    @staticmethod
    def to_half_message(message: StoreMessage) -> None:
        """Turn a prepared send into the half message (Java's parseHalfMessageInner)."""
        message.properties[MessageConst.REAL_TOPIC] = message.topic
        message.properties[MessageConst.REAL_QUEUE_ID] = str(message.queue_id)
        message.sys_flag = (message.sys_flag & ~TRANSACTION_TYPE_MASK) | TRANSACTION_NOT_TYPE
        message.topic = RMQ_SYS_TRANS_HALF_TOPIC
        message.queue_id = 0
        message.properties_string = None

    def lookup_half(self, commit_log_offset: int) -> MessageExt | None:
        return self.broker.store.lookup_message_by_offset(commit_log_offset)

    def final_message(self, half: MessageExt, transaction_type: int, commit_log_offset: int) -> StoreMessage:
        """The message a commit stores (Java's endMessageTransaction). The stored properties are the half
        message's, as Java writes them before it clears REAL_TOPIC, REAL_QID and TRAN_MSG."""
        properties = dict(half.properties)
        stored = codec.properties_to_string(properties)
        real_topic = properties.pop(MessageConst.REAL_TOPIC, "")
        real_queue = _to_int(properties.pop(MessageConst.REAL_QUEUE_ID, "0"), 0)
        properties.pop(MessageConst.TRANSACTION_PREPARED, None)
        return StoreMessage(
            topic=real_topic, body=half.body, queue_id=real_queue, flag=half.flag, properties=properties,
            sys_flag=(half.sys_flag & ~TRANSACTION_TYPE_MASK) | transaction_type, born_timestamp=half.born_timestamp,
            born_host=half.born_host, store_host=half.store_host, reconsume_times=half.reconsume_times,
            prepared_transaction_offset=commit_log_offset, properties_string=stored,
        )

    def put_op_message(self, half: MessageExt) -> None:
        """Mark a half message done: tag ``d``, body = its queue offset, on the op queue of its queue id."""
        broker = self.broker
        broker.topics.create_in_send_back(RMQ_SYS_TRANS_OP_HALF_TOPIC, 1, PERM_RW)
        properties = {MessageConst.TAGS: REMOVE_TAG, MessageConst.WAIT_STORE_MSG_OK: "false",
                      MessageConst.UNIQ_CLIENT_MESSAGE_ID_KEYIDX: self._unique_ids.next_id()}
        message = StoreMessage(
            topic=RMQ_SYS_TRANS_OP_HALF_TOPIC, body=str(half.queue_offset).encode(), queue_id=half.queue_id,
            properties=properties, born_timestamp=now_ms(), born_host=broker.store_host, store_host=broker.store_host,
        )
        result = broker.store.append_message(message)
        if not result.is_ok:
            _log.error("storing the op message of half message %d failed: %s", half.queue_offset, result.status.name)

    # --- check back --------------------------------------------------------------------------------

    def _queue_offset(self, topic: str, queue_id: int) -> int:
        offset = self.broker.offsets.query_offset(CHECK_GROUP, topic, queue_id)
        if offset == -1:
            offset = max(self.broker.store.get_min_offset_in_queue(topic, queue_id), 0)
        return offset

    def _commit(self, topic: str, queue_id: int, offset: int) -> None:
        self.broker.offsets.commit_offset(self.broker.store_host, CHECK_GROUP, topic, queue_id, offset)

    def _read(self, topic: str, queue_id: int, offset: int, count: int) -> tuple[GetMessageStatus, int, list[MessageExt]]:
        result = self.broker.store.get_messages(CHECK_GROUP, topic, queue_id, offset, count)
        messages = []
        if result.status == GetMessageStatus.FOUND:
            messages = codec.decode_store_records(result.body, decompress_body=False)
        return result.status, result.next_begin_offset, messages

    def _op_removals(self, queue_id: int, op_offset: int, half_offset: int, removed: dict[int, int],
                     done: list[int]) -> tuple[int, list[MessageExt] | None]:
        status, next_offset, ops = self._read(RMQ_SYS_TRANS_OP_HALF_TOPIC, queue_id, op_offset, 32)
        if status in (GetMessageStatus.NO_MATCHED_MESSAGE, GetMessageStatus.MESSAGE_WAS_REMOVING,
                      GetMessageStatus.OFFSET_FOUND_NULL, GetMessageStatus.OFFSET_OVERFLOW_BADLY,
                      GetMessageStatus.OFFSET_TOO_SMALL):
            self._commit(RMQ_SYS_TRANS_OP_HALF_TOPIC, queue_id, next_offset)
            return next_offset, None
        if not ops:
            return next_offset, None
        for op in ops:
            if op.tags != REMOVE_TAG:
                _log.error("an op message with tag %r, not %r, at %d", op.tags, REMOVE_TAG, op.queue_offset)
                continue
            target = _to_int(op.body.decode("utf-8", "replace"))
            if target < half_offset:
                done.append(op.queue_offset)
            else:
                removed[target] = op.queue_offset
        return next_offset, ops

    def check(self, timeout_ms: int, check_max: int) -> None:
        """One pass over the half queues (Java's TransactionalMessageServiceImpl.check)."""
        broker = self.broker
        topic_config = broker.topics.select(RMQ_SYS_TRANS_HALF_TOPIC)
        if topic_config is None:
            topic_config = broker.topics.create_in_send_back(RMQ_SYS_TRANS_HALF_TOPIC, 1, PERM_RW)
        for queue_id in range(topic_config.read_queue_nums):
            try:
                self._check_queue(queue_id, timeout_ms, check_max)
            except Exception:
                _log.exception("checking the half queue %d failed", queue_id)

    def _check_queue(self, queue_id: int, timeout_ms: int, check_max: int) -> None:
        started = now_ms()
        half_offset = self._queue_offset(RMQ_SYS_TRANS_HALF_TOPIC, queue_id)
        op_offset = self._queue_offset(RMQ_SYS_TRANS_OP_HALF_TOPIC, queue_id)
        if half_offset < 0 or op_offset < 0:
            return
        removed: dict[int, int] = {}
        done: list[int] = []
        next_op, ops = self._op_removals(queue_id, op_offset, half_offset, removed, done)
        null_count = 1
        new_offset = offset = half_offset
        for _ in range(MAX_MESSAGES_PER_PASS):
            if now_ms() - started > MAX_PROCESS_TIME_LIMIT_S * 1000:
                break
            if offset in removed:
                done.append(removed.pop(offset))
                offset += 1
                new_offset = offset
                continue
            status, next_offset, found = self._read(RMQ_SYS_TRANS_HALF_TOPIC, queue_id, offset, 1)
            if not found:
                null_count += 1
                if null_count > MAX_RETRY_COUNT_WHEN_HALF_NULL + 1:
                    break
                if status in (GetMessageStatus.OFFSET_OVERFLOW_ONE, GetMessageStatus.NO_MESSAGE_IN_QUEUE):
                    break
                offset = new_offset = next_offset
                continue
            half = found[0]
            if self._discard(half, check_max):
                offset += 1
                new_offset = offset
                continue
            if half.store_timestamp >= started:
                break
            age = now_ms() - half.born_timestamp
            immunity = timeout_ms
            immunity_text = half.properties.get(MessageConst.CHECK_IMMUNITY_TIME_IN_SECONDS)
            if immunity_text is not None:
                seconds = _to_int(immunity_text)
                immunity = timeout_ms if seconds == -1 else seconds * 1000
                if age < immunity:
                    if self._prepared_done(half, removed, done):
                        offset += 1
                        new_offset = offset
                        continue
            elif 0 <= age < immunity:
                break
            need_check = ((ops is None and age > immunity)
                          or (ops is not None and ops[-1].born_timestamp - started > timeout_ms)
                          or age <= -1)
            if need_check:
                if not self._put_back(half):
                    break
                self._send_check(half)
            else:
                next_op, ops = self._op_removals(queue_id, next_op, half_offset, removed, done)
                continue
            offset += 1
            new_offset = offset
        if new_offset != half_offset:
            self._commit(RMQ_SYS_TRANS_HALF_TOPIC, queue_id, new_offset)
        new_op_offset = op_offset
        for value in sorted(done):
            if value != new_op_offset:
                break
            new_op_offset += 1
        if new_op_offset != op_offset:
            self._commit(RMQ_SYS_TRANS_OP_HALF_TOPIC, queue_id, new_op_offset)

    def _discard(self, half: MessageExt, check_max: int) -> bool:
        times_text = half.properties.get(MessageConst.TRANSACTION_CHECK_TIMES)
        times = 1
        if times_text is not None:
            times = _to_int(times_text)
            if times >= check_max:
                self._resolve_discard(half)
                return True
            times += 1
        half.properties[MessageConst.TRANSACTION_CHECK_TIMES] = str(times)
        if now_ms() - half.born_timestamp > self.broker.store_config.file_reserved_time * 3_600_000:
            _log.info("half message %s is older than the file reserved time; skipped", half.msg_id)
            self._resolve_discard(half)
            return True
        return False

    def _resolve_discard(self, half: MessageExt) -> None:
        broker = self.broker
        _log.error("half message %s was checked too many times: moved to %s", half.msg_id,
                   RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC)
        broker.topics.create_in_send_back(RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC, 1, PERM_RW)
        message = StoreMessage(
            topic=RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC, body=half.body, queue_id=0, flag=half.flag,
            properties=dict(half.properties, **{MessageConst.WAIT_STORE_MSG_OK: "false"}), sys_flag=half.sys_flag,
            born_timestamp=half.born_timestamp, born_host=half.born_host, store_host=half.store_host,
            reconsume_times=half.reconsume_times,
        )
        broker.store.append_message(message)

    def _prepared_done(self, half: MessageExt, removed: dict[int, int], done: list[int]) -> bool:
        prepared = half.properties.get(MessageConst.TRANSACTION_PREPARED_QUEUE_OFFSET)
        if prepared is None:
            return self._put_back(half, immunity=True)
        prepared_offset = _to_int(prepared)
        if prepared_offset == -1:
            return False
        if prepared_offset in removed:
            done.append(removed.pop(prepared_offset))
            return True
        return self._put_back(half, immunity=True)

    def _put_back(self, half: MessageExt, immunity: bool = False) -> bool:
        """Store the half message again at the end of its queue (the check follows the copy)."""
        properties = dict(half.properties)
        properties[MessageConst.WAIT_STORE_MSG_OK] = "false"
        if immunity:
            properties.setdefault(MessageConst.TRANSACTION_PREPARED_QUEUE_OFFSET, str(half.queue_offset))
        message = StoreMessage(
            topic=half.topic, body=half.body, queue_id=half.queue_id, flag=half.flag, properties=properties,
            sys_flag=half.sys_flag, born_timestamp=half.born_timestamp, born_host=half.born_host,
            store_host=half.store_host, reconsume_times=half.reconsume_times,
        )
        result = self.broker.store.append_message(message)
        if not result.is_ok or result.append_result is None:
            _log.error("storing half message %s again failed: %s", half.msg_id, result.status.name)
            return False
        half.queue_offset = result.append_result.logics_offset
        half.commit_log_offset = result.append_result.wrote_offset
        half.offset_msg_id = result.append_result.msg_id
        half.properties = properties
        return True

    def _send_check(self, half: MessageExt) -> None:
        broker = self.broker
        group = half.properties.get(MessageConst.PRODUCER_GROUP)
        connection = broker.producers.available_connection(group)
        if connection is None:
            _log.warning("cannot check half message %s: no producer of group %s is connected", half.msg_id, group)
            return
        uniq_key = half.properties.get(MessageConst.UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        header = CheckTransactionStateRequestHeader(
            tran_state_table_offset=half.queue_offset, commit_log_offset=half.commit_log_offset, msg_id=uniq_key,
            transaction_id=uniq_key, offset_msg_id=half.offset_msg_id,
        )
        body = codec.encode_store_record(
            topic=half.properties.get(MessageConst.REAL_TOPIC, half.topic), body=half.body,
            properties=half.properties, queue_id=_to_int(half.properties.get(MessageConst.REAL_QUEUE_ID), 0),
            flag=half.flag, queue_offset=half.queue_offset, physical_offset=half.commit_log_offset,
            sys_flag=half.sys_flag, born_timestamp=half.born_timestamp, born_host=half.born_host,
            store_timestamp=half.store_timestamp, store_host=half.store_host, reconsume_times=half.reconsume_times,
            prepared_transaction_offset=half.prepared_transaction_offset,
        )
        request = create_request(RequestCode.CHECK_TRANSACTION_STATE, header.to_ext_fields(), body)
        task = asyncio.get_running_loop().create_task(self._send(connection, request, group))
        self._send_tasks.add(task)
        task.add_done_callback(self._send_tasks.discard)

    async def _send(self, connection: RemotingConnection, request: RemotingCommand, group: str | None) -> None:
        try:
            await self.broker.server.invoke_oneway(connection, request, 3000)
        except Exception as error:
            _log.error("asking producer group %s for a transaction state failed: %s", group, error)

    def shutdown(self) -> None:
        for task in list(self._send_tasks):
            task.cancel()
