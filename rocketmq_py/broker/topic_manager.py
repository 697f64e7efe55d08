"""The broker's topics (Java's broker/topic/TopicConfigManager): ``topics.json`` plus the system topics.

At start the broker holds the topics Java's broker creates (SELF_TEST_TOPIC,
TBW102 when auto-creation is on, BenchmarkTest, the cluster and broker name
topics, OFFSET_MOVED_EVENT, SCHEDULE_TOPIC_XXXX, the trace and reply topics),
then the ones of ``topics.json``. A send to an unknown topic creates it from
its default topic (TBW102) when that one carries PERM_INHERIT; retry and DLQ
topics are created on demand. Every change moves the data version on and is
persisted; ``on_created`` is called after a topic was created so the broker
can register with the name servers at once.
"""
from __future__ import annotations

import logging
from typing import Callable

from rocketmq_py.broker.config import BrokerConfig
from rocketmq_py.common import topic as topics
from rocketmq_py.common.data_version import DataVersion
from rocketmq_py.common.route import PermName
from rocketmq_py.common.topic_config import TopicConfig, TopicConfigSerializeWrapper
from rocketmq_py.store import TopicConfigTable

_log = logging.getLogger(__name__)

SCHEDULE_TOPIC_QUEUE_NUM = 18
PERM_RW = PermName.READ | PermName.WRITE


