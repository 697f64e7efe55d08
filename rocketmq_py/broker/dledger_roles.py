"""A DLedger broker's role follows its member's (Java's broker/dledger/DLedgerRoleChangeHandler, with
BrokerController.changeToSlave and changeToMaster).

The broker starts with brokerId -1 and registers nothing. Each role change of the member is handled in turn,
in the order they happened (Java's single-thread executor):

* CANDIDATE (unless the broker is a slave already) and FOLLOWER: SLAVE with brokerId = the selfId's number
  + 1, the schedule service stopped, the metadata synchronised from the master the name server names;
* LEADER: once every entry of the ledger is committed and dispatched (looked at every 100 ms, as Java; given
  up when the member stops leading), the queue offsets are rebuilt from the ConsumeQueues, then SYNC_MASTER
  with brokerId 0 and the schedule service started.

Each change ends with a registration with every name server.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from rocketmq_py.broker.config import MASTER_ID
from rocketmq_py.dledger import Role
from rocketmq_py.store import SLAVE, SYNC_MASTER

if TYPE_CHECKING:
    from rocketmq_py.broker.controller import BrokerController
    from rocketmq_py.dledger.commit_log import DLedgerCommitLog

_log = logging.getLogger(__name__)

#: How often a new leader looks whether its ledger is committed and dispatched (Java's 100 ms sleep).
CATCH_UP_CHECK_S = 0.1


class DLedgerRoles:
    def __init__(self, broker: BrokerController, log: DLedgerCommitLog) -> None:
        self.broker = broker
        self.log = log
        self._changes: asyncio.Queue[tuple[int, Role]] | None = None
        self._task: asyncio.Task[None] | None = None
        log.add_role_listener(self._on_role_change)

    def start(self) -> None:
        """Handle the role changes from now on (before the member starts: its first change is one)."""
        self._changes = asyncio.Queue()
        self._task = asyncio.get_running_loop().create_task(self._handle_changes(), name="dledger-roles")

    async def shutdown(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        self._changes = None

    def _on_role_change(self, term: int, role: Role) -> None:
        if self._changes is not None:
            self._changes.put_nowait((term, role))

    async def _handle_changes(self) -> None:
        assert self._changes is not None
        while True:
            term, role = await self._changes.get()
            started = time.monotonic()
            store_config = self.broker.store_config
            _log.info("handling the DLedger role change: term %d, %s (broker role %s)", term, role.name,
                      store_config.broker_role)
            try:
                done = await self._handle(role)
            except asyncio.CancelledError:
                raise
            except Exception:
                _log.exception("handling the DLedger role change to %s in term %d failed", role.name, term)
                continue
            _log.info("handled the DLedger role change: term %d, %s, %s, broker role %s, brokerId %d, %.0f ms", term,
                      role.name, "done" if done else "given up", store_config.broker_role,
                      self.broker.config.broker_id, (time.monotonic() - started) * 1000)

    async def _handle(self, role: Role) -> bool:
        if role is Role.CANDIDATE:
            if self.broker.store_config.broker_role != SLAVE:
                await self.change_to_slave()
        elif role is Role.FOLLOWER:
            await self.change_to_slave()
        elif role is Role.LEADER:
            if not await self._caught_up():
                return False
            self.broker.store.recover_topic_queue_table()
            await self.change_to_master()
        return True

    async def _caught_up(self) -> bool:
        """Wait until the leader's whole ledger is committed and dispatched; False when it stops leading."""
        server = self.log.server
        while True:
            if not server.is_leader:
                return False
            if server.ledger_end_index == -1:
                return True
            if (server.ledger_end_index == server.committed_index
                    and self.broker.store.dispatch_behind_bytes() == 0):
                return True
            await asyncio.sleep(CATCH_UP_CHECK_S)

    async def change_to_slave(self) -> None:
        broker = self.broker
        broker_id = self.log.slave_broker_id
        _log.info("changing to slave: brokerName %s, brokerId %d", broker.config.broker_name, broker_id)
        broker.config.broker_id = broker_id
        broker.store_config.broker_role = SLAVE
        # Off the loop: the schedule thread's puts hop onto the loop, which must keep running while it stops.
        await asyncio.to_thread(broker.store.handle_schedule_service, False)
        broker.replication.follow_master()
        await broker.register_broker_all(check_order=True)

    async def change_to_master(self) -> None:
        broker = self.broker
        _log.info("changing to master: brokerName %s", broker.config.broker_name)
        broker.replication.stop_following()
        broker.store.handle_schedule_service(master=True)
        broker.config.broker_id = MASTER_ID
        broker.store_config.broker_role = SYNC_MASTER
        await broker.register_broker_all(check_order=True)
