"""Broker settings (Java's common/BrokerConfig plus the NettyServerConfig keys a broker.conf carries).

Field names are Java's in Python spelling, so a ``broker.conf`` written for
the Java broker loads unchanged: :func:`load_broker_config` applies its keys
to :class:`BrokerConfig` and, through the same names, to the store's
:class:`~rocketmq_py.store.MessageStoreConfig`, as Java's BrokerStartup
applies one file to all its config objects. Java's keys that change nothing
here (thread pools, Netty tuning: :class:`BrokerKeysWithoutEffect` and the
store's :class:`~rocketmq_py.store.config.StoreKeysWithoutEffect`) are
accepted, and reported by GET_BROKER_CONFIG with Java's defaults, as Java's
broker reports every key it has; keys nobody knows are logged as warnings,
never fatal. Keys whose Java meaning changes what is stored or how it is
replicated, which this broker does not implement, refuse to start when they
ask for it (:data:`UNSUPPORTED_WHEN_TRUE`).
"""
from __future__ import annotations

import logging
import math
import os
import socket
from dataclasses import dataclass, field, fields
from pathlib import Path

from rocketmq_py.common.cpus import available_processors
from rocketmq_py.common.config_file import apply_properties, java_name, load_properties, parse_boolean
from rocketmq_py.common.metrics_http import load_prometheus
from rocketmq_py.common.route import PermName
from rocketmq_py.dledger.config import parse_peers
from rocketmq_py.errors import ConfigError
from rocketmq_py.remoting.tls import tls_enabled_from_env
from rocketmq_py.store import ASYNC_MASTER, SLAVE, SYNC_MASTER, MessageStoreConfig, StoreKeysWithoutEffect

_log = logging.getLogger(__name__)

DEFAULT_LISTEN_PORT = 10911
MASTER_ID = 0
#: A DLedger broker's brokerId until its member leads (0) or follows (its number + 1): it registers nothing.
DLEDGER_UNDECIDED_ID = -1
DEFAULT_REGION_ID = "DefaultRegion"


def _local_address() -> str:
    from rocketmq_py.client.net import local_address

    return local_address()


def _processors() -> int:
    """The CPUs this process may use: what Java's ``availableProcessors()`` sizes its thread pools by (the
    affinity, or a container's CPU quota when smaller)."""
    return available_processors()


def worker_processes_from_cores(cores: int | None = None) -> int:
    """serverWorkerProcesses for a broker process whose configuration does not set it: one front per core (of
    those this process may use, by default), so that the sockets and the sends use every core, as Java's
    thread pools do; none on one core, where a front would only add its relay to that core's work."""
    cores = _processors() if cores is None else cores
    return cores if cores > 1 else 0


def _host_name() -> str:
    try:
        return socket.gethostname() or "DEFAULT_BROKER"
    except OSError:
        return "DEFAULT_BROKER"


