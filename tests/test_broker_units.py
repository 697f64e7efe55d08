"""Broker pieces without a network: broker.conf loading, the SQL92 selector, the message filter, the topic,
group and offset managers, queue locks and counters."""
from __future__ import annotations

import logging

import pytest

from rocketmq_py import codec
from rocketmq_py.broker.clients import ClientChannelInfo, ConsumerManager, ProducerManager
from rocketmq_py.broker.config import JAVA_KEYS_WITHOUT_EFFECT, BrokerConfig, bloom_filter_bits, load_broker_config
from rocketmq_py.broker.filter import ExpressionMessageFilter, build_subscription
from rocketmq_py.broker.group_manager import ConsumerOffsetManager, SubscriptionGroupManager
from rocketmq_py.broker.rebalance_lock import RebalanceLockManager
from rocketmq_py.broker.sql92 import compile_sql92
from rocketmq_py.broker.stats import RateCounter
from rocketmq_py.broker.topic_manager import TopicConfigManager
from rocketmq_py.common.config_file import config_to_properties, format_properties
from rocketmq_py.common.filter import SubscriptionData
from rocketmq_py.common.heartbeat_consumer import ConsumeFromWhere, ConsumeType, MessageModel
from rocketmq_py.common.message_queue import MessageQueue
from rocketmq_py.errors import InvalidSelectorError
from rocketmq_py.store import MessageStoreConfig

# --- broker.conf ---------------------------------------------------------------------------------------------

BROKER_CONF = """\
brokerClusterName = ProdCluster
brokerName = broker-b
brokerId = 3
deleteWhen = 04
fileReservedTime = 48
brokerRole = ASYNC_MASTER
flushDiskType = SYNC_FLUSH
namesrvAddr = 10.0.0.1:9876;10.0.0.2:9876
listenPort = 20911
brokerIP1 = 10.0.0.9
storePathRootDir = {root}
storePathCommitLog = {root}/commitlog
mappedFileSizeCommitLog = 1073741824
mappedFileSizeConsumeQueue = 6000000
autoCreateTopicEnable = false
autoCreateSubscriptionGroup = true
defaultTopicQueueNums = 4
diskMaxUsedSpaceRatio = 88
enablePropertyFilter = true
messageDelayLevel = 1s 5s 10s
sendMessageThreadPoolNums = 16
someNewKey = whatever
"""


def test_broker_conf_sets_broker_and_store_keys(tmp_path, caplog):
    conf = tmp_path / "broker.conf"
    conf.write_text(BROKER_CONF.format(root=tmp_path / "store"))
    with caplog.at_level(logging.INFO):
        broker, store = load_broker_config(conf)
    assert (broker.broker_cluster_name, broker.broker_name, broker.listen_port) == ("ProdCluster", "broker-b", 20911)
    assert broker.broker_id == 0, "a master's brokerId is 0, as Java's BrokerStartup sets it"
    assert broker.ha_listen_port == 20912
    assert broker.namesrv_addr_list == ["10.0.0.1:9876", "10.0.0.2:9876"]
    assert broker.broker_addr == "10.0.0.9:20911"
    assert broker.auto_create_topic_enable is False and broker.enable_property_filter is True
    assert broker.default_topic_queue_nums == 4
    assert (store.flush_disk_type, store.file_reserved_time, store.disk_max_used_space_ratio) == ("SYNC_FLUSH", 48, 88)
    assert store.store_path_root_dir == str(tmp_path / "store") and store.message_delay_level == "1s 5s 10s"
    assert broker.broker_config_path == str(conf.resolve())
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("someNewKey" in text for text in warnings)
    assert not any("sendMessageThreadPoolNums" in text for text in warnings)


