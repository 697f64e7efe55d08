"""Consumer groups and their committed offsets (Java's broker/subscription/SubscriptionGroupManager and
broker/offset/ConsumerOffsetManager), over ``subscriptionGroup.json`` and ``consumerOffset.json``.

A group a client names is created on first use when ``autoCreateSubscriptionGroup``
is on (and always for the ``CID_RMQ_SYS_`` groups). Offsets are kept in memory and
written by the broker every ``flushConsumerOffsetInterval`` (5 s) and at shutdown.
"""
from __future__ import annotations

import logging
from typing import Iterator

from rocketmq_py.broker.config import BrokerConfig
from rocketmq_py.common.data_version import DataVersion
from rocketmq_py.common.subscription_group import SubscriptionGroupConfig
from rocketmq_py.store import TOPIC_GROUP_SEPARATOR, ConsumerOffsetTable, SubscriptionGroupTable

_log = logging.getLogger(__name__)

TOOLS_CONSUMER_GROUP = "TOOLS_CONSUMER"
FILTERSRV_CONSUMER_GROUP = "FILTERSRV_CONSUMER"
SELF_TEST_CONSUMER_GROUP = "SELF_TEST_C_GROUP"
ONS_HTTP_PROXY_GROUP = "CID_ONS-HTTP-PROXY"
CID_ONSAPI_PULL_GROUP = "CID_ONSAPI_PULL"
CID_ONSAPI_PERMISSION_GROUP = "CID_ONSAPI_PERMISSION"
CID_ONSAPI_OWNER_GROUP = "CID_ONSAPI_OWNER"
CID_RMQ_SYS_PREFIX = "CID_RMQ_SYS_"


def is_sys_consumer_group(group: str) -> bool:
    return group.startswith(CID_RMQ_SYS_PREFIX)


class SubscriptionGroupManager:
    def __init__(self, config: BrokerConfig, config_dir: str) -> None:
        self.config = config
        self.file = SubscriptionGroupTable(config_dir)
        for name in (TOOLS_CONSUMER_GROUP, FILTERSRV_CONSUMER_GROUP, SELF_TEST_CONSUMER_GROUP, ONS_HTTP_PROXY_GROUP,
                     CID_ONSAPI_PULL_GROUP, CID_ONSAPI_PERMISSION_GROUP, CID_ONSAPI_OWNER_GROUP):
            self.file.table[name] = SubscriptionGroupConfig(name)

    def load(self) -> None:
        builtin = dict(self.file.table)
        if self.file.load():
            for name, group in builtin.items():
                self.file.table.setdefault(name, group)

    def persist(self) -> None:
        self.file.persist()

    @property
    def table(self) -> dict[str, SubscriptionGroupConfig]:
        return self.file.table

    @property
    def data_version(self) -> DataVersion:
        return self.file.data_version

    def encode(self, pretty: bool = False) -> str:
        return self.file.encode(pretty)

    def find(self, group: str) -> SubscriptionGroupConfig | None:
        """The group's config, created on first use when auto-creation allows it."""
        found = self.file.table.get(group)
        if found is None and (self.config.auto_create_subscription_group or is_sys_consumer_group(group)):
            found = SubscriptionGroupConfig(group)
            self.file.put(found)
            _log.info("auto-created subscription group %s", group)
            self.file.data_version.next_version()
            self.persist()
        return found

    def update(self, group: SubscriptionGroupConfig) -> None:
        old = self.file.table.get(group.group_name)
        self.file.put(group)
        _log.info("%s subscription group %s", "updated" if old else "created", group)
        self.file.data_version.next_version()
        self.persist()

    def delete(self, group: str) -> bool:
        old = self.file.table.pop(group, None)
        if old is None:
            _log.warning("delete subscription group %s: it does not exist", group)
            return False
        _log.info("deleted subscription group %s", old)
        self.file.data_version.next_version()
        self.persist()
        return True


class ConsumerOffsetManager:
    def __init__(self, config_dir: str) -> None:
        self.file = ConsumerOffsetTable(config_dir)

    def load(self) -> None:
        self.file.load()

    def persist(self) -> None:
        self.file.persist()

    def encode(self, pretty: bool = False) -> str:
        return self.file.encode(pretty)

    @property
    def table(self) -> dict[str, dict[int, int]]:
        return self.file.offset_table

    def commit_offset(self, client_host: str, group: str, topic: str, queue_id: int, offset: int) -> None:
        """Raises ``ValueError`` for a value of the wrong type: one bad offset must never reach the file."""
        previous = self.file.query_offset(group, topic, queue_id)
        self.file.commit_offset(group, topic, queue_id, offset)
        if offset < previous:
            _log.debug("offset of %s@%s queue %d moved back from %d to %d by %s", topic, group, queue_id, previous,
                       offset, client_host)

    def query_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset, or -1."""
        return self.file.query_offset(group, topic, queue_id)

    def query_offsets(self, group: str, topic: str) -> dict[int, int]:
        return dict(self.file.offset_table.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", {}))

    def _pairs(self) -> Iterator[tuple[str, str, str]]:
        """``(key, topic, group)`` of each offset table key that names one topic and one group."""
        for key in list(self.file.offset_table):
            topic, sep, group = key.partition(TOPIC_GROUP_SEPARATOR)
            if sep and TOPIC_GROUP_SEPARATOR not in group:
                yield key, topic, group

    def offsets_by_topic(self) -> dict[str, dict[str, dict[int, int]]]:
        """topic -> group -> queue id -> committed offset; copies, so another thread may call it."""
        by_topic: dict[str, dict[str, dict[int, int]]] = {}
        for key, topic, group in self._pairs():
            offsets = self.file.offset_table.get(key)
            if offsets is not None:
                by_topic.setdefault(topic, {})[group] = dict(offsets)  # one C call, as list() in _pairs
        return by_topic

    def which_topic_by_consumer(self, group: str) -> set[str]:
        return {topic for _, topic, owner in self._pairs() if owner == group}

    def which_group_by_topic(self, topic: str) -> set[str]:
        return {group for _, owner, group in self._pairs() if owner == topic}

    def remove_offset(self, group: str) -> None:
        for key, _, owner in list(self._pairs()):
            if owner == group:
                del self.file.offset_table[key]
                _log.warning("removed the offsets of %s", key)

    def clone_offset(self, source_group: str, target_group: str, topic: str) -> None:
        offsets = self.file.offset_table.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{source_group}")
        if offsets is not None:
            self.file.offset_table[f"{topic}{TOPIC_GROUP_SEPARATOR}{target_group}"] = dict(offsets)
