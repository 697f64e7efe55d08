"""The error a DLedger operation fails with: one class, carrying DLedger's response code.

Java's ``DLedgerException`` does the same: a node answers a failed request with the code in the body,
and raises it locally; ``code`` says what went wrong (``NOT_LEADER``, ``WAIT_QUORUM_ACK_TIMEOUT``,
``DISK_ERROR`` ...), ``leader_id`` where to go instead when the node knows.
"""
from __future__ import annotations

from rocketmq_py.dledger.codes import ResponseCode
from rocketmq_py.errors import RocketMQError

__all__ = ["DLedgerError"]


class DLedgerError(RocketMQError):
    """A DLedger request or store operation failed with ``code``."""

    def __init__(self, code: ResponseCode, message: str = "", *, leader_id: str | None = None) -> None:
        self.code = code
        self.leader_id = leader_id
        text = f"DLedger {code.name} ({code.value})"
        if message:
            text += f": {message}"
        if leader_id is not None:
            text += f" (leader: {leader_id})"
        super().__init__(text)

    @property
    def retriable(self) -> bool:
        """True when the same request may succeed later or at another node (the group is changing leader)."""
        return self.code in _RETRIABLE


_RETRIABLE = frozenset({
    ResponseCode.NOT_LEADER, ResponseCode.LEADER_TRANSFERRING, ResponseCode.LEADER_PENDING_FULL,
    ResponseCode.TERM_CHANGED, ResponseCode.WAIT_QUORUM_ACK_TIMEOUT, ResponseCode.NETWORK_ERROR,
    ResponseCode.TIMEOUT, ResponseCode.LEADER_NOT_READY,
})
