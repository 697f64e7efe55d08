"""The broker process (Java's broker/BrokerController and ClientHousekeepingService).

Owns the message store, the topic, group and offset managers, the client
registries, the processors on the remoting server (and on the "VIP" server at
listenPort - 2, without PULL_MESSAGE, as Java), the long-polling hold
service, the transaction check and the periodic work:

* register with every name server at start, every ``registerNameServerPeriod``
  (30 s, bounded to 10..60 s) and at once after a topic was created;
* persist consumer offsets every ``flushConsumerOffsetInterval`` (5 s);
* drop clients without heartbeat for 120 s (scan every 10 s), and at once
  when their connection closes;
* sample the counters every second, check suspended pulls every 5 s.

``await start()`` then ``await shutdown()`` (or ``async with``).
"""
from __future__ import annotations

import asyncio
import inspect
import logging
from dataclasses import replace
from typing import Any, Callable

from rocketmq_py.acl import WATCH_INTERVAL_S, PlainAccessValidator
from rocketmq_py.broker.clients import ConsumerManager, ProducerManager
from rocketmq_py.broker.config import DLEDGER_UNDECIDED_ID, BrokerConfig, settle
from rocketmq_py.broker.consumed import ConsumerProgressView
from rocketmq_py.broker.dledger_roles import DLedgerRoles
from rocketmq_py.broker.group_manager import ConsumerOffsetManager, SubscriptionGroupManager
from rocketmq_py.broker.lanes import BrokerLanes
from rocketmq_py.broker.long_polling import PullRequestHoldService
from rocketmq_py.broker.metrics import BrokerMetrics
from rocketmq_py.broker.outer_api import BrokerOuterAPI
from rocketmq_py.broker.processors.acl import AclAdminProcessor
from rocketmq_py.broker.processors.admin import AdminBrokerProcessor
from rocketmq_py.broker.processors.broker_stats import BrokerStatsProcessor
from rocketmq_py.broker.processors.clients import ClientManageProcessor
from rocketmq_py.broker.processors.pull import PullMessageProcessor
from rocketmq_py.broker.processors.query import QueryMessageProcessor
from rocketmq_py.broker.processors.reply import ReplyMessageProcessor
from rocketmq_py.broker.processors.send import SendMessageProcessor
from rocketmq_py.broker.processors.stats import StatsProcessor
from rocketmq_py.broker.processors.transaction import EndTransactionProcessor
from rocketmq_py.broker.rebalance_lock import RebalanceLockManager
from rocketmq_py.broker.replication import BrokerReplication
from rocketmq_py.broker.front_sends import SendPlacement
from rocketmq_py.broker.send_fast import SendFastPath
from rocketmq_py.broker.stats import BrokerStats
from rocketmq_py.broker.topic_manager import TopicConfigManager
from rocketmq_py.broker.transaction import TransactionalMessageService
from rocketmq_py.common.codes import RequestCode
from rocketmq_py.common.data_version import DataVersion
from rocketmq_py.common.headers.consumer import NotifyConsumerIdsChangedRequestHeader
from rocketmq_py.common.metrics_http import MetricsHttpServer
from rocketmq_py.common.route import PermName
from rocketmq_py.common.topic_config import TopicConfig, TopicConfigSerializeWrapper
from rocketmq_py.dledger.commit_log import DLedgerCommitLog
from rocketmq_py.errors import ConfigError
from rocketmq_py.remoting import (
    ConnectionListener,
    ProcessorTable,
    RemotingConnection,
    RemotingServer,
    RemotingServerConfig,
    create_request,
)
from rocketmq_py.remoting.server import probe_bind
from rocketmq_py.store import SLAVE, MessageStore, MessageStoreConfig

_log = logging.getLogger(__name__)

HOUSEKEEPING_INTERVAL_S = 10
HOLD_CHECK_INTERVAL_S = 5