def test_javas_keys_without_effect_are_kept_and_reported(tmp_path, caplog, monkeypatch):
    monkeypatch.delenv("ROCKETMQ_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    conf = tmp_path / "broker.conf"
    conf.write_text("clientWorkerThreads = 9\ntransientStorePoolEnable = true\nstorePathIndex = /x\n"
                    "readOnlyCommitLogStorePaths = /ro\nexpectConsumerNumUseFilter = 64\n")
    with caplog.at_level(logging.INFO):
        broker, store = load_broker_config(conf)
    reported = config_to_properties(broker, store)
    assert (reported["clientWorkerThreads"], reported["transientStorePoolEnable"],
            reported["readOnlyCommitLogStorePaths"]) == (9, True, "/ro")
    assert reported["bitMapLengthConsumeQueueExt"] == 216, "Java's bloom filter bits for 64 consumers at 20 %"
    assert reported["rocketmqHome"] == str(tmp_path), "the broker's directory without ROCKETMQ_HOME"
    assert "storePathIndex" not in reported, "a later Java's key: accepted, not reported"
    messages = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert (logging.INFO, "broker config key 'clientWorkerThreads' is accepted but has no effect in this broker") \
        in messages
    assert not [text for level, text in messages if level >= logging.WARNING]


def test_every_key_without_effect_is_reported_unless_java_leaves_it_unset():
    reported = config_to_properties(BrokerConfig(), MessageStoreConfig())
    unset = {key for key in JAVA_KEYS_WITHOUT_EFFECT if reported[key] is None}
    assert unset == {"readOnlyCommitLogStorePaths"}
    assert "bitMapLengthConsumeQueueExt=64\n" in format_properties(reported), "before settle(), Java's field default"


@pytest.mark.parametrize(("error_rate", "entries", "bits"), [(20, 32, 112), (20, 64, 216), (1, 1, 8 * 2)])
def test_bloom_filter_bits_as_javas(error_rate, entries, bits):
    assert bloom_filter_bits(error_rate, entries) == bits


def test_bad_values_are_refused(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("listenPort = abc\n")
    with pytest.raises(ValueError, match="listenPort"):
        load_broker_config(conf)
    conf.write_text("brokerRole = SLAVE\nbrokerId = 0\n")
    with pytest.raises(ValueError, match="brokerId > 0"):
        load_broker_config(conf)
    conf.write_text("namesrvAddr = nohost\n")
    with pytest.raises(ValueError, match="name server address"):
        load_broker_config(conf)
    conf.write_text("maxErrorRateOfBloomFilter = 100\n")
    with pytest.raises(ValueError, match="maxErrorRateOfBloomFilter must be 1..99"):
        load_broker_config(conf)


def test_defaults_follow_java(monkeypatch):
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    broker, store = load_broker_config()
    assert (broker.listen_port, broker.broker_cluster_name, broker.default_topic_queue_nums) == (10911, "DefaultCluster", 8)
    assert broker.region_id == "DefaultRegion" and broker.trace_on and broker.long_polling_enable
    assert (broker.transaction_time_out, broker.transaction_check_max, broker.transaction_check_interval) == (
        6000, 15, 60000)
    assert store.flush_disk_type == "ASYNC_FLUSH" and store.store_path_root_dir.endswith("store")


# --- SQL92 ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("expression", "properties", "expected"), [
    ("a > 5", {"a": "7"}, True),
    ("a > 5", {"a": "3"}, False),
    ("a > 5", {}, False),
    ("a > 5", {"a": "x"}, False),
    ("a = 'x'", {"a": "x"}, True),
    ("a <> 'x'", {"a": "y"}, True),
    ("a <> 'x'", {}, False),
    ("a = 5", {"a": "5"}, True),
    ("a = 5.0", {"a": "5"}, True),
    ("a BETWEEN 1 AND 3", {"a": "2"}, True),
    ("a NOT BETWEEN 1 AND 3", {"a": "2"}, False),
    ("a IN ('x', 'y')", {"a": "y"}, True),
    ("a NOT IN ('x', 'y')", {"a": "z"}, True),
    ("a IN ('x')", {}, False),
    ("a IS NULL", {}, True),
    ("a IS NOT NULL", {"a": "1"}, True),
    ("a > 1 AND b = 'q'", {"a": "2", "b": "q"}, True),
    ("a > 1 OR b = 'q'", {"b": "q"}, True),
    ("NOT (a > 1)", {"a": "0"}, True),
    ("NOT (a > 1)", {}, False),
    ("a > -2", {"a": "-1"}, True),
    ("TRUE", {}, True),
    ("a", {"a": "true"}, False),
    ("a = 'it''s'", {"a": "it's"}, True),
    ("a >= '5'", {"a": "10"}, True),
    ("color = 'blue' and price < 10.5", {"color": "blue", "price": "3"}, True),
])
def test_sql92_evaluates_as_java(expression, properties, expected):
    assert compile_sql92(expression).matches(properties) is expected


@pytest.mark.parametrize("expression", ["", "a >", "a IN (1)", "(a > 1", "a = 'x", "5 IN ('x')", "a ! 3"])
def test_sql92_syntax_errors(expression):
    with pytest.raises(InvalidSelectorError):
        compile_sql92(expression)


def test_message_filter_by_tag_code_and_sql():
    tags = ExpressionMessageFilter(build_subscription("T", "A || B", "TAG"))
    assert tags.is_matched_by_consume_queue(codec.java_string_hash("A"))
    assert tags.is_matched_by_consume_queue(codec.java_string_hash("B") & 0xFFFFFFFFFFFFFFFF)
    assert not tags.is_matched_by_consume_queue(codec.java_string_hash("C"))
    everything = ExpressionMessageFilter(build_subscription("T", "*", "TAG"))
    assert everything.is_matched_by_consume_queue(12345)
    sql = ExpressionMessageFilter(SubscriptionData("T", "a > 1", expression_type="SQL92"))
    record = codec.encode_store_record(topic="T", body=b"x", properties={"a": "2"})
    assert sql.is_matched_by_consume_queue(0) and sql.is_matched_by_commit_log(record)
    assert not sql.is_matched_by_properties(codec.properties_to_string({"a": "0"}))


# --- managers -----------------------------------------------------------------------------------------------


