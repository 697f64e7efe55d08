"""Where a topic can be written (Java's TopicPublishInfo and MQClientInstance.topicRouteData2TopicPublishInfo)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rocketmq_py.common.message_queue import MessageQueue

if TYPE_CHECKING:
    from rocketmq_py.common.route import TopicRouteData


class QueueIndex:
    """A rotating queue index that starts at a random place (Java's ThreadLocalIndex, but one per topic).

    The loop and the threads of the blocking producer share it without a lock: two sends at the same
    moment may take the same queue, which only bends the round robin, as two Java threads' indexes do.
    """

    __slots__ = ("value",)

    def __init__(self) -> None:
        import random  # lazy: see rocketmq_py/_lazy.py

        self.value = random.randrange(0, 1 << 31)

    def next(self) -> int:
        self.value = (self.value + 1) & 0x7FFFFFFF
        return self.value


@dataclass
class TopicPublishInfo:
    message_queues: list[MessageQueue] = field(default_factory=list)
    order_topic: bool = False
    have_topic_router_info: bool = False
    route: TopicRouteData | None = None
    index: QueueIndex = field(default_factory=QueueIndex)

    def ok(self) -> bool:
        return bool(self.message_queues)

    def select_one(self, last_broker_name: str | None = None) -> MessageQueue | None:
        """Round robin; skips the queues of ``last_broker_name`` (the broker that just failed) when it can."""
        queues = self.message_queues
        if not queues:
            return None
        if last_broker_name is not None:
            for _ in range(len(queues)):
                candidate = queues[self.index.next() % len(queues)]
                if candidate.broker_name != last_broker_name:
                    return candidate
        return queues[self.index.next() % len(queues)]

    def write_queue_nums(self, broker_name: str) -> int:
        if self.route is None:
            return -1
        for queue_data in self.route.queue_datas:
            if queue_data.broker_name == broker_name:
                return queue_data.write_queue_nums
        return -1


def publish_info_from_route(topic: str, route: TopicRouteData) -> TopicPublishInfo:
    # lazy: see rocketmq_py/_lazy.py
    from rocketmq_py.common.route import MASTER_ID, PermName

    info = TopicPublishInfo(route=route)
    if route.order_topic_conf:
        for item in route.order_topic_conf.split(";"):
            name, _, count = item.partition(":")
            if name and count.strip().isdigit():
                info.message_queues.extend(MessageQueue(topic, name, i) for i in range(int(count)))
        info.order_topic = True
    else:
        masters = {b.broker_name for b in route.broker_datas if MASTER_ID in b.broker_addrs}
        for queue_data in sorted(route.queue_datas, key=lambda q: q.broker_name):
            if not PermName.is_writeable(queue_data.perm) or queue_data.broker_name not in masters:
                continue
            info.message_queues.extend(
                MessageQueue(topic, queue_data.broker_name, i) for i in range(queue_data.write_queue_nums)
            )
    info.have_topic_router_info = True
    return info