class _ClientHousekeeping(ConnectionListener):
    """Drops the producers and consumers of a connection that closed, idled out or failed."""

    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def _gone(self, connection: RemotingConnection) -> None:
        self.broker.producers.on_connection_closed(connection)
        self.broker.consumers.on_connection_closed(connection)

    def on_close(self, connection: RemotingConnection) -> None:
        self._gone(connection)

    def on_idle(self, connection: RemotingConnection) -> None:
        self._gone(connection)

    def on_exception(self, connection: RemotingConnection, error: BaseException) -> None:
        self._gone(connection)


class BrokerController:
    def __init__(self, config: BrokerConfig | None = None, store_config: MessageStoreConfig | None = None) -> None:
        self.config = config or BrokerConfig()
        self.store_config = store_config or MessageStoreConfig()
        settle(self.config, self.store_config)
        if self.config.server_worker_processes is None:
            # Embedded (the Python API): a library starts no processes its caller did not ask for. The
            # rocketmq-py broker command has chosen them from the cores by now (settle_worker_processes).
            self.config.server_worker_processes = 0
        self.config_version = DataVersion()
        config_dir = str(self.store_config.config_dir)
        self.consumer_progress = ConsumerProgressView(self)
        #: The DLedger CommitLog when enableDLegerCommitLog is true: the member, and the roles it gives the broker.
        self.dledger = DLedgerCommitLog(self.store_config) if self.store_config.enable_d_leger_commit_log else None
        self.store = MessageStore(self.store_config, consumer_progress=self.consumer_progress.snapshot,
                                  commit_log=self.dledger)
        self.dledger_roles = DLedgerRoles(self, self.dledger) if self.dledger is not None else None
        self.topics = TopicConfigManager(self.config, config_dir, on_created=self.register_broker_all_soon)
        self.groups = SubscriptionGroupManager(self.config, config_dir)
        self.offsets = ConsumerOffsetManager(config_dir)
        self.producers = ProducerManager()
        self.consumers = ConsumerManager(on_change=self._consumer_ids_changed)
        self.locks = RebalanceLockManager()
        self.stats = BrokerStats(self.config.broker_cluster_name)
        self.transactions = TransactionalMessageService(self)
        self.outer_api = BrokerOuterAPI()
        self.send_processor = SendMessageProcessor(self)
        self.send_fast = SendFastPath(self.send_processor)
        self.pull_processor = PullMessageProcessor(self)
        self.hold_service = PullRequestHoldService(self.pull_processor.replay, self.store.get_max_offset_in_queue)
        self.admin_processor = AdminBrokerProcessor(self)
        #: The ACL check of every request (Java's initialAcl), when aclEnable=true.
        self.acl = (PlainAccessValidator(self.config.rocketmq_home, self.config.acl_plain_file)
                    if self.config.acl_enable else None)
        self.replication = BrokerReplication(self)
        self.lanes = BrokerLanes(self.config, self.store)
        server_config = RemotingServerConfig(
            server_channel_max_idle_time_seconds=self.config.server_channel_max_idle_time_seconds,
            server_async_semaphore_value=self.config.server_async_semaphore_value,
            server_oneway_semaphore_value=self.config.server_oneway_semaphore_value,
            server_socket_backlog=self.config.server_socket_backlog,
            write_buffer_high_water_mark=self.config.write_buffer_high_water_mark,
            write_buffer_low_water_mark=self.config.write_buffer_low_water_mark,
        )
        fronted_config = replace(server_config, worker_processes=self.config.server_worker_processes)
        housekeeping = _ClientHousekeeping(self)
        self.server = RemotingServer(self.config.bind_address, self.config.listen_port, self._processors(True),
                                     config=fronted_config, listeners=[housekeeping])
        if self._answers_sends_fast and self.acl is None:
            # The fronts (serverWorkerProcesses) build the plain sends' records and this process places them.
            self.server.front_service = SendPlacement(self)
        self.fast_server: RemotingServer | None = None
        if self.config.fast_channel_enable and self.config.listen_port > 2:
            self.fast_server = RemotingServer(self.config.bind_address, self.config.listen_port - 2,
                                              self._processors(False), config=server_config,
                                              listeners=[housekeeping])
        self._tasks: list[asyncio.Task[Any]] = []
        self._register_task: asyncio.Task[Any] | None = None
        self._register_again = False
        self._notify_tasks: set[asyncio.Task[Any]] = set()
        self._running = False
        self.metrics_server: MetricsHttpServer | None = None

    def _processors(self, with_pull: bool) -> ProcessorTable:
        table = ProcessorTable()
        self.admin_processor.register_into(table)
        for processor in (self.send_processor, QueryMessageProcessor(self), ClientManageProcessor(self),
                          EndTransactionProcessor(self), StatsProcessor(self), BrokerStatsProcessor(self),
                          ReplyMessageProcessor(self), AclAdminProcessor(self)):
            processor.register_into(table)
        if with_pull:
            self.pull_processor.register_into(table)
            if self.config.fast_pull_enable:
                table.register_fast(RequestCode.PULL_MESSAGE, self.pull_processor.answer_at_once)
        if self.acl is not None:
            table.add_hook(self.acl)
        if self._answers_sends_fast:
            for code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE):
                table.register_fast(code, self.send_fast.answer)
        self.lanes.assign(table)
        return table

    @property
    def _answers_sends_fast(self) -> bool:
        # A DLedger CommitLog answers a send once a majority holds it: only the processors wait for that.
        return self.config.fast_send_enable and self.dledger is None

    # --- addresses --------------------------------------------------------------------------------

    @property
    def broker_addr(self) -> str:
        """``brokerIP1:listenPort``: the address registered with the name servers and every record's store host."""
        return self.config.broker_addr

    @property
    def store_host(self) -> str:
        return self.config.broker_addr

    @property
    def port(self) -> int:
        return self.server.port

    # --- lifecycle ---------------------------------------------------------------------------------

    async def start(self) -> None:
        # The store lock comes before anything reads the store directory, config files included: a second
        # broker on a live store must stop here, having changed nothing.
        self.store.lock()
        try:
            self._refuse_ports_in_use()
            self.topics.load()
            self.groups.load()
            self.offsets.load()
            self.store.add_arrival_listener(self.hold_service.on_arrivals)
            self.store.load()
        except BaseException:
            self.store.shutdown()
            raise
        try:
            # The store runs before the port opens, as in Java's BrokerController.start: a front accepts clients
            # as soon as it starts and relays their requests at once, so a send that came in the moment the port
            # opened was answered SERVICE_NOT_AVAILABLE by a store not yet started.
            self.store.start()
            await self.server.start()
            self.config.listen_port = self.server.port
            self.config.ha_listen_port = self.server.port + 1
            if self.fast_server is not None:
                try:
                    await self.fast_server.start()
                except OSError as error:
                    _log.warning("the fast channel on port %d could not listen (%s); serving without it",
                                 self.config.listen_port - 2, error)
                    self.fast_server = None
            # The fronts started with the settings of a listenPort that may have been 0 (any free port).
            self.server.push_front_settings()
            await self.replication.start()
            if self.dledger_roles is not None and self.dledger is not None:
                self.dledger_roles.start()
                await self.dledger.start_log()
            await self._start_metrics()
        except BaseException:
            await self._shutdown_dledger()
            await self.replication.shutdown()
            if self.metrics_server is not None:
                await self.metrics_server.shutdown()
            await self.server.shutdown(0)
            self.store.shutdown()
            raise
        self._running = True
        period_s = max(10.0, min(self.config.register_name_server_period, 60_000) / 1000)
        self._tasks = [
            self._every(period_s, self._register_periodically, "register-broker", initial_s=10.0),
            self._every(self.config.flush_consumer_offset_interval / 1000, self.offsets.persist, "persist-offsets"),
            self._every(HOUSEKEEPING_INTERVAL_S, self._scan_clients, "client-housekeeping"),
            self._every(1.0, self.stats.sample, "stats-sample"),
            self._every(HOLD_CHECK_INTERVAL_S, self.hold_service.check_all, "pull-hold-check"),
            self._every(max(self.config.transaction_check_interval, 100) / 1000, self._check_transactions,
                        "transaction-check"),
        ]
        if self.acl is not None:
            self._tasks.append(self._every(WATCH_INTERVAL_S, self.acl.manager.reload_if_changed, "acl-file-watch"))
        await self.register_broker_all(check_order=True)
        _log.info("The broker[%s, %s] boot success. serializeType=JSON and name server is %s",
                  self.config.broker_name, self.broker_addr, self.config.namesrv_addr or "(none)")

    def _refuse_ports_in_use(self) -> None:
        """Fail before the store is read when a port this broker must listen on is taken.

        The servers bind later, after the store has loaded (which can take long on recovery); a port that is
        already in use is found here so that the refusal is the broker's first and only line. The real binds
        still report a port taken in between.
        """
        config = self.config
        ports = {"listenPort": config.listen_port, "metricsPort": config.metrics_port}
        if self.dledger is None:
            ports["the HA port (listenPort + 1)"] = config.ha_listen_port
        else:
            member = self.dledger.server.config
            ports[f"the DLedger peer port of {member.self_id} in dLegerPeers"] = \
                int(member.self_address.rpartition(":")[2])
        for name, port in ports.items():
            if port > 0:
                try:
                    probe_bind(config.bind_address, port)
                except OSError as error:
                    raise ConfigError(f"{name} {port} on {config.bind_address or '*'} is not free: {error.strerror}"
                                      ) from None

    async def _start_metrics(self) -> None:
        if not self.config.metrics_port:
            return
        metrics = BrokerMetrics(self)
        self.metrics_server = MetricsHttpServer(self.config.bind_address, self.config.metrics_port, metrics.collect,
                                                metrics.health, f"broker {self.config.broker_name}")
        await self.metrics_server.start()

    def _every(self, period_s: float, work: Callable[[], object], name: str,
               initial_s: float | None = None) -> asyncio.Task[Any]:
        async def loop() -> None:
            await asyncio.sleep(period_s if initial_s is None else initial_s)
            while True:
                try:
                    result = work()
                    if inspect.isawaitable(result):
                        await result
                except asyncio.CancelledError:
                    raise
                except Exception:
                    _log.exception("the periodic task %s failed", name)
                await asyncio.sleep(period_s)

        return asyncio.get_running_loop().create_task(loop(), name=f"broker-{name}")

    async def shutdown(self) -> None:
        if not self._running:
            return
        self._running = False
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._register_task is not None:
            self._register_task.cancel()
        if self.config.broker_id != DLEDGER_UNDECIDED_ID:
            await self.outer_api.unregister_broker_all(self.config.namesrv_addr_list,
                                                       self.config.broker_cluster_name, self.broker_addr,
                                                       self.config.broker_name, self.config.broker_id)
        if self.metrics_server is not None:
            await self.metrics_server.shutdown()
        self.hold_service.shutdown()
        self.transactions.shutdown()
        servers = [self.server] + ([self.fast_server] if self.fast_server is not None else [])
        await asyncio.gather(*(server.shutdown() for server in servers))
        for task in list(self._notify_tasks):
            task.cancel()
        self.offsets.persist()
        self.topics.persist()
        self.groups.persist()
        await self._shutdown_dledger()
        await self.replication.shutdown()
        self.store.shutdown()
        await self.outer_api.shutdown()
        _log.info("the broker %s at %s shut down", self.config.broker_name, self.broker_addr)

    async def _shutdown_dledger(self) -> None:
        """Leave the DLedger group before the store closes its files (a commit dispatches into them)."""
        if self.dledger_roles is not None:
            await self.dledger_roles.shutdown()
        if self.dledger is not None:
            # The schedule thread's puts hop onto this loop: stop it while the loop runs.
            await asyncio.to_thread(self.store.handle_schedule_service, False)
            await self.dledger.shutdown_log()

    async def __aenter__(self) -> BrokerController:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.shutdown()

    # --- name servers ---------------------------------------------------------------------------------

    def _wrapper_for_registration(self, wrapper: TopicConfigSerializeWrapper) -> TopicConfigSerializeWrapper:
        permission = self.config.broker_permission
        if permission & PermName.WRITE and permission & PermName.READ:
            return wrapper
        table = {name: TopicConfig(name, config.read_queue_nums, config.write_queue_nums, permission)
                 for name, config in wrapper.topic_config_table.items()}
        return TopicConfigSerializeWrapper(table, wrapper.data_version)

    async def register_broker_all(self, check_order: bool = False, oneway: bool = False,
                                  wrapper: TopicConfigSerializeWrapper | None = None) -> None:
        addrs = self.config.namesrv_addr_list
        if not addrs or self.config.broker_id == DLEDGER_UNDECIDED_ID:
            return
        config = self.config
        results = await self.outer_api.register_broker_all(
            addrs, config.broker_cluster_name, self.broker_addr, config.broker_name, config.broker_id,
            config.ha_server_addr, self._wrapper_for_registration(wrapper or self.topics.wrapper()),
            config.register_broker_timeout_mills, config.compressed_register, oneway,
        )
        if results:
            self.replication.on_registered(results[0])
        if check_order and results and results[0].kv_table is not None:
            self.topics.update_order_topics(set(results[0].kv_table.table))

    async def _register_periodically(self) -> None:
        await self.register_broker_all(check_order=True)

    def register_broker_all_soon(self, oneway: bool = True) -> None:
        """Register in the background now (after a topic was created); coalesces bursts."""
        if not self._running:
            return
        if self._register_task is not None and not self._register_task.done():
            self._register_again = True
            return

        async def register() -> None:
            while True:
                self._register_again = False
                try:
                    await self.register_broker_all(oneway=oneway)
                except Exception:
                    _log.exception("registering with the name servers failed")
                if not self._register_again:
                    return

        self._register_task = asyncio.get_running_loop().create_task(register(), name="broker-register-now")

    def register_increment(self, topic_config: TopicConfig) -> None:
        """Register one new or changed topic at once (Java's registerIncrementBrokerData)."""
        if not self._running:
            return
        wrapper = TopicConfigSerializeWrapper({topic_config.topic_name: topic_config}, self.topics.data_version)
        task = asyncio.get_running_loop().create_task(self.register_broker_all(check_order=True, wrapper=wrapper))
        self._notify_tasks.add(task)
        task.add_done_callback(self._notify_tasks.discard)

    def on_config_updated(self) -> None:
        self.send_processor.refresh()
        self.lanes.refresh()

    # --- clients ------------------------------------------------------------------------------------

    def _scan_clients(self) -> None:
        self.producers.scan_not_active()
        self.consumers.scan_not_active()

    def _consumer_ids_changed(self, group: str, connections: list[RemotingConnection]) -> None:
        if not self.config.notify_consumer_ids_changed_enable or not connections:
            return
        loop = asyncio.get_running_loop()
        for connection in connections:
            task = loop.create_task(self._notify_ids_changed(connection, group))
            self._notify_tasks.add(task)
            task.add_done_callback(self._notify_tasks.discard)

    async def _notify_ids_changed(self, connection: RemotingConnection, group: str) -> None:
        header = NotifyConsumerIdsChangedRequestHeader(group)
        request = create_request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, header.to_ext_fields())
        try:
            await self.server.invoke_oneway(connection, request, 3000)
        except Exception as error:
            _log.warning("NOTIFY_CONSUMER_IDS_CHANGED of group %s to %s failed: %s", group,
                         connection.remote_address, error)

    # --- store events -------------------------------------------------------------------------------

    def _check_transactions(self) -> None:
        # Java starts the check service on a master only (startProcessorByHa), a DLedger leader included.
        if self.store_config.broker_role == SLAVE:
            return
        self.transactions.check(self.config.transaction_time_out, self.config.transaction_check_max)

