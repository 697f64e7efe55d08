"""Broker settings (Java's common/BrokerConfig plus the NettyServerConfig keys a broker.conf carries).

Field names are Java's in Python spelling, so a ``broker.conf`` written for
the Java broker loads unchanged: :func:`load_broker_config` applies its keys
to :class:`BrokerConfig` and, through the same names, to the store's
:class:`~rocketmq_py.store.MessageStoreConfig`, as Java's BrokerStartup
applies one file to all its config objects. Keys Java knows that change
nothing here (thread pools, Netty buffers) are accepted quietly; keys nobody
knows are logged as warnings, never fatal.
"""
from __future__ import annotations

import logging
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path

from rocketmq_py.common.config_file import apply_properties, load_properties
from rocketmq_py.common.route import PermName
from rocketmq_py.store import ASYNC_MASTER, SLAVE, SYNC_MASTER, MessageStoreConfig

_log = logging.getLogger(__name__)

DEFAULT_LISTEN_PORT = 10911
MASTER_ID = 0
DEFAULT_REGION_ID = "DefaultRegion"


def _local_address() -> str:
    from rocketmq_py.client.net import local_address

    return local_address()


def _host_name() -> str:
    try:
        return socket.gethostname() or "DEFAULT_BROKER"
    except OSError:
        return "DEFAULT_BROKER"


@dataclass
class BrokerConfig:
    rocketmq_home: str = field(default_factory=lambda: os.environ.get("ROCKETMQ_HOME", ""))
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
    #: their socket and TLS work runs beside this process's; 0 serves the clients in this process. The VIP
    #: channel (listenPort - 2) is always served here. See the README's "Worker processes".
    server_worker_processes: int = 0

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


#: Java keys (BrokerConfig, NettyServerConfig, NettyClientConfig, MessageStoreConfig) that are
#: accepted but change nothing in this broker: thread pools, queue capacities, Netty and HA tuning.
JAVA_KEYS_WITHOUT_EFFECT = frozenset({
    "messageStorePlugIn", "sendMessageThreadPoolNums", "putMessageFutureThreadPoolNums", "pullMessageThreadPoolNums",
    "processReplyMessageThreadPoolNums", "queryMessageThreadPoolNums", "adminBrokerThreadPoolNums",
    "clientManageThreadPoolNums", "consumerManageThreadPoolNums", "heartbeatThreadPoolNums",
    "endTransactionThreadPoolNums", "flushConsumerOffsetHistoryInterval", "fetchNamesrvAddrByAddressServer",
    "putThreadPoolQueueCapacity", "replyThreadPoolQueueCapacity", "queryThreadPoolQueueCapacity",
    "clientManagerThreadPoolQueueCapacity",
    "consumerManagerThreadPoolQueueCapacity", "heartbeatThreadPoolQueueCapacity", "endTransactionPoolQueueCapacity",
    "filterServerNums", "highSpeedMode", "commercialEnable", "commercialTimerCount", "commercialTransCount",
    "commercialBigCount", "commercialBaseCount", "transferMsgByHeap", "maxDelayTime",
    "disableConsumeIfConsumerReadSlowly", "consumerFallbehindThreshold", "waitTimeMillsInHeartbeatQueue",
    "waitTimeMillsInTransactionQueue", "enableCalcFilterBitMap", "expectConsumerNumUseFilter",
    "maxErrorRateOfBloomFilter", "filterDataCleanTimeSpan", "enableDetailStat", "autoDeleteUnusedStats",
    "isolateLogEnable",
    "serverWorkerThreads", "serverCallbackExecutorThreads", "serverSelectorThreads", "serverSocketSndBufSize",
    "serverSocketRcvBufSize", "writeBufferHighWaterMark", "writeBufferLowWaterMark", "serverPooledByteBufAllocatorEnable",
    "useEpollNativeSelector", "clientWorkerThreads", "clientCallbackExecutorThreads", "clientOnewaySemaphoreValue",
    "clientAsyncSemaphoreValue", "connectTimeoutMillis", "channelNotActiveInterval", "clientChannelMaxIdleTimeSeconds",
    "clientSocketSndBufSize", "clientSocketRcvBufSize", "clientPooledByteBufAllocatorEnable",
    "clientCloseSocketIfTimeout", "useTLS",
    "haListenPort", "transientStorePoolEnable", "transientStorePoolSize", "fastFailIfNoBufferInStorePool",
    "commitIntervalCommitLog", "commitCommitLogLeastPages", "commitCommitLogThoroughInterval", "useReentrantLockWhenPutMessage",
    "warmMapedFileEnable", "defaultQueryMaxNum", "enableConsumeQueueExt",
    "mappedFileSizeConsumeQueueExt", "bitMapLengthConsumeQueueExt", "enableDLegerCommitLog", "dLegerGroup", "dLegerPeers",
    "dLegerSelfId", "preferredLeaderId", "isEnableBatchPush", "enableScheduleMessageStats", "enableLmq",
    "enableMultiDispatch", "maxLmqConsumeQueueNum", "enableScheduleAsyncDeliver", "scheduleAsyncDeliverMaxPendingLimit",
    "scheduleAsyncDeliverMaxResendNum2Blocked", "duplicationEnable", "debugLockEnable", "autoMessageVersionOnTopicLen",
    "storePathConsumeQueue", "storePathIndex",
})


def load_broker_config(path: str | os.PathLike[str] | None = None, **overrides: object
                       ) -> tuple[BrokerConfig, MessageStoreConfig]:
    """Defaults, then the properties file at ``path``, then ``overrides`` (by Python field name).

    Store defaults follow Java's broker: the store lives under ``~/store``; a master's
    brokerId is 0; the HA port is listenPort + 1. Unknown keys are logged as warnings.
    """
    broker = BrokerConfig()
    store = MessageStoreConfig()
    properties = load_properties(path) if path is not None else {}
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
    for key in sorted(unknown):
        if key in JAVA_KEYS_WITHOUT_EFFECT:
            _log.info("broker config key %r is accepted but has no effect in this broker", key)
        else:
            _log.warning("unknown broker config key %r in %s; ignored", key, path)
    if path is not None and not broker.broker_config_path:
        broker.broker_config_path = str(Path(path).resolve())
    settle(broker, store)
    return broker, store


def settle(broker: BrokerConfig, store: MessageStoreConfig) -> None:
    """Apply the rules Java's BrokerStartup applies after loading (and check the result)."""
    store.validate()
    if store.broker_role in (ASYNC_MASTER, SYNC_MASTER):
        broker.broker_id = MASTER_ID
    elif store.broker_role == SLAVE and broker.broker_id <= 0:
        raise ValueError("a SLAVE broker needs brokerId > 0")
    broker.ha_listen_port = broker.listen_port + 1
    for addr in broker.namesrv_addr_list:
        host, sep, port = addr.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"the name server address {addr!r} is not valid: write it as "
                             f"\"127.0.0.1:9876;192.168.0.1:9876\"")
