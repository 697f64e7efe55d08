"""The broker's part in master-slave replication (Java's BrokerController HA wiring).

A master (ASYNC_MASTER, SYNC_MASTER) runs the store's :class:`~rocketmq_py.store.ha.HAService` on
``haListenPort``; a slave runs the :class:`~rocketmq_py.store.ha.HAClient`, which follows the master's
HA address that the name server answers each registration with (unless ``haMasterAddress`` fixes it),
and keeps the master's broker address for reads that fall back to it.

A DLedger broker runs neither (its CommitLog replicates itself): its role handler starts and stops the
slave's synchronisation of metadata as its member follows or leads (:meth:`follow_master`).
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from rocketmq_py.broker.slave_sync import SYNC_INITIAL_DELAY_S, SYNC_PERIOD_S, SlaveSynchronize
from rocketmq_py.store import SLAVE, HAClient, HAService

if TYPE_CHECKING:
    from rocketmq_py.broker.controller import BrokerController
    from rocketmq_py.broker.outer_api import RegisterBrokerResult

_log = logging.getLogger(__name__)


class BrokerReplication:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker
        self.service: HAService | None = None
        self.client: HAClient | None = None
        #: A slave's master (its broker address, from the name server), for SlaveSynchronize.
        self.master_addr: str | None = None
        self.slave_sync = SlaveSynchronize(broker)
        #: listenPort 0 (tests, quickstart): any free port will do for HA too, listenPort + 1 may be taken.
        self._ephemeral_port = broker.config.listen_port == 0
        self._sync_task: asyncio.Task[None] | None = None
        self._dledger = broker.store_config.enable_d_leger_commit_log

    @property
    def is_slave(self) -> bool:
        return self.broker.store_config.broker_role == SLAVE

    async def start(self) -> None:
        store = self.broker.store
        if self._dledger:
            return
        if self.is_slave:
            self.client = HAClient(store)
            self.client.start()
            self.follow_master()
        else:
            config = self.broker.config
            self.service = HAService(store, config.bind_address, config.ha_listen_port)
            try:
                await self.service.start()
            except OSError:
                if not self._ephemeral_port:
                    raise
                self.service.port = 0
                await self.service.start()
                config.ha_listen_port = self.service.port
            store.ha_service = self.service

    def follow_master(self) -> None:
        """Synchronise the master's metadata periodically (from the master the next registration names)."""
        if self._sync_task is not None and not self._sync_task.done():
            self._sync_task.cancel()
        self.master_addr = None
        self._sync_task = asyncio.get_running_loop().create_task(self._sync_periodically(), name="slave-sync")

    def stop_following(self) -> None:
        """A DLedger broker that leads: no master to synchronise from."""
        if self._sync_task is not None:
            self._sync_task.cancel()
            self._sync_task = None
        self.master_addr = None

    async def _sync_periodically(self) -> None:
        await asyncio.sleep(SYNC_INITIAL_DELAY_S)
        while True:
            await self.slave_sync.sync_all(self.master_addr)
            await asyncio.sleep(SYNC_PERIOD_S)

    async def shutdown(self) -> None:
        if self._sync_task is not None:
            self._sync_task.cancel()
            await asyncio.gather(self._sync_task, return_exceptions=True)
            self._sync_task = None
        if self.client is not None:
            await self.client.shutdown()
        if self.service is not None:
            await self.service.shutdown()
            self.broker.store.ha_service = None

    def on_registered(self, result: RegisterBrokerResult) -> None:
        """A name server answered a registration: a slave learns its master's addresses from it."""
        if self.client is None and not (self._dledger and self.is_slave):
            return
        # As Java's slave, take the answer as it is: no master registered (stopped, or dead and dropped by the
        # name server) stops the metadata synchronisation until a registration names one again.
        if result.master_addr != self.master_addr:
            _log.info("the master of this slave is %s", result.master_addr or "not registered")
            self.master_addr = result.master_addr
        if self.client is not None and not self.broker.store_config.ha_master_address:
            self.client.update_master_address(result.ha_server_addr)

    def runtime_info(self) -> dict[str, str]:
        """Java's HA entries of GET_BROKER_RUNTIME_INFO."""
        if self.service is not None:
            return {"slaveFallBehindMuch": str(self.service.slave_fall_behind())}
        if self.master_addr:
            return {"masterAddr": self.master_addr}
        return {}
