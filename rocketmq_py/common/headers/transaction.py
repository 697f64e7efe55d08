"""Headers of the transaction RPCs (Java's EndTransactionRequestHeader and CheckTransactionStateRequestHeader)."""
from __future__ import annotations

from dataclasses import dataclass

from rocketmq_py.common.headers.base import CommandHeader, wire


@dataclass(slots=True)
class EndTransactionRequestHeader(CommandHeader):
    """END_TRANSACTION (37), sent oneway; ``commit_or_rollback`` is a sysFlag transaction type (0, 8 or 12)."""

    producer_group: str = wire("producerGroup", required=True)
    tran_state_table_offset: int = wire("tranStateTableOffset", required=True, bits=64)
    commit_log_offset: int = wire("commitLogOffset", required=True, bits=64)
    commit_or_rollback: int = wire("commitOrRollback", required=True)
    msg_id: str = wire("msgId", required=True)
    from_transaction_check: bool = wire("fromTransactionCheck", False)
    transaction_id: str | None = wire("transactionId")
    broker_name: str | None = wire("bname")


@dataclass(slots=True)
class CheckTransactionStateRequestHeader(CommandHeader):
    """CHECK_TRANSACTION_STATE (39), broker to producer, oneway; the body is the half message."""

    tran_state_table_offset: int = wire("tranStateTableOffset", required=True, bits=64)
    commit_log_offset: int = wire("commitLogOffset", required=True, bits=64)
    msg_id: str | None = wire("msgId")
    transaction_id: str | None = wire("transactionId")
    offset_msg_id: str | None = wire("offsetMsgId")
    broker_name: str | None = wire("bname")
