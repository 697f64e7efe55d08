"""The producers and consumers connected to the broker (Java's broker/client ClientChannelInfo,
ProducerManager, ConsumerGroupInfo and ConsumerManager).

Clients register by heartbeat; a client is one connection. A connection that
closes, idles out or fails is dropped at once, and a client without a
heartbeat for 120 s is dropped (and its connection closed) by the scan the
broker runs every 10 s. When the consumers of a group change, ``on_change``
is called with the group and its connections, so the broker can send each of
them NOTIFY_CONSUMER_IDS_CHANGED.
"""
from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, TYPE_CHECKING

from rocketmq_py.common.clock import now_ms
from rocketmq_py.common.filter import SubscriptionData
from rocketmq_py.common.heartbeat_consumer import ConsumeFromWhere, ConsumeType, MessageModel

if TYPE_CHECKING:
    from rocketmq_py.remoting import RemotingConnection

_log = logging.getLogger(__name__)

CHANNEL_EXPIRED_TIMEOUT_MS = 120_000


@dataclass(eq=False)
class ClientChannelInfo:
    connection: RemotingConnection
    client_id: str
    language: int
    version: int
    last_update_timestamp: int = field(default_factory=now_ms)

    @property
    def client_addr(self) -> str:
        return self.connection.remote_address


class ProducerManager:
    def __init__(self) -> None:
        self.group_channel_table: dict[str, dict[RemotingConnection, ClientChannelInfo]] = {}
        #: client id -> its connection (to push reply messages to the requester)
        self.client_connection_table: dict[str, RemotingConnection] = {}
        self._counter = itertools.count()

    def register(self, group: str, info: ClientChannelInfo) -> None:
        channels = self.group_channel_table.setdefault(group, {})
        found = channels.get(info.connection)
        if found is None:
            channels[info.connection] = info
            self.client_connection_table[info.client_id] = info.connection
            _log.info("new producer connected, group %s client %s (%s)", group, info.client_id, info.client_addr)
        else:
            found.last_update_timestamp = now_ms()

    def unregister(self, group: str, connection: RemotingConnection) -> None:
        channels = self.group_channel_table.get(group)
        if not channels:
            return
        info = channels.pop(connection, None)
        if info is not None:
            self.client_connection_table.pop(info.client_id, None)
            _log.info("producer of group %s on %s unregistered", group, connection.remote_address)
        if not channels:
            del self.group_channel_table[group]

    def on_connection_closed(self, connection: RemotingConnection) -> None:
        for group, channels in list(self.group_channel_table.items()):
            info = channels.pop(connection, None)
            if info is not None:
                self.client_connection_table.pop(info.client_id, None)
                _log.info("producer of group %s on %s gone", group, connection.remote_address)
            if not channels:
                self.group_channel_table.pop(group, None)

    def scan_not_active(self) -> None:
        now = now_ms()
        for group, channels in list(self.group_channel_table.items()):
            for connection, info in list(channels.items()):
                if now - info.last_update_timestamp > CHANNEL_EXPIRED_TIMEOUT_MS:
                    del channels[connection]
                    self.client_connection_table.pop(info.client_id, None)
                    _log.warning("producer %s of group %s sent no heartbeat for 120 s: dropped", info.client_id, group)
                    connection.close()
            if not channels:
                self.group_channel_table.pop(group, None)

    def find_connection(self, client_id: str) -> RemotingConnection | None:
        return self.client_connection_table.get(client_id)

    def available_connection(self, group: str | None) -> RemotingConnection | None:
        """One open connection of ``group``, taken in turn (Java's getAvailableChannel)."""
        channels = list((self.group_channel_table.get(group) or {}).keys()) if group else []
        if not channels:
            return None
        start = next(self._counter)
        for step in range(len(channels)):
            connection = channels[(start + step) % len(channels)]
            if connection.is_open:
                return connection
        return None