def test_topic_manager_creates_from_tbw102_and_persists(tmp_path):
    created = []
    config = BrokerConfig(broker_name="b1", broker_ip1="127.0.0.1", broker_ip2="127.0.0.1")
    manager = TopicConfigManager(config, str(tmp_path), on_created=lambda: created.append(1))
    version = manager.data_version.counter
    topic = manager.create_in_send("New", "TBW102", "1.2.3.4:5", 16)
    assert (topic.write_queue_nums, topic.perm) == (8, 6), "min(client queues, TBW102 queues); perm without inherit"
    assert created == [1] and manager.data_version.counter == version + 1
    assert manager.create_in_send("Other", "Missing", "x", 4) is None
    reloaded = TopicConfigManager(config, str(tmp_path))
    reloaded.load()
    assert reloaded.table["New"].write_queue_nums == 8 and "TBW102" in reloaded.table
    assert reloaded.is_system_topic("b1") and reloaded.is_system_topic("rmq_sys_x") and not reloaded.is_system_topic("New")


def test_topic_manager_without_auto_create(tmp_path):
    config = BrokerConfig(broker_ip1="127.0.0.1", broker_ip2="127.0.0.1", auto_create_topic_enable=False)
    manager = TopicConfigManager(config, str(tmp_path))
    assert "TBW102" not in manager.table
    assert manager.create_in_send("New", "TBW102", "x", 4) is None


def test_group_manager_auto_creates(tmp_path):
    groups = SubscriptionGroupManager(BrokerConfig(broker_ip1="127.0.0.1", broker_ip2="127.0.0.1"), str(tmp_path))
    assert groups.find("g1").retry_max_times == 16
    strict = SubscriptionGroupManager(BrokerConfig(broker_ip1="127.0.0.1", broker_ip2="127.0.0.1",
                                                   auto_create_subscription_group=False), str(tmp_path / "s"))
    assert strict.find("g2") is None and strict.find("CID_RMQ_SYS_TRANS") is not None
    assert "TOOLS_CONSUMER" in strict.table


def test_offsets_round_trip_in_java_format(tmp_path):
    offsets = ConsumerOffsetManager(str(tmp_path))
    offsets.commit_offset("c", "g", "T", 1, 12)
    offsets.commit_offset("c", "g", "T", 0, 10)
    offsets.persist()
    text = (tmp_path / "consumerOffset.json").read_text()
    assert "{0:10,1:12}" in text.replace("\t", "").replace("\n", "")
    again = ConsumerOffsetManager(str(tmp_path))
    again.load()
    assert again.query_offset("g", "T", 1) == 12 and again.query_offset("g", "T", 5) == -1
    assert again.which_topic_by_consumer("g") == {"T"} and again.which_group_by_topic("T") == {"g"}


class FakeConnection:
    def __init__(self, name: str) -> None:
        self.remote_address = name
        self.is_open = True
        self.closed = False

    def close(self) -> None:
        self.closed = True


def test_consumer_manager_notifies_changes():
    changes = []
    manager = ConsumerManager(on_change=lambda group, connections: changes.append((group, len(connections))))
    first, second = FakeConnection("a:1"), FakeConnection("b:2")
    subscription = [SubscriptionData("T")]
    args = (ConsumeType.CONSUME_PASSIVELY, MessageModel.CLUSTERING, ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET)
    manager.register("g", ClientChannelInfo(first, "c1", 0, 409), *args, subscription)
    manager.register("g", ClientChannelInfo(first, "c1", 0, 409), *args, subscription)
    manager.register("g", ClientChannelInfo(second, "c2", 0, 409), *args, subscription)
    assert changes == [("g", 1), ("g", 2)]
    assert manager.group("g").all_client_ids() == ["c1", "c2"]
    manager.on_connection_closed(first)
    assert changes[-1] == ("g", 1) and manager.topic_consumed_by("T") == {"g"}
    manager.on_connection_closed(second)
    assert manager.group("g") is None


def test_producer_manager_finds_connections():
    producers = ProducerManager()
    connection = FakeConnection("a:1")
    producers.register("pg", ClientChannelInfo(connection, "p1", 0, 409))
    assert producers.find_connection("p1") is connection and producers.available_connection("pg") is connection
    producers.on_connection_closed(connection)
    assert producers.find_connection("p1") is None and producers.available_connection("pg") is None


def test_rebalance_locks(monkeypatch):
    locks = RebalanceLockManager()
    queue = MessageQueue("T", "b", 0)
    assert locks.try_lock_batch("g", [queue], "a") == {queue}
    assert locks.try_lock_batch("g", [queue], "b") == set()
    import rocketmq_py.broker.rebalance_lock as module

    later = module.now_ms() + 61_000
    monkeypatch.setattr(module, "now_ms", lambda: later)
    assert locks.try_lock_batch("g", [queue], "b") == {queue}, "an expired lock is taken over"


def test_rate_counter_windows():
    counter = RateCounter()
    for second in range(12):
        counter.add(10)
        counter.sample(float(second))
    assert counter.tps(10) == pytest.approx(10.0)
    # As Java: each rate printed as a Java double, and empty until the window has that much history.
    assert counter.tps_text() == "10.0  "