class TopicConfigManager:
    def __init__(self, config: BrokerConfig, config_dir: str, on_created: Callable[[], None] | None = None) -> None:
        self.config = config
        self.file = TopicConfigTable(config_dir)
        self.on_created = on_created
        #: Topics clients may not create or delete (Java's TopicValidator system topic set, grown at start).
        self.system_topics: set[str] = set(topics.SYSTEM_TOPICS)
        for topic_config in self._builtin_topics():
            self.system_topics.add(topic_config.topic_name)
            self.file.put(topic_config)

    def _builtin_topics(self) -> list[TopicConfig]:
        config = self.config
        built = [TopicConfig(topics.RMQ_SYS_SELF_TEST_TOPIC, 1, 1)]
        if config.auto_create_topic_enable:
            built.append(TopicConfig(topics.AUTO_CREATE_TOPIC_KEY_TOPIC, config.default_topic_queue_nums,
                                     config.default_topic_queue_nums, PermName.INHERIT | PERM_RW))
        built.append(TopicConfig(topics.RMQ_SYS_BENCHMARK_TOPIC, 1024, 1024))
        cluster_perm = PermName.INHERIT | (PERM_RW if config.cluster_topic_enable else 0)
        built.append(TopicConfig(config.broker_cluster_name, perm=cluster_perm))
        broker_perm = PermName.INHERIT | (PERM_RW if config.broker_topic_enable else 0)
        built.append(TopicConfig(config.broker_name, 1, 1, broker_perm))
        built.append(TopicConfig(topics.RMQ_SYS_OFFSET_MOVED_EVENT, 1, 1))
        built.append(TopicConfig(topics.RMQ_SYS_SCHEDULE_TOPIC, SCHEDULE_TOPIC_QUEUE_NUM, SCHEDULE_TOPIC_QUEUE_NUM))
        if config.trace_topic_enable:
            built.append(TopicConfig(config.msg_trace_topic_name, 1, 1))
        built.append(TopicConfig(topics.reply_topic(config.broker_cluster_name), 1, 1))
        return built

    # --- persistence ---------------------------------------------------------------------------

    def load(self) -> None:
        """Add the topics of ``topics.json`` (they win over the built-in ones, as in Java)."""
        builtin = dict(self.file.table)
        if self.file.load():
            for name, topic_config in builtin.items():
                self.file.table.setdefault(name, topic_config)
            _log.info("loaded %d topics from %s", len(self.file.table), self.file.path)

    def persist(self) -> None:
        self.file.persist()

    @property
    def table(self) -> dict[str, TopicConfig]:
        return self.file.table

    @property
    def data_version(self) -> DataVersion:
        return self.file.data_version

    def wrapper(self) -> TopicConfigSerializeWrapper:
        return TopicConfigSerializeWrapper(dict(self.file.table), self.file.data_version)

    def encode(self, pretty: bool = False) -> str:
        return self.file.encode(pretty)

    # --- lookups -------------------------------------------------------------------------------

    def select(self, topic: str) -> TopicConfig | None:
        return self.file.table.get(topic)

    def is_system_topic(self, topic: str) -> bool:
        return topic in self.system_topics or topic.startswith(topics.SYSTEM_TOPIC_PREFIX)

    def is_order_topic(self, topic: str) -> bool:
        topic_config = self.file.table.get(topic)
        return topic_config is not None and topic_config.order

    # --- changes -------------------------------------------------------------------------------

    def _created(self, topic_config: TopicConfig) -> TopicConfig:
        self.file.put(topic_config)
        self.file.data_version.next_version()
        self.persist()
        if self.on_created is not None:
            self.on_created()
        return topic_config

    def create_in_send(self, topic: str, default_topic: str, remote_address: str, client_queue_nums: int,
                       topic_sys_flag: int = 0) -> TopicConfig | None:
        """Create ``topic`` from ``default_topic`` on a send (Java's createTopicInSendMessageMethod)."""
        existing = self.file.table.get(topic)
        if existing is not None:
            return existing
        default_config = self.file.table.get(default_topic)
        if default_config is None:
            _log.warning("cannot create topic %s: the default topic %s does not exist (producer %s)", topic,
                         default_topic, remote_address)
            return None
        if default_topic == topics.AUTO_CREATE_TOPIC_KEY_TOPIC and not self.config.auto_create_topic_enable:
            default_config.perm = PERM_RW
        if not default_config.perm & PermName.INHERIT:
            _log.warning("cannot create topic %s: the default topic %s has no inherit permission (perm %d, "
                         "producer %s)", topic, default_topic, default_config.perm, remote_address)
            return None
        queue_nums = max(0, min(client_queue_nums, default_config.write_queue_nums))
        created = TopicConfig(topic, queue_nums, queue_nums, default_config.perm & ~PermName.INHERIT,
                              default_config.topic_filter_type, topic_sys_flag)
        _log.info("created topic %s from default topic %s for producer %s: %s", topic, default_topic,
                  remote_address, created)
        return self._created(created)

    def create_in_send_back(self, topic: str, queue_nums: int, perm: int, topic_sys_flag: int = 0) -> TopicConfig:
        """Create a retry, DLQ or system topic if needed (Java's createTopicInSendMessageBackMethod)."""
        existing = self.file.table.get(topic)
        if existing is not None:
            return existing
        _log.info("created topic %s with %d queues, perm %d", topic, queue_nums, perm)
        return self._created(TopicConfig(topic, queue_nums, queue_nums, perm, topic_sys_flag=topic_sys_flag))

    def update(self, topic_config: TopicConfig) -> None:
        old = self.file.table.get(topic_config.topic_name)
        self.file.put(topic_config)
        _log.info("%s topic config %s", "updated" if old else "created", topic_config)
        self.file.data_version.next_version()
        self.persist()

    def delete(self, topic: str) -> bool:
        old = self.file.table.pop(topic, None)
        if old is None:
            _log.warning("delete topic %s: it does not exist", topic)
            return False
        _log.info("deleted topic config %s", old)
        self.file.data_version.next_version()
        self.persist()
        return True

    def update_order_topics(self, order_topics: set[str]) -> None:
        """Mark exactly the topics the name server's ORDER_TOPIC_CONFIG names as ordered."""
        changed = False
        for name, topic_config in self.file.table.items():
            order = name in order_topics
            if topic_config.order != order:
                topic_config.order = order
                changed = True
        if changed:
            self.file.data_version.next_version()
            self.persist()
