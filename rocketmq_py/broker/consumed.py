"""What the consumers of each topic have consumed, as the store's forced clean asks it (our own; the rule
and the reasons it gives are in ``rocketmq_py.store.consumed``).

The broker, not the store, knows consumers, so it hands the store :meth:`ConsumerProgressView.snapshot`.
Whose progress counts for a topic, each a "group" with its next offset per queue:

* every group with an offset for the topic in ``consumerOffset.json``: ordinary groups, a group on its own
  ``%RETRY%group`` topic, and the transaction check (CID_RMQ_SYS_TRANS) on RMQ_SYS_TRANS_HALF_TOPIC and
  RMQ_SYS_TRANS_OP_HALF_TOPIC, whose offset passes a half message only once it is resolved or stored again;
* every group subscribed to the topic now (heartbeats), none of whose offsets means nothing consumed: a
  group that has not committed yet, or a broadcasting one (its offsets stay on its clients);
* on SCHEDULE_TOPIC_XXXX, also the delay service, at its ``delayOffset.json`` offsets (level n is queue
  n - 1; a level's offset passes a message only once it was stored again on its real topic).

Every other topic follows the same rule, so one no group has offsets for stays: %DLQ% topics, the trace
topic, OFFSET_MOVED_EVENT and TRANS_CHECK_MAX_TIME_TOPIC are read by people (by key or by tools), seldom by
a group. A group that left long ago but kept its offsets still counts; ``mqadmin deleteSubGroup -r true``
removes them.

A slave (brokerRole=SLAVE) has these offsets from its master's synchronisation every 10 s; they lag the
master's, which only keeps more. Before the first synchronisation since start they are whatever the slave
wrote last, possibly from before an offset reset on the master: until then the answer is "not known" (None)
and nothing counts as consumed (nothing on SCHEDULE_TOPIC_XXXX until the delay offsets arrived).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from rocketmq_py.common.topic import RMQ_SYS_SCHEDULE_TOPIC
from rocketmq_py.store import SLAVE

if TYPE_CHECKING:
    from rocketmq_py.broker.controller import BrokerController

#: The delay service's name as a group, in the forced clean's log line.
DELAY_SERVICE_GROUP = "(the delay service, delayOffset.json)"


class ConsumerProgressView:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def snapshot(self) -> dict[str, dict[str, dict[int, int]]] | None:
        """topic -> group -> queue id -> next offset; None while a slave has not had its master's offsets.

        Runs on the store's clean thread while the event loop changes the tables, so it reads copies."""
        broker = self.broker
        slave_sync = broker.replication.slave_sync
        slave = broker.store_config.broker_role == SLAVE
        if slave and not slave_sync.consumer_offsets_synced:
            return None
        progress = broker.offsets.offsets_by_topic()
        for group, topics in broker.consumers.subscribed_topics().items():
            for topic in topics:
                progress.setdefault(topic, {}).setdefault(group, {})
        schedule = broker.store.schedule_service
        delays: dict[int, int] = {}
        if schedule is not None and not (slave and not slave_sync.delay_offsets_synced):
            delays = dict(schedule.offsets.offset_table)  # one C call, which no other thread interrupts
        progress.setdefault(RMQ_SYS_SCHEDULE_TOPIC, {})[DELAY_SERVICE_GROUP] = {
            level - 1: offset for level, offset in delays.items()}
        return progress
