"""Send results (Java's SendResult, SendStatus, TransactionSendResult, LocalTransactionState)."""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rocketmq_py.common.codes import ResponseCode

if TYPE_CHECKING:
    from rocketmq_py.common.message_queue import MessageQueue


class SendStatus(enum.Enum):
    """How the broker stored a sent message (SEND_OK unless a flush or a slave timed out)."""

    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"

    @classmethod
    def from_response_code(cls, code: int) -> "SendStatus":
        return _STATUS_BY_CODE[code]


_STATUS_BY_CODE: dict[int, SendStatus] = {
    ResponseCode.SUCCESS: SendStatus.SEND_OK,
    ResponseCode.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE,
}


class LocalTransactionState(enum.Enum):
    """The outcome of a local transaction: commit, roll back, or unknown (the broker asks again)."""

    COMMIT_MESSAGE = "COMMIT_MESSAGE"
    ROLLBACK_MESSAGE = "ROLLBACK_MESSAGE"
    UNKNOW = "UNKNOW"


@dataclass
class SendResult:
    """What a broker said about a stored message.

    ``msg_id`` is the client id (UNIQ_KEY; for a batch the ids joined by
    commas); ``offset_msg_id`` the broker's store id.
    """

    send_status: SendStatus
    msg_id: str
    offset_msg_id: str
    message_queue: MessageQueue
    queue_offset: int
    transaction_id: str | None = None
    region_id: str = "DefaultRegion"
    trace_on: bool = True

    @property
    def ok(self) -> bool:
        """True when the status is SEND_OK."""
        return self.send_status is SendStatus.SEND_OK


@dataclass
class TransactionSendResult(SendResult):
    """The result of a transactional send, with the local transaction's state."""

    local_transaction_state: LocalTransactionState = LocalTransactionState.UNKNOW
