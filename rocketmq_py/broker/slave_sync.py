"""A slave's copy of its master's metadata (Java's broker/slave/SlaveSynchronize).

Every 10 s (first after 3 s, as Java 4.9.8 schedules it) the slave asks its master for the topic
configs (GET_ALL_TOPIC_CONFIG, 21), the consumer offsets (GET_ALL_CONSUMER_OFFSET, 43), the delay
offsets (GET_ALL_DELAY_OFFSET, 45) and the subscription groups (GET_ALL_SUBSCRIPTIONGROUP_CONFIG, 201).
Topics and groups are replaced when the master's data version differs; the delay offsets file is
overwritten. Consumer offsets are replaced per ``topic@group`` (Java's ``putAll``): a group's entry on the
master replaces the slave's whole entry, even one committed to the slave later, while the master was down;
entries only the slave has stay. A consumer that kept running commits its own offsets to the master once it
is back, so only a consumer restarted before that reads again from the master's older offsets: duplicates,
never a skip. Each part that fails is logged and the others go on. The master's address comes from each
registration, as in Java: while no master is registered nothing is synchronised.
"""
from __future__ import annotations

import logging
import tempfile
from typing import TYPE_CHECKING

from rocketmq_py.common.codes import RequestCode, ResponseCode
from rocketmq_py.remoting import create_request
from rocketmq_py.store import (
    ConsumerOffsetTable,
    DelayOffsetTable,
    SubscriptionGroupTable,
    TopicConfigTable,
)

if TYPE_CHECKING:
    from rocketmq_py.broker.controller import BrokerController

_log = logging.getLogger(__name__)

SYNC_INITIAL_DELAY_S = 3.0
SYNC_PERIOD_S = 10.0
TIMEOUT_MS = 3000


class SlaveSynchronize:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker
        self._scratch = tempfile.gettempdir()  # never written: the tables below only decode
        #: Set once the master's consumer / delay offsets arrived since start (the forced clean waits for them).
        self.consumer_offsets_synced = False
        self.delay_offsets_synced = False

    async def sync_all(self, master_addr: str | None) -> None:
        if not master_addr or master_addr == self.broker.broker_addr:
            return
        for part in (self._sync_topics, self._sync_consumer_offsets, self._sync_delay_offsets, self._sync_groups):
            try:
                await part(master_addr)
            except Exception as error:  # one part failing must not stop the others
                _log.warning("slave synchronisation (%s) from %s failed: %r", part.__name__, master_addr, error)

    async def _fetch(self, master_addr: str, code: int) -> str:
        response = await self.broker.outer_api.remoting.invoke(master_addr, create_request(code), TIMEOUT_MS)
        if response.code != ResponseCode.SUCCESS:
            raise RuntimeError(f"code {response.code}: {response.remark}")
        return (response.body or b"").decode("utf-8")

    async def _sync_topics(self, master_addr: str) -> None:
        incoming = TopicConfigTable(self._scratch)
        incoming.decode(await self._fetch(master_addr, RequestCode.GET_ALL_TOPIC_CONFIG))
        topics = self.broker.topics
        if topics.data_version == incoming.data_version:
            return
        topics.file.table = incoming.table
        topics.file.data_version = incoming.data_version
        topics.persist()
        _log.info("updated the topic configs from the master %s (%d topics)", master_addr, len(incoming.table))

    async def _sync_consumer_offsets(self, master_addr: str) -> None:
        incoming = ConsumerOffsetTable(self._scratch)
        incoming.decode(await self._fetch(master_addr, RequestCode.GET_ALL_CONSUMER_OFFSET))
        self.broker.offsets.file.offset_table.update(incoming.offset_table)
        self.broker.offsets.persist()
        self.consumer_offsets_synced = True

    async def _sync_delay_offsets(self, master_addr: str) -> None:
        schedule = self.broker.store.schedule_service
        if schedule is None:
            return
        incoming = DelayOffsetTable(self._scratch)
        incoming.decode(await self._fetch(master_addr, RequestCode.GET_ALL_DELAY_OFFSET))
        schedule.offsets.offset_table = incoming.offset_table
        schedule.offsets.persist()
        self.delay_offsets_synced = True

    async def _sync_groups(self, master_addr: str) -> None:
        incoming = SubscriptionGroupTable(self._scratch)
        incoming.decode(await self._fetch(master_addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG))
        groups = self.broker.groups
        if groups.data_version == incoming.data_version:
            return
        groups.file.table = incoming.table
        groups.file.data_version = incoming.data_version
        groups.persist()
        _log.info("updated the subscription groups from the master %s", master_addr)
