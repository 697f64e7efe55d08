"""Producer pieces with no network: validation, queue selection, the latency fault strategy, the
hash selector, configuration and the client id."""
from __future__ import annotations

import pytest

from rocketmq_py import codec
from rocketmq_py.client.config import ProducerConfig
from rocketmq_py.client.instance import build_client_id, resolve_instance_name
from rocketmq_py.client.net import choose_local_address
from rocketmq_py.client.producer import AsyncProducer, Producer, SelectMessageQueueByHash
from rocketmq_py.client.producer.fault import FaultStrategy, LatencyFaultTolerance
from rocketmq_py.client.producer.publish_info import TopicPublishInfo, publish_info_from_route
from rocketmq_py.common import validators
from rocketmq_py.common.message import Message
from rocketmq_py.common.message_queue import MessageQueue
from rocketmq_py.common.route import BrokerData, QueueData, TopicRouteData
from rocketmq_py.errors import ClientStateError, InvalidArgumentError

MAX = 4 * 1024 * 1024


# --- validation -----------------------------------------------------------------------------------

@pytest.mark.parametrize("topic", ["", "   ", "a b", "topic/1", "tópico", "x" * 128, None])
def test_bad_topics_are_refused(topic):
    with pytest.raises(InvalidArgumentError):
        validators.check_message(Message(topic, b"x"), MAX)


@pytest.mark.parametrize("topic", ["A", "a-b_c|d%e", "x" * 127, "TopicTest"])
def test_good_topics_pass(topic):
    validators.check_message(Message(topic, b"x"), MAX)


@pytest.mark.parametrize("topic", ["SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC",
                                   "TRANS_CHECK_MAX_TIME_TOPIC", "SELF_TEST_TOPIC", "OFFSET_MOVED_EVENT"])
def test_system_topics_are_refused(topic):
    with pytest.raises(InvalidArgumentError, match="forbidden"):
        validators.check_message(Message(topic, b"x"), MAX)


def test_empty_none_and_oversized_bodies_are_refused():
    with pytest.raises(InvalidArgumentError, match="empty"):
        validators.check_message(Message("T", b""), MAX)
    message = Message("T", b"x")
    message.body = None  # type: ignore[assignment]
    with pytest.raises(InvalidArgumentError, match="None"):
        validators.check_message(message, MAX)
    with pytest.raises(InvalidArgumentError, match="must be bytes"):
        validators.check_message(Message("T", "text"), MAX)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="over the limit") as error:
        validators.check_message(Message("T", b"x" * (MAX + 1)), MAX)
    assert error.value.code == 13
    validators.check_message(Message("T", b"x" * MAX), MAX)


@pytest.mark.parametrize("level", [-1, 19, 100])
def test_invalid_delay_levels_are_refused(level):
    message = Message("T", b"x")
    message.delay_time_level = level
    with pytest.raises(InvalidArgumentError, match="delay level"):
        validators.check_message(message, MAX)


@pytest.mark.parametrize("level", [0, 1, 2, 18])
def test_valid_delay_levels_pass(level):
    message = Message("T", b"x")
    message.delay_time_level = level
    validators.check_message(message, MAX)


def test_batch_checks():
    with pytest.raises(InvalidArgumentError, match="same topic"):
        validators.check_batch([Message("A", b"x"), Message("B", b"x")], MAX)
    delayed = Message("A", b"x")
    delayed.delay_time_level = 2
    with pytest.raises(InvalidArgumentError, match="delayed"):
        validators.check_batch([Message("A", b"x"), delayed], MAX)
    with pytest.raises(InvalidArgumentError, match="retry topic"):
        validators.check_batch([Message("%RETRY%g", b"x")], MAX)
    with pytest.raises(InvalidArgumentError, match="wait_store_msg_ok"):
        validators.check_batch([Message("A", b"x"), Message("A", b"y", wait_store_msg_ok=False)], MAX)
    with pytest.raises(InvalidArgumentError, match="empty"):
        validators.check_batch([], MAX)
    validators.check_batch([Message("A", b"x"), Message("A", b"y")], MAX)


@pytest.mark.parametrize("group", ["", "bad group", "g/1", "x" * 256, "DEFAULT_PRODUCER"])
def test_bad_producer_groups_are_refused(group):
    with pytest.raises(InvalidArgumentError):
        validators.check_producer_group(group)


