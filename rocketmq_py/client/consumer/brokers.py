"""Broker look-ups a consumer makes in the client instance's tables (Java's MQClientInstance
findBrokerAddressInSubscribe, findBrokerAddrByTopic and MQAdminImpl's offset queries)."""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rocketmq_py.common.message_queue import MessageQueue
from rocketmq_py.common.route import MASTER_ID, PermName
from rocketmq_py.errors import BrokerNotFoundError

if TYPE_CHECKING:
    from rocketmq_py.client.instance import MQClientInstance
    from rocketmq_py.common.route import TopicRouteData


@dataclass(frozen=True)
class FoundBroker:
    addr: str
    slave: bool
    version: int


def find_broker_in_subscribe(instance: "MQClientInstance", broker_name: str, broker_id: int = MASTER_ID,
                             only_this_broker: bool = False) -> FoundBroker | None:
    addrs = instance.broker_addrs.get(broker_name)
    if not addrs:
        return None
    addr = addrs.get(broker_id)
    slave = broker_id != MASTER_ID
    if addr is None and slave:
        addr = addrs.get(broker_id + 1)
    if addr is None:
        if only_this_broker:
            return None
        broker_id, addr = next(iter(sorted(addrs.items())))
        slave = broker_id != MASTER_ID
    return FoundBroker(addr, slave, instance.broker_versions.get(addr, 0))


async def broker_for_queue(instance: "MQClientInstance", queue: MessageQueue, broker_id: int = MASTER_ID,
                           only_this_broker: bool = True) -> FoundBroker:
    """The broker serving ``queue``, refreshing the topic's route once when it is unknown."""
    found = find_broker_in_subscribe(instance, queue.broker_name, broker_id, only_this_broker)
    if found is None:
        await instance.update_topic_route(queue.topic)
        found = find_broker_in_subscribe(instance, queue.broker_name, broker_id, False)
    if found is None:
        raise BrokerNotFoundError(
            f"the broker {queue.broker_name!r} of {queue} is not known: is it running and registered with "
            "the name server?"
        )
    return found


async def master_for_queue(instance: "MQClientInstance", queue: MessageQueue) -> str:
    """The master address of ``queue``'s broker (Java's MQAdminImpl uses findBrokerAddressInPublish)."""
    addr = instance.find_broker_address_in_publish(queue.broker_name)
    if addr is None:
        await instance.update_topic_route(queue.topic)
        addr = instance.find_broker_address_in_publish(queue.broker_name)
    if addr is None:
        raise BrokerNotFoundError(f"the broker {queue.broker_name!r} of {queue} is not known")
    return addr


def any_broker_of_topic(instance: "MQClientInstance", topic: str) -> str | None:
    """A random broker of ``topic``'s route, its master when there is one (Java's findBrokerAddrByTopic)."""
    route = instance.topic_routes.get(topic)
    if route is None or not route.broker_datas:
        return None
    broker = random.choice(route.broker_datas)
    addr = broker.broker_addrs.get(MASTER_ID)
    if addr is None and broker.broker_addrs:
        addr = random.choice(list(broker.broker_addrs.values()))
    return addr


def subscribe_queues(topic: str, route: TopicRouteData) -> set[MessageQueue]:
    """The readable queues of a route (Java's topicRouteData2TopicSubscribeInfo)."""
    return {
        MessageQueue(topic, queue_data.broker_name, queue_id)
        for queue_data in route.queue_datas if PermName.is_readable(queue_data.perm)
        for queue_id in range(queue_data.read_queue_nums)
    }
