"""The client instance shared by every producer and consumer of one client id (Java's MQClientInstance).

It owns the connections, the topic routes (refreshed every
``poll_name_server_interval``), the broker addresses learnt from them, the
heartbeats to the brokers (every ``heartbeat_broker_interval``) and the
processors for the requests brokers send to clients. An instance lives on one
event loop; :func:`get_instance` returns the one for a client id on the
running loop, creating it on first use.
"""
from __future__ import annotations

import asyncio
import logging
import os
import random
import time
import weakref
from typing import Any, Awaitable, Callable, Protocol, TypeVar

from rocketmq_py import codec
from rocketmq_py.client.api import MQClientAPI
from rocketmq_py.client.config import DEFAULT_INSTANCE_NAME, ClientConfig
from rocketmq_py.client.failure_log import FailureLog
from rocketmq_py.client.net import local_address
from rocketmq_py.client.reply import ReplyFutures
from rocketmq_py.common.acl import SessionCredentials
from rocketmq_py.common.codes import RequestCode
from rocketmq_py.common.headers.transaction import CheckTransactionStateRequestHeader
from rocketmq_py.common.heartbeat import HeartbeatData
from rocketmq_py.common.message import MessageConst
from rocketmq_py.common.route import MASTER_ID, TopicRouteData
from rocketmq_py.errors import NoNameServerError, RemotingError, RocketMQError, TopicNotExistError
from rocketmq_py.remoting.client import RemotingClient
from rocketmq_py.remoting.command import RemotingCommand
from rocketmq_py.remoting.config import RemotingClientConfig
from rocketmq_py.remoting.processor import ProcessorTable
from rocketmq_py.remoting.protocol import RequestContext

_log = logging.getLogger(__name__)
_T = TypeVar("_T")

INITIAL_ROUTE_POLL_DELAY_S = 0.01
INITIAL_HEARTBEAT_DELAY_S = 1.0


class InstanceMember(Protocol):
    """What a producer (or consumer) gives the instance it registers with."""

    def topics(self) -> set[str]:
        """Topics whose routes the instance keeps up to date for this member."""

    def on_route_changed(self, topic: str, route: TopicRouteData) -> None:
        """A topic's route changed (or was first learnt)."""


def build_client_id(config: ClientConfig) -> str:
    ip = config.client_ip or local_address()
    client_id = f"{ip}@{config.instance_name}"
    if config.unit_name:
        client_id += f"@{config.unit_name}"
    return client_id


def resolve_instance_name(config: ClientConfig) -> None:
    """Java's changeInstanceNameToPID: the default name becomes ``<pid>#<nanotime>``."""
    if config.instance_name == DEFAULT_INSTANCE_NAME:
        config.instance_name = f"{os.getpid()}#{time.monotonic_ns()}"


_INSTANCES: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, MQClientInstance]]" = (
    weakref.WeakKeyDictionary()
)


def get_instance(config: ClientConfig) -> "MQClientInstance":
    """The instance for ``config``'s client id on the running loop (created when there is none)."""
    loop = asyncio.get_running_loop()
    table = _INSTANCES.setdefault(loop, {})
    client_id = build_client_id(config)
    instance = table.get(client_id)
    if instance is None or instance.is_shut_down:
        instance = MQClientInstance(config, client_id)
        table[client_id] = instance
    return instance


