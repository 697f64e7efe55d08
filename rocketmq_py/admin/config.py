"""The admin client's settings (Java's DefaultMQAdminExt), in Python spelling; times are in milliseconds."""
from __future__ import annotations

from dataclasses import dataclass

from rocketmq_py.client.config import ClientConfig
from rocketmq_py.common.topic import AUTO_CREATE_TOPIC_KEY_TOPIC


@dataclass
class AdminConfig(ClientConfig):
    """DefaultMQAdminExt's settings on top of :class:`ClientConfig` (name servers, ACL, TLS, instance name,
    ...); the defaults are Java's."""

    #: The name this admin registers under in its client instance (one admin per group and client id).
    admin_ext_group: str = "admin_ext_group"
    #: The topic whose brokers a topic created with ``create_topic`` goes to by default.
    create_topic_key: str = AUTO_CREATE_TOPIC_KEY_TOPIC
    #: The timeout of each admin request; consumer statistics, running info and direct consumption wait
    #: three times as long (they reach every broker, or a consumer through its broker).
    timeout_millis: int = 5_000