class ConsumerGroupInfo:
    def __init__(self, group_name: str, consume_type: ConsumeType, message_model: MessageModel,
                 consume_from_where: ConsumeFromWhere) -> None:
        self.group_name = group_name
        self.consume_type = consume_type
        self.message_model = message_model
        self.consume_from_where = consume_from_where
        self.subscription_table: dict[str, SubscriptionData] = {}
        self.channel_info_table: dict[RemotingConnection, ClientChannelInfo] = {}
        self.last_update_timestamp = now_ms()

    def find_channel(self, client_id: str) -> ClientChannelInfo | None:
        for info in self.channel_info_table.values():
            if info.client_id == client_id:
                return info
        return None

    @property
    def connections(self) -> list[RemotingConnection]:
        return list(self.channel_info_table)

    def all_client_ids(self) -> list[str]:
        return [info.client_id for info in self.channel_info_table.values()]

    def update_channel(self, info: ClientChannelInfo, consume_type: ConsumeType, message_model: MessageModel,
                       consume_from_where: ConsumeFromWhere) -> bool:
        self.consume_type = consume_type
        self.message_model = message_model
        self.consume_from_where = consume_from_where
        updated = False
        old = self.channel_info_table.get(info.connection)
        if old is None:
            self.channel_info_table[info.connection] = info
            _log.info("new consumer connected, group %s %s %s client %s (%s)", self.group_name, consume_type.value,
                      message_model.value, info.client_id, info.client_addr)
            updated = True
            old = info
        elif old.client_id != info.client_id:
            _log.error("[BUG] consumer connection %s of group %s changed its client id from %s to %s",
                       info.client_addr, self.group_name, old.client_id, info.client_id)
            self.channel_info_table[info.connection] = info
            old = info
        self.last_update_timestamp = now_ms()
        old.last_update_timestamp = self.last_update_timestamp
        return updated

    def update_subscription(self, subscriptions: Iterable[SubscriptionData]) -> bool:
        updated = False
        subscriptions = list(subscriptions)
        for sub in subscriptions:
            old = self.subscription_table.get(sub.topic)
            if old is None:
                self.subscription_table[sub.topic] = sub
                updated = True
                _log.info("group %s subscribes to %s (%s)", self.group_name, sub.topic, sub.sub_string)
            elif sub.sub_version > old.sub_version:
                self.subscription_table[sub.topic] = sub
        topics = {sub.topic for sub in subscriptions}
        for topic in [t for t in self.subscription_table if t not in topics]:
            del self.subscription_table[topic]
            _log.warning("group %s no longer subscribes to %s", self.group_name, topic)
            updated = True
        self.last_update_timestamp = now_ms()
        return updated


ChangeListener = Callable[[str, list[Any]], None]


class ConsumerManager:
    def __init__(self, on_change: ChangeListener | None = None) -> None:
        self.consumer_table: dict[str, ConsumerGroupInfo] = {}
        self.on_change = on_change

    def group(self, group: str) -> ConsumerGroupInfo | None:
        return self.consumer_table.get(group)

    def find_subscription(self, group: str, topic: str) -> SubscriptionData | None:
        info = self.consumer_table.get(group)
        return info.subscription_table.get(topic) if info is not None else None

    def subscription_count(self, group: str) -> int:
        info = self.consumer_table.get(group)
        return len(info.subscription_table) if info is not None else 0

    def _changed(self, group: str, connections: list[Any]) -> None:
        if self.on_change is not None:
            self.on_change(group, connections)

    def register(self, group: str, info: ClientChannelInfo, consume_type: ConsumeType, message_model: MessageModel,
                 consume_from_where: ConsumeFromWhere, subscriptions: list[SubscriptionData],
                 notify: bool = True) -> bool:
        group_info = self.consumer_table.get(group)
        if group_info is None:
            group_info = ConsumerGroupInfo(group, consume_type, message_model, consume_from_where)
            self.consumer_table[group] = group_info
        channel_changed = group_info.update_channel(info, consume_type, message_model, consume_from_where)
        subscription_changed = group_info.update_subscription(subscriptions)
        changed = channel_changed or subscription_changed
        if changed and notify:
            self._changed(group, group_info.connections)
        return changed

    def unregister(self, group: str, connection: RemotingConnection, notify: bool = True) -> None:
        group_info = self.consumer_table.get(group)
        if group_info is None:
            return
        if group_info.channel_info_table.pop(connection, None) is not None:
            _log.info("consumer of group %s on %s unregistered", group, connection.remote_address)
        if not group_info.channel_info_table:
            self.consumer_table.pop(group, None)
            _log.info("group %s has no consumer left", group)
        if notify:
            self._changed(group, group_info.connections)

    def on_connection_closed(self, connection: RemotingConnection) -> None:
        for group, group_info in list(self.consumer_table.items()):
            if group_info.channel_info_table.pop(connection, None) is None:
                continue
            _log.warning("consumer of group %s on %s gone", group, connection.remote_address)
            if not group_info.channel_info_table:
                self.consumer_table.pop(group, None)
            self._changed(group, group_info.connections)

    def scan_not_active(self) -> None:
        now = now_ms()
        for group, group_info in list(self.consumer_table.items()):
            for connection, info in list(group_info.channel_info_table.items()):
                if now - info.last_update_timestamp > CHANNEL_EXPIRED_TIMEOUT_MS:
                    del group_info.channel_info_table[connection]
                    _log.warning("consumer %s of group %s sent no heartbeat for 120 s: dropped", info.client_id, group)
                    connection.close()
            if not group_info.channel_info_table:
                self.consumer_table.pop(group, None)

    def topic_consumed_by(self, topic: str) -> set[str]:
        return {group for group, info in self.consumer_table.items() if topic in info.subscription_table}

    def subscribed_topics(self) -> dict[str, list[str]]:
        """group -> the topics it subscribes to now; copies, so another thread may call it."""
        # list() copies a dict in one C call, which no other thread interrupts.
        return {group: list(info.subscription_table) for group, info in list(self.consumer_table.items())}
