"""END_TRANSACTION (37) (Java's broker/processor/EndTransactionProcessor).

The producer sends it oneway (so answers are only logged by a Java client);
COMMIT stores the real message and marks the half message done, ROLLBACK only
marks it done; "unknown" (NOT_TYPE) leaves it for the check-back.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from rocketmq_py.broker.processors.common import fail, ok
from rocketmq_py.common.codes import RequestCode, ResponseCode
from rocketmq_py.common.headers.transaction import EndTransactionRequestHeader
from rocketmq_py.common.message import MessageConst
from rocketmq_py.common.sysflag import TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE
from rocketmq_py.remoting import ProcessorTable, RemotingCommand, RequestContext
from rocketmq_py.store import SLAVE, PutMessageStatus

if TYPE_CHECKING:
    from rocketmq_py.broker.controller import BrokerController

_log = logging.getLogger(__name__)


class EndTransactionProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register_into(self, table: ProcessorTable) -> None:
        table.register(RequestCode.END_TRANSACTION, self.end_transaction)

    async def end_transaction(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand | None:
        header = EndTransactionRequestHeader.from_command(request)
        broker = self.broker
        if broker.store_config.broker_role == SLAVE:
            _log.warning("this broker is a slave; END_TRANSACTION refused")
            return fail(request, ResponseCode.SLAVE_NOT_AVAILABLE, None)
        kind = header.commit_or_rollback
        source = "the check of " if header.from_transaction_check else ""
        if kind not in (TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE):
            _log.warning("%sproducer %s left transaction %s unknown (remark %s)", source, ctx.remote_address,
                         header.msg_id, request.remark)
            return None
        if kind == TRANSACTION_ROLLBACK_TYPE or header.from_transaction_check:
            _log.info("%sproducer %s %s transaction %s", source, ctx.remote_address,
                      "committed" if kind == TRANSACTION_COMMIT_TYPE else "rolled back", header.msg_id)
        transactions = broker.transactions
        half = transactions.lookup_half(header.commit_log_offset)
        if half is None:
            return fail(request, ResponseCode.SYSTEM_ERROR, "Find prepared transaction message failed")
        if half.properties.get(MessageConst.PRODUCER_GROUP) != header.producer_group:
            return fail(request, ResponseCode.SYSTEM_ERROR, "The producer group wrong")
        if half.queue_offset != header.tran_state_table_offset:
            return fail(request, ResponseCode.SYSTEM_ERROR, "The transaction state table offset wrong")
        if half.commit_log_offset != header.commit_log_offset:
            return fail(request, ResponseCode.SYSTEM_ERROR, "The commit log offset wrong")
        if kind == TRANSACTION_ROLLBACK_TYPE:
            transactions.put_op_message(half)
            return ok(request)
        final = transactions.final_message(half, kind, header.commit_log_offset)
        result = await broker.store.put_message(final)
        if result.is_ok:
            transactions.put_op_message(half)
            return ok(request)
        if result.status in (PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED):
            return fail(request, ResponseCode.MESSAGE_ILLEGAL, (
                "The message is illegal, maybe msg body or properties length not matched. msg body length limit "
                f"{broker.store_config.max_message_size}B, msg properties length limit 32KB."))
        if result.status == PutMessageStatus.SERVICE_NOT_AVAILABLE:
            return fail(request, ResponseCode.SERVICE_NOT_AVAILABLE, "Service not available now.")
        if result.status == PutMessageStatus.OS_PAGECACHE_BUSY:
            return fail(request, ResponseCode.SYSTEM_ERROR, "OS page cache busy, please try another machine")
        return fail(request, ResponseCode.SYSTEM_ERROR, result.status.name)