@dataclass(kw_only=True)
class BrokerKeysWithoutEffect:
    """Java 4.9's BrokerConfig, NettyServerConfig and NettyClientConfig keys that this broker accepts,
    reports (GET_BROKER_CONFIG, ``-p``) and persists with Java's defaults, but that change nothing here:
    thread pools and their queues, Netty tuning, commercial, bloom filter and filter server settings."""

    message_store_plug_in: str = ""
    send_message_thread_pool_nums: int = field(default_factory=lambda: min(_processors(), 4))
    put_message_future_thread_pool_nums: int = field(default_factory=lambda: min(_processors(), 4))
    pull_message_thread_pool_nums: int = field(default_factory=lambda: 16 + _processors() * 2)
    process_reply_message_thread_pool_nums: int = field(default_factory=lambda: 16 + _processors() * 2)
    query_message_thread_pool_nums: int = field(default_factory=lambda: 8 + _processors())
    admin_broker_thread_pool_nums: int = 16
    client_manage_thread_pool_nums: int = 32
    consumer_manage_thread_pool_nums: int = 32
    heartbeat_thread_pool_nums: int = field(default_factory=lambda: min(32, _processors()))
    end_transaction_thread_pool_nums: int = field(
        default_factory=lambda: max(8 + _processors() * 2, min(_processors(), 4) * 4))
    flush_consumer_offset_history_interval: int = 60_000
    fetch_namesrv_addr_by_address_server: bool = False
    put_thread_pool_queue_capacity: int = 10_000
    reply_thread_pool_queue_capacity: int = 10_000
    query_thread_pool_queue_capacity: int = 20_000
    client_manager_thread_pool_queue_capacity: int = 1_000_000
    consumer_manager_thread_pool_queue_capacity: int = 1_000_000
    heartbeat_thread_pool_queue_capacity: int = 50_000
    end_transaction_pool_queue_capacity: int = 100_000
    filter_server_nums: int = 0
    high_speed_mode: bool = False
    commercial_enable: bool = True
    commercial_timer_count: int = 1
    commercial_trans_count: int = 1
    commercial_big_count: int = 1
    commercial_base_count: int = 1
    transfer_msg_by_heap: bool = True
    max_delay_time: int = 40
    disable_consume_if_consumer_read_slowly: bool = False
    consumer_fallbehind_threshold: int = 16 * 1024 * 1024 * 1024
    wait_time_mills_in_heartbeat_queue: int = 31_000
    wait_time_mills_in_transaction_queue: int = 3000
    enable_calc_filter_bit_map: bool = False
    expect_consumer_num_use_filter: int = 32
    max_error_rate_of_bloom_filter: int = 20
    filter_data_clean_time_span: int = 24 * 3600 * 1000
    enable_detail_stat: bool = True
    isolate_log_enable: bool = False
    # --- NettyServerConfig ---------------------------------------------------------------------------
    server_worker_threads: int = 8
    server_callback_executor_threads: int = 0
    server_selector_threads: int = 3
    server_socket_snd_buf_size: int = 0
    server_socket_rcv_buf_size: int = 0
    server_pooled_byte_buf_allocator_enable: bool = True
    use_epoll_native_selector: bool = False
    # --- NettyClientConfig (the broker's connections to name servers and clients) ---------------------
    client_worker_threads: int = 4
    client_callback_executor_threads: int = field(default_factory=_processors)
    client_oneway_semaphore_value: int = 65535
    client_async_semaphore_value: int = 65535
    connect_timeout_millis: int = 3000
    channel_not_active_interval: int = 60_000
    client_channel_max_idle_time_seconds: int = 120
    client_socket_snd_buf_size: int = 0
    client_socket_rcv_buf_size: int = 0
    client_pooled_byte_buf_allocator_enable: bool = False
    client_close_socket_if_timeout: bool = True
    #: Reported as the broker's client takes it: from ``tls.enable`` (or ``TLS_ENABLE``) in the environment.
    use_tls: bool = field(default_factory=tls_enabled_from_env, metadata={"java": "useTLS"})