async def test_start_refuses_a_bad_group_and_sending_before_start_is_refused():
    with pytest.raises(InvalidArgumentError):
        await AsyncProducer("bad group", namesrv_addr="127.0.0.1:1").start()
    producer = AsyncProducer("good_group", namesrv_addr="127.0.0.1:1")
    with pytest.raises(ClientStateError, match="start"):
        await producer.send(Message("T", b"x"))
    with pytest.raises(ClientStateError):
        producer.send_async(Message("T", b"x"))


def test_blocking_producer_refuses_before_start():
    producer = Producer("good_group", namesrv_addr="127.0.0.1:1")
    with pytest.raises(ClientStateError):
        producer.send(Message("T", b"x"))


def test_unknown_option_and_bad_settings_are_refused():
    with pytest.raises(InvalidArgumentError, match="unknown producer option"):
        AsyncProducer("g", send_timeout=5)
    with pytest.raises(InvalidArgumentError, match="compress_type"):
        ProducerConfig(producer_group="g", compress_type="GZIP").validate()
    ProducerConfig(producer_group="g", use_tls=True).validate()  # TLS is supported
    with pytest.raises(InvalidArgumentError, match="access_key"):
        ProducerConfig(producer_group="g", access_key="ak").validate()


# --- configuration ----------------------------------------------------------------------------------

def test_defaults_are_javas(monkeypatch):
    monkeypatch.setenv("NAMESRV_ADDR", "10.0.0.1:9876;10.0.0.2:9876")
    config = ProducerConfig(producer_group="g")
    assert config.namesrv_addresses() == ["10.0.0.1:9876", "10.0.0.2:9876"]
    assert (config.send_msg_timeout, config.retry_times_when_send_failed, config.retry_times_when_send_async_failed,
            config.max_message_size, config.compress_msg_body_over_howmuch, config.compress_level) == (
        3000, 2, 2, 4 * 1024 * 1024, 4096, 5)
    assert config.compression_code() == codec.COMPRESSION_ZLIB
    assert (config.poll_name_server_interval, config.heartbeat_broker_interval) == (30000, 30000)
    assert config.create_topic_key == "TBW102" and config.default_topic_queue_nums == 4
    assert not config.send_latency_fault_enable and not config.retry_another_broker_when_not_store_ok


def test_client_id_and_instance_name():
    config = ProducerConfig(producer_group="g", client_ip="10.1.2.3")
    resolve_instance_name(config)
    pid, _, nanos = config.instance_name.partition("#")
    assert pid.isdigit() and nanos.isdigit()
    assert build_client_id(config) == f"10.1.2.3@{config.instance_name}"
    named = ProducerConfig(producer_group="g", client_ip="10.1.2.3", instance_name="app", unit_name="u1")
    resolve_instance_name(named)
    assert build_client_id(named) == "10.1.2.3@app@u1"


def test_local_address_preference():
    assert choose_local_address(["127.0.0.1", "192.168.1.5", "10.0.0.7"]) == "10.0.0.7"
    assert choose_local_address(["127.0.0.1", "192.168.1.5"]) == "192.168.1.5"
    assert choose_local_address(["127.0.0.1", "fe80::1", "2001:db8::5"]) == "2001:db8::5"
    assert choose_local_address(["127.0.0.1"]) == "127.0.0.1"


def test_namespace_wrapping():
    config = ProducerConfig(producer_group="g", namespace="ns")
    assert config.with_namespace("T") == "ns%T"
    assert config.with_namespace("ns%T") == "ns%T"
    assert config.with_namespace("%RETRY%g") == "%RETRY%ns%g"
    assert config.without_namespace("ns%T") == "T"
    assert config.without_namespace("%RETRY%ns%g") == "%RETRY%g"


# --- queue selection ----------------------------------------------------------------------------------

def _route(*brokers: tuple[str, int, int]) -> TopicRouteData:
    return TopicRouteData(
        [QueueData(name, queues, queues, perm) for name, queues, perm in brokers],
        [BrokerData("c", name, {0: f"10.0.0.{i}:10911"}) for i, (name, _, _) in enumerate(brokers)],
    )


def test_publish_info_takes_writable_master_queues_in_broker_order():
    route = _route(("broker-b", 2, 6), ("broker-a", 3, 6), ("broker-c", 4, 4))
    route.broker_datas.append(BrokerData("c", "broker-d", {1: "10.0.0.9:10911"}))
    route.queue_datas.append(QueueData("broker-d", 2, 2, 6))
    info = publish_info_from_route("T", route)
    assert [(q.broker_name, q.queue_id) for q in info.message_queues] == [
        ("broker-a", 0), ("broker-a", 1), ("broker-a", 2), ("broker-b", 0), ("broker-b", 1)]


