"""DLedger: the Raft log that RocketMQ 4.x's DLedger CommitLog replicates, interoperable with DLedger 0.3.1.2.

A member (:class:`DLedgerServer`) serves its group's peer protocol on its own port, takes part in
elections, replicates the leader's entries, and keeps DLedger's files (``dledger-<selfId>/data``,
``index``, ``checkpoint``, ``currterm``) byte-compatible with Java's. See ``docs/design-dledger.md``.
"""
from rocketmq_py.dledger.codes import RequestCode, ResponseCode, Role
from rocketmq_py.dledger.config import DLedgerConfig
from rocketmq_py.dledger.entry import BODY_OFFSET, DLedgerEntry
from rocketmq_py.dledger.errors import DLedgerError
from rocketmq_py.dledger.pusher import AppendedEntry
from rocketmq_py.dledger.server import CommitListener, DLedgerServer
from rocketmq_py.dledger.store import AppendHook

__all__ = [
    "AppendHook",
    "AppendedEntry",
    "BODY_OFFSET",
    "CommitListener",
    "DLedgerConfig",
    "DLedgerEntry",
    "DLedgerError",
    "DLedgerServer",
    "RequestCode",
    "ResponseCode",
    "Role",
]