@dataclass
class BrokerConfig(BrokerKeysWithoutEffect):
    #: Java's broker refuses to start without it; here it defaults to the current directory, which holds
    #: ``conf/plain_acl.yml`` as ``$ROCKETMQ_HOME`` does for Java's.
    rocketmq_home: str = field(default_factory=lambda: os.environ.get("ROCKETMQ_HOME") or os.getcwd())
    #: Name servers, ``;``-separated (``NAMESRV_ADDR`` by default).
    namesrv_addr: str = field(default_factory=lambda: os.environ.get("NAMESRV_ADDR", ""))
    #: The address clients reach this broker at (part of the registered address and of every store host).
    broker_ip1: str = field(default_factory=_local_address, metadata={"java": "brokerIP1"})
    broker_ip2: str = field(default_factory=_local_address, metadata={"java": "brokerIP2"})
    broker_name: str = field(default_factory=_host_name)
    broker_cluster_name: str = "DefaultCluster"
    broker_id: int = MASTER_ID
    broker_permission: int = PermName.READ | PermName.WRITE
    default_topic_queue_nums: int = 8
    auto_create_topic_enable: bool = True
    cluster_topic_enable: bool = True
    broker_topic_enable: bool = True
    auto_create_subscription_group: bool = True
    msg_trace_topic_name: str = "RMQ_SYS_TRACE_TOPIC"
    trace_topic_enable: bool = False
    flush_consumer_offset_interval: int = 5000
    reject_transaction_message: bool = False
    long_polling_enable: bool = True
    short_polling_time_mills: int = 1000
    notify_consumer_ids_changed_enable: bool = True
    region_id: str = DEFAULT_REGION_ID
    register_broker_timeout_mills: int = 6000
    slave_read_enable: bool = False
    start_accept_send_request_time_stamp: int = 0
    trace_on: bool = True
    filter_support_retry: bool = False
    #: Serve SQL92 subscriptions (``MessageSelector.bySql``).
    enable_property_filter: bool = False
    compressed_register: bool = False
    force_register: bool = True
    register_name_server_period: int = 30_000
    transaction_time_out: int = 6000
    transaction_check_max: int = 15
    transaction_check_interval: int = 60_000
    #: Check every request against the ACL file (plain_acl.yml).
    acl_enable: bool = False
    #: The ACL file, relative to rocketmqHome unless absolute (Java reads the system property of this name).
    acl_plain_file: str = field(default="conf/plain_acl.yml", metadata={"java": "rocketmq.acl.plain.file"})
    store_reply_message_enable: bool = True
    #: Drop a topic's or group's statistics when it is deleted.
    auto_delete_unused_stats: bool = False
    #: Keys UPDATE_BROKER_CONFIG may not change, ``;``-separated.
    config_black_list: str = "configBlackList;brokerConfigPath"
    #: Where UPDATE_BROKER_CONFIG persists the settings (the ``-c`` file when one was given).
    broker_config_path: str = ""
    # --- NettyServerConfig -------------------------------------------------------------------------
    listen_port: int = DEFAULT_LISTEN_PORT
    server_channel_max_idle_time_seconds: int = 120
    server_async_semaphore_value: int = 64
    server_oneway_semaphore_value: int = 256
    server_socket_backlog: int = 1024
    #: The client sockets' write buffer limits in bytes (0: the event loop's own); also NettyClientConfig's keys.
    write_buffer_high_water_mark: int = 0
    write_buffer_low_water_mark: int = 0
    # --- request lanes (Java's executor queues and BrokerFastFailure) ----------------------------------
    send_thread_pool_queue_capacity: int = 10_000
    pull_thread_pool_queue_capacity: int = 100_000
    #: Answer SYSTEM_BUSY to queued requests that waited too long, or while the page cache is busy.
    broker_fast_failure_enable: bool = True
    wait_time_mills_in_send_queue: int = 200
    wait_time_mills_in_pull_queue: int = 5000
    # --- not Java's BrokerConfig ---------------------------------------------------------------------
    #: The HA port registered with the name server (Java's MessageStoreConfig.haListenPort: listenPort + 1).
    ha_listen_port: int = DEFAULT_LISTEN_PORT + 1
    #: The interface to listen on; Java's broker listens on all of them.
    bind_address: str = "0.0.0.0"
    #: Also listen on listenPort - 2, Java's "VIP" channel (needs a fixed listenPort).
    fast_channel_enable: bool = True
    #: Serve Prometheus metrics and ``/health`` over HTTP on this port (0: off; -1: any free port).
    metrics_port: int = 0
    #: Answer plain sends on the fast path (rocketmq_py.broker.send_fast), which stores and answers them
    #: byte for byte as the send processor does, with a fraction of its CPU; false sends everything through
    #: the processor.
    fast_send_enable: bool = True
    #: Answer the pulls that are answered at once (all but those long polling parks) without the pull
    #: processor's coroutines, by its own synchronous code; false serves every pull through the processor.
    fast_pull_enable: bool = True
    #: Front processes that own the client sockets on listenPort (``rocketmq-py broker --workers N``), so
    #: their socket, TLS and send work runs beside this process's; 0 serves the clients in this process. The
    #: VIP channel (listenPort - 2) is always served here. Not set (None): the ``rocketmq-py broker`` command
    #: runs one per core (:func:`worker_processes_from_cores`), an embedded BrokerController none. See
    #: docs/broker.md, "Worker processes".
    server_worker_processes: int | None = None

    @property
    def broker_addr(self) -> str:
        return f"{self.broker_ip1}:{self.listen_port}"

    @property
    def ha_server_addr(self) -> str:
        return f"{self.broker_ip2}:{self.ha_listen_port}"

    @property
    def namesrv_addr_list(self) -> list[str]:
        return [addr.strip() for addr in (self.namesrv_addr or "").split(";") if addr.strip()]

    def black_listed_keys(self) -> set[str]:
        keys = {"configBlackList", "brokerConfigPath"}
        keys.update(key for key in self.config_black_list.split(";") if key)
        return keys