def test_publish_info_from_order_topic_conf():
    route = _route(("broker-a", 8, 6))
    route.order_topic_conf = "broker-a:2;broker-b:1"
    info = publish_info_from_route("T", route)
    assert info.order_topic
    assert [(q.broker_name, q.queue_id) for q in info.message_queues] == [
        ("broker-a", 0), ("broker-a", 1), ("broker-b", 0)]


def test_round_robin_and_avoiding_the_last_broker():
    info = publish_info_from_route("T", _route(("broker-a", 2, 6), ("broker-b", 2, 6)))
    picks = [info.select_one() for _ in range(8)]
    assert {(q.broker_name, q.queue_id) for q in picks} == {(b, i) for b in ("broker-a", "broker-b") for i in (0, 1)}
    for _ in range(20):
        assert info.select_one("broker-a").broker_name == "broker-b"
    single = publish_info_from_route("T", _route(("broker-a", 2, 6)))
    assert single.select_one("broker-a").broker_name == "broker-a"
    assert TopicPublishInfo().select_one() is None


def test_not_available_durations_follow_javas_table():
    strategy = FaultStrategy(True, ProducerConfig().latency_max, ProducerConfig().not_available_duration)
    expected = {0: 0, 49: 0, 99: 0, 100: 0, 549: 0, 550: 30000, 999: 30000, 1000: 60000, 2000: 120000,
                3000: 180000, 14999: 180000, 15000: 600000, 30000: 600000}
    assert {latency: strategy.not_available_ms(latency) for latency in expected} == expected


def test_fault_strategy_avoids_an_isolated_broker():
    strategy = FaultStrategy(True, ProducerConfig().latency_max, ProducerConfig().not_available_duration)
    info = publish_info_from_route("T", _route(("broker-a", 2, 6), ("broker-b", 2, 6)))
    strategy.update("broker-a", 10, isolation=True)
    assert not strategy.tolerance.is_available("broker-a")
    assert all(strategy.select(info, None).broker_name == "broker-b" for _ in range(20))
    strategy.update("broker-a", 40, isolation=False)
    assert strategy.tolerance.is_available("broker-a")


def test_fault_strategy_when_every_broker_is_marked():
    strategy = FaultStrategy(True, ProducerConfig().latency_max, ProducerConfig().not_available_duration)
    info = publish_info_from_route("T", _route(("broker-a", 2, 6), ("broker-b", 3, 6)))
    strategy.update("broker-a", 1000, isolation=False)
    strategy.update("broker-b", 5000, isolation=False)
    queue = strategy.select(info, None)
    assert queue.broker_name == "broker-a", "the least slow broker is tried when all are marked"
    assert 0 <= queue.queue_id < 2


def test_disabled_fault_strategy_records_nothing():
    strategy = FaultStrategy(False, ProducerConfig().latency_max, ProducerConfig().not_available_duration)
    strategy.update("broker-a", 5000, isolation=True)
    assert strategy.tolerance.items == {}


def test_pick_one_at_least_prefers_available_then_faster():
    tolerance = LatencyFaultTolerance()
    tolerance.update("slow", 3000, 0)
    tolerance.update("fast", 10, 0)
    tolerance.update("down", 10, 600000)
    assert tolerance.pick_one_at_least() in {"fast", "slow"}
    single = LatencyFaultTolerance()
    single.update("only", 1, 1000)
    assert single.pick_one_at_least() == "only"


# --- selectors ------------------------------------------------------------------------------------------

def _java_string_hash(text: str) -> int:
    value = 0
    for ch in text:
        value = (31 * value + ord(ch)) & 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


@pytest.mark.parametrize("key", ["order-1", "order-2", "a", "polygenelubricants", "zzzzzzzzzz"])
def test_hash_selector_matches_javas_string_hash(key):
    queues = [MessageQueue("T", "b", i) for i in range(7)]
    expected = abs(_java_string_hash(key)) % 7
    assert SelectMessageQueueByHash().select(queues, Message("T", b"x"), key).queue_id == expected


@pytest.mark.parametrize("key,expected", [(5, 5 % 4), (-7, 3), (2**40 + 3, ((2**40 + 3) ^ ((2**40 + 3) >> 32)) % 4)])
def test_hash_selector_with_integers(key, expected):
    queues = [MessageQueue("T", "b", i) for i in range(4)]
    assert SelectMessageQueueByHash().select(queues, Message("T", b"x"), key).queue_id == expected
