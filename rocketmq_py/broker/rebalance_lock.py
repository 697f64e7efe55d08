"""Queue locks for orderly consumption (Java's broker/client/rebalance/RebalanceLockManager).

A client holds a queue of its group while it renews the lock (the Java client
renews every 20 s); a lock not renewed for 60 s
(``rocketmq.broker.rebalance.lockMaxLiveTime``) may be taken by another client.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Iterable

from rocketmq_py.common.clock import now_ms
from rocketmq_py.common.message_queue import MessageQueue

_log = logging.getLogger(__name__)

LOCK_MAX_LIVE_TIME_MS = 60_000


@dataclass
class _LockEntry:
    client_id: str
    last_update_timestamp: int = field(default_factory=now_ms)

    def expired(self, now: int) -> bool:
        return now - self.last_update_timestamp > LOCK_MAX_LIVE_TIME_MS

    def held_by(self, client_id: str, now: int) -> bool:
        return self.client_id == client_id and not self.expired(now)


class RebalanceLockManager:
    def __init__(self) -> None:
        self.table: dict[str, dict[MessageQueue, _LockEntry]] = {}

    def try_lock_batch(self, group: str, queues: Iterable[MessageQueue], client_id: str) -> set[MessageQueue]:
        """The queues of ``queues`` that ``client_id`` holds after the call."""
        now = now_ms()
        locks = self.table.setdefault(group, {})
        locked = set()
        for queue in queues:
            entry = locks.get(queue)
            if entry is None:
                locks[queue] = _LockEntry(client_id, now)
                locked.add(queue)
            elif entry.held_by(client_id, now):
                entry.last_update_timestamp = now
                locked.add(queue)
            elif entry.expired(now):
                _log.warning("lock of %s in group %s expired for %s; %s takes it", queue, group, entry.client_id,
                             client_id)
                entry.client_id = client_id
                entry.last_update_timestamp = now
                locked.add(queue)
        return locked

    def unlock_batch(self, group: str, queues: Iterable[MessageQueue], client_id: str) -> None:
        locks = self.table.get(group)
        if locks is None:
            return
        for queue in queues:
            entry = locks.get(queue)
            if entry is not None and entry.client_id == client_id:
                del locks[queue]
            elif entry is not None:
                _log.warning("unlock of %s in group %s by %s refused: %s holds it", queue, group, client_id,
                             entry.client_id)