#: Keys of the Java 4.9 broker accepted, reported and persisted with Java's defaults that change nothing here.
JAVA_KEYS_WITHOUT_EFFECT = frozenset(
    java_name(f) for keys in (BrokerKeysWithoutEffect, StoreKeysWithoutEffect) for f in fields(keys))
#: Keys of later Java brokers that a broker.conf may carry: accepted quietly, neither applied nor reported.
LATER_JAVA_KEYS = frozenset({"storePathConsumeQueue", "storePathIndex", "autoMessageVersionOnTopicLen"})


def bloom_filter_bits(error_rate_percent: int, expected_entries: int) -> int:
    """The bit count of Java's consumer-filter bloom filter (BloomFilter.createByFn), which Java's broker writes
    into bitMapLengthConsumeQueueExt at start: n·log2(1/f)·log2(e) bits, rounded up to whole bytes."""
    if not 1 <= error_rate_percent < 100 or expected_entries < 1:
        raise ValueError(f"maxErrorRateOfBloomFilter must be 1..99 and expectConsumerNumUseFilter at least 1, "
                         f"not {error_rate_percent} and {expected_entries}")
    rate = error_rate_percent / 100.0
    # In Java's order of operations, so that the doubles round alike.
    bits = math.ceil(expected_entries * (math.log(1 / rate) / math.log(2)) * (math.log(math.e) / math.log(2)))
    return 8 * math.ceil(bits / 8)


#: Java keys that, set to true, change what the store holds or how it is replicated, in ways this broker does not
#: implement: starting without them would write a different store from the one the file asks for, silently.
UNSUPPORTED_WHEN_TRUE = {
    "enableLmq": "light message queues (LMQ), dispatched to ConsumeQueues of their own",
    "enableMultiDispatch": "multi-dispatch of one message to several ConsumeQueues",
    "enableConsumeQueueExt": "the ConsumeQueue extension files (tags codes that point into them)",
    "duplicationEnable": "dispatching only below a confirm offset",
}


def refuse_unsupported(properties: dict[str, str]) -> None:
    """Raise :class:`ConfigError` naming the first key of :data:`UNSUPPORTED_WHEN_TRUE` set to true."""
    for key, what in UNSUPPORTED_WHEN_TRUE.items():
        text = properties.get(key)
        if text is not None and parse_boolean(text):
            raise ConfigError(f"broker config key {key}=true is not supported: this broker does not implement {what}; "
                              f"remove the key or set it to false")