class MQClientInstance:
    def __init__(self, config: ClientConfig, client_id: str) -> None:
        self.config = config
        self.client_id = client_id
        self.processors = ProcessorTable()
        # TLS, when on, covers every connection: name servers and brokers (as Java's useTLS).
        self.remoting = RemotingClient(
            self.processors, config=RemotingClientConfig(use_tls=config.use_tls, tls=config.tls_config),
        )
        credentials = None
        if config.access_key is not None and config.secret_key is not None:
            credentials = SessionCredentials(config.access_key, config.secret_key, config.security_token)
        self.api = MQClientAPI(
            self.remoting, config.mq_client_api_timeout, config.serialize_type_code(), credentials,
        )
        self.producers: dict[str, Any] = {}
        self.consumers: dict[str, Any] = {}
        #: The admin clients (Java's adminExtTable): they keep the instance alive, and need no heartbeat.
        self.admins: dict[str, object] = {}
        self.topic_routes: dict[str, TopicRouteData] = {}
        self.broker_addrs: dict[str, dict[int, str]] = {}
        self.broker_versions: dict[str, int] = {}
        self._namesrv_index = random.randrange(0, 1 << 16)
        self._route_lock = asyncio.Lock()
        self._heartbeat_lock = asyncio.Lock()
        self._tasks: list[asyncio.Task[None]] = []
        self._started = False
        self.is_shut_down = False
        #: Repeated route update and heartbeat failures, logged once per target and interval with a count.
        self._failures = FailureLog(_log, "client")
        # The consumer requests (rebalance notices, running info, offset resets) are registered by the
        # first consumer that joins (client.consumer.service): this layer does not import the consumers.
        self.processors.register(RequestCode.CHECK_TRANSACTION_STATE, self._on_check_transaction_state)
        self.reply_futures = ReplyFutures()
        self.processors.register(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, self.reply_futures.process)

    # --- lifecycle ---------------------------------------------------------------------

    def register_producer(self, group: str, producer: InstanceMember) -> bool:
        if group in self.producers:
            return False
        self.producers[group] = producer
        return True

    def register_consumer(self, group: str, consumer: InstanceMember) -> bool:
        if group in self.consumers:
            return False
        self.consumers[group] = consumer
        return True

    def register_admin(self, group: str, admin: object) -> bool:
        if group in self.admins:
            return False
        self.admins[group] = admin
        return True

    async def unregister_admin(self, group: str) -> None:
        """Forget the admin ``group``; shut the instance down when nothing uses it any more."""
        if self.admins.pop(group, None) is not None and self._unused():
            await self.shutdown()

    def _unused(self) -> bool:
        return not self.producers and not self.consumers and not self.admins

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._every(INITIAL_ROUTE_POLL_DELAY_S, self.config.poll_name_server_interval,
                                         self.update_all_routes)),
            loop.create_task(self._every(INITIAL_HEARTBEAT_DELAY_S, self.config.heartbeat_broker_interval,
                                         self.send_heartbeat_to_all_brokers)),
        ]

    async def _every(self, first_delay_s: float, period_ms: int, action: Any) -> None:
        await asyncio.sleep(first_delay_s)
        while True:
            try:
                await action()
            except asyncio.CancelledError:
                raise
            except Exception:
                _log.warning("scheduled %s failed", getattr(action, "__name__", action), exc_info=True)
            await asyncio.sleep(period_ms / 1000.0)

    async def unregister_producer(self, group: str) -> None:
        """Forget ``group``, tell every broker, and shut the instance down when nothing uses it any more."""
        if self.producers.pop(group, None) is None:
            return
        for addr in self._all_broker_addresses():
            try:
                await self.api.unregister_client(addr, self.client_id, producer_group=group)
            except RocketMQError as error:
                _log.warning("unregister producer %s at %s failed: %s", group, addr, error)
        if self._unused():
            await self.shutdown()

    async def unregister_consumer(self, group: str) -> None:
        """Forget the consumer ``group``, tell every broker (slaves too), and shut the instance down when nothing
        uses it any more."""
        if self.consumers.pop(group, None) is None:
            return
        for addr in self._all_broker_addresses(masters_only=False):
            try:
                await self.api.unregister_client(addr, self.client_id, consumer_group=group)
            except RocketMQError as error:
                _log.warning("unregister consumer %s at %s failed: %s", group, addr, error)
        if self._unused():
            await self.shutdown()

    async def shutdown(self) -> None:
        if self.is_shut_down:
            return
        self.is_shut_down = True
        self._failures.flush()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.remoting.shutdown()
        table = _INSTANCES.get(asyncio.get_running_loop(), {})
        if table.get(self.client_id) is self:
            del table[self.client_id]

    # --- routes ---------------------------------------------------------------------------

    async def get_topic_route(self, topic: str) -> TopicRouteData:
        """The route from a name server (see :meth:`call_namesrv`)."""
        return await self.call_namesrv(lambda addr: self.api.get_topic_route(addr, topic))

    async def call_namesrv(self, rpc: Callable[[str], Awaitable[_T]]) -> _T:
        """``rpc(address)`` on a name server, trying each configured address once, starting at the last good
        one, while the failure is a remoting one (no answer); an answer's error is raised as it is."""
        addresses = self.config.namesrv_addresses()
        if not addresses:
            raise NoNameServerError(
                "no name server address: pass namesrv_addr='host:9876' or set NAMESRV_ADDR"
            )
        last_error: Exception | None = None
        for attempt in range(len(addresses)):
            addr = addresses[(self._namesrv_index + attempt) % len(addresses)]
            try:
                result = await rpc(addr)
            except RemotingError as error:
                last_error = error
                continue
            self._namesrv_index = (self._namesrv_index + attempt) % len(addresses)
            return result
        assert last_error is not None
        raise last_error

    async def update_topic_route(self, topic: str, default_topic: str | None = None,
                                 default_queue_nums: int = 4) -> bool:
        """Refresh ``topic``'s route; with ``default_topic``, take that topic's route instead (the
        auto-create path through TBW102), each broker capped at ``default_queue_nums`` queues.
        True when a route was found."""
        async with self._route_lock:
            try:
                if default_topic is None:
                    route = await self.get_topic_route(topic)
                else:
                    route = await self.get_topic_route(default_topic)
                    for queue_data in route.queue_datas:
                        nums = min(default_queue_nums, queue_data.read_queue_nums)
                        queue_data.read_queue_nums = queue_data.write_queue_nums = nums
            except TopicNotExistError:
                _log.debug("no route for topic %s on the name server", topic)
                return False
            old = self.topic_routes.get(topic)
            for broker in route.broker_datas:
                self.broker_addrs[broker.broker_name] = dict(broker.broker_addrs)
            if old != route:
                self.topic_routes[topic] = route
            # Every member hears it, changed or not: one that joined after the route was cached has none yet
            # (Java's isNeedUpdateTopicRouteInfo).
            for member in (*self.producers.values(), *self.consumers.values()):
                if topic in member.topics():
                    member.on_route_changed(topic, route)
            return True

    async def update_all_routes(self) -> None:
        topics: set[str] = set()
        for member in (*self.producers.values(), *self.consumers.values()):
            topics.update(member.topics())
        for topic in topics:
            try:
                await self.update_topic_route(topic)
            except RocketMQError as error:
                self._failures.failed(f"route update of {topic}", error, "trying again at the next poll")
            else:
                self._failures.succeeded(f"route update of {topic}")

    def find_broker_address_in_publish(self, broker_name: str) -> str | None:
        addrs = self.broker_addrs.get(broker_name)
        if not addrs:
            return None
        return addrs.get(MASTER_ID)

    def _all_broker_addresses(self, masters_only: bool = True) -> list[str]:
        return [
            addr for addrs in self.broker_addrs.values() for broker_id, addr in addrs.items()
            if not masters_only or broker_id == MASTER_ID
        ]

    # --- heartbeats -------------------------------------------------------------------------

    def heartbeat_data(self) -> HeartbeatData:
        consumer_data = [c.consumer_data() for c in self.consumers.values()]
        return HeartbeatData(self.client_id, sorted(self.producers), consumer_data)

    async def send_heartbeat_to_all_brokers(self) -> None:
        if not self.producers and not self.consumers:
            return
        async with self._heartbeat_lock:
            heartbeat = self.heartbeat_data()
            masters_only = not heartbeat.consumer_data
            addresses = self._all_broker_addresses(masters_only)
            results = await asyncio.gather(
                *(self.api.send_heartbeat(addr, heartbeat) for addr in addresses), return_exceptions=True,
            )
            for addr, result in zip(addresses, results):
                if isinstance(result, BaseException):
                    self._failures.failed(f"heartbeat to {addr}", result, "trying again at the next heartbeat")
                else:
                    self._failures.succeeded(f"heartbeat to {addr}")
                    self.broker_versions[addr] = result

    # --- requests from brokers ------------------------------------------------------------------

    def _on_check_transaction_state(self, ctx: RequestContext, request: RemotingCommand) -> None:
        """CHECK_TRANSACTION_STATE (oneway): hand the half message to the producer of its group."""
        header = CheckTransactionStateRequestHeader.from_command(request)
        messages = codec.decode_store_records(request.body or b"", strict=False)
        if not messages:
            _log.warning("a transaction check from %s carried no message", ctx.remote_address)
            return None
        message = messages[0]
        unique = message.properties.get(MessageConst.UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        if unique:
            message.transaction_id = unique
        group = message.properties.get(MessageConst.PRODUCER_GROUP)
        producer = self.producers.get(group) if group else None
        check = getattr(producer, "check_transaction_state", None)
        if check is None:
            _log.warning("a transaction check for group %s came, but no transactional producer of it runs here",
                         group)
            return None
        check(ctx.remote_address, message, header)
        return None

    def select_producer(self, group: str) -> Any:
        return self.producers.get(group)