def load_broker_config(path: str | os.PathLike[str] | None = None, **overrides: object
                       ) -> tuple[BrokerConfig, MessageStoreConfig]:
    """Defaults, then the properties file at ``path``, then ``overrides`` (by Python field name).

    Store defaults follow Java's broker: the store lives under ``~/store``; a master's
    brokerId is 0; the HA port is listenPort + 1. Unknown keys are logged as warnings.
    """
    broker = BrokerConfig()
    store = MessageStoreConfig()
    properties = load_properties(path) if path is not None else {}
    refuse_unsupported(properties)
    unknown = set(apply_properties(broker, properties)) & set(apply_properties(store, properties))
    for name, value in overrides.items():
        if value is None:
            continue
        if hasattr(broker, name):
            setattr(broker, name, value)
        elif hasattr(store, name):
            setattr(store, name, value)
        else:
            raise ValueError(f"unknown broker or store setting {name!r}")
    for key in sorted(JAVA_KEYS_WITHOUT_EFFECT.intersection(properties)):
        _log.info("broker config key %r is accepted but has no effect in this broker", key)
    for key in sorted(unknown):
        if key in LATER_JAVA_KEYS:
            _log.info("broker config key %r (of a later Java broker) has no effect in this broker", key)
        else:
            _log.warning("unknown broker config key %r in %s; ignored", key, path)
    if path is not None and not broker.broker_config_path:
        broker.broker_config_path = str(Path(path).resolve())
    settle(broker, store)
    return broker, store


def check_dledger_keys(store: MessageStoreConfig) -> None:
    """Raise :class:`ConfigError` naming the first DLedger key that cannot start a member of the group."""
    for key, value in (("dLegerGroup", store.d_leger_group), ("dLegerPeers", store.d_leger_peers),
                       ("dLegerSelfId", store.d_leger_self_id)):
        if not value:
            raise ConfigError(f"enableDLegerCommitLog=true needs {key}: set dLegerGroup, dLegerPeers and "
                              f"dLegerSelfId (see docs/broker-dledger.md)")
    members = parse_peers(store.d_leger_peers or "")
    self_id = store.d_leger_self_id or ""
    if self_id not in members:
        raise ConfigError(f"dLegerSelfId {self_id!r} is not one of the members of dLegerPeers "
                          f"{store.d_leger_peers!r}")
    if not self_id[1:].isdigit():
        raise ConfigError(f"dLegerSelfId {self_id!r} is not a letter and a number (n0, n1, ...): a follower's "
                          f"brokerId is that number + 1")
    for preferred in (store.preferred_leader_id or "").split(";"):
        if preferred and preferred not in members:
            raise ConfigError(f"preferredLeaderId {preferred!r} is not one of the members of dLegerPeers")


def settle(broker: BrokerConfig, store: MessageStoreConfig) -> None:
    """Apply the rules Java's BrokerStartup (and BrokerController's construction) applies after loading, and
    check the result."""
    store.validate()
    store.bit_map_length_consume_queue_ext = bloom_filter_bits(broker.max_error_rate_of_bloom_filter,
                                                               broker.expect_consumer_num_use_filter)
    if store.broker_role in (ASYNC_MASTER, SYNC_MASTER):
        broker.broker_id = MASTER_ID
    elif store.broker_role == SLAVE and broker.broker_id <= 0:
        raise ValueError("a SLAVE broker needs brokerId > 0")
    if store.enable_d_leger_commit_log:
        check_dledger_keys(store)
        # The DLedger member's role decides: no brokerId until it is elected or follows (Java's BrokerStartup).
        broker.broker_id = DLEDGER_UNDECIDED_ID
    if broker.server_worker_processes is not None and broker.server_worker_processes < 0:
        raise ValueError(f"serverWorkerProcesses (--workers) must be 0 (one process) or more, "
                         f"not {broker.server_worker_processes}")
    broker.ha_listen_port = broker.listen_port + 1
    if broker.metrics_port:
        load_prometheus()
    for addr in broker.namesrv_addr_list:
        host, sep, port = addr.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"the name server address {addr!r} is not valid: write it as "
                             f"\"127.0.0.1:9876;192.168.0.1:9876\"")


def settle_worker_processes(broker: BrokerConfig) -> str:
    """Give a broker started as a process (the ``rocketmq-py broker`` command) its front processes when
    serverWorkerProcesses is not set; return where the number came from, for the startup line."""
    if broker.server_worker_processes is not None:
        return "serverWorkerProcesses"
    cores = _processors()
    broker.server_worker_processes = worker_processes_from_cores(cores)
    return f"{cores} core{'' if cores == 1 else 's'} (serverWorkerProcesses is not set)"
