"""The name server's route tables: registration, expiry, channel loss, queries and permission changes."""
from __future__ import annotations

import zlib

import pytest

from rocketmq_py.common.data_version import DataVersion
from rocketmq_py.common.route import QueueData
from rocketmq_py.common.topic_config import TopicConfig, TopicConfigSerializeWrapper
from rocketmq_py.errors import CodecError
from rocketmq_py.namesrv.register_body import RegisterBrokerBody
from rocketmq_py.namesrv.route_info import RouteInfoManager


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


class Channel:
    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


def wrapper(*configs: TopicConfig, counter: int = 1) -> TopicConfigSerializeWrapper:
    return TopicConfigSerializeWrapper({c.topic_name: c for c in configs}, DataVersion(123, counter))


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def routes(clock: Clock) -> RouteInfoManager:
    return RouteInfoManager(clock=clock)


def register(routes, name="broker-a", addr="10.0.0.1:10911", broker_id=0, cluster="C1", topics=(), counter=1,
             channel=None):
    return routes.register_broker(cluster, addr, name, broker_id, addr.replace("10911", "10912"),
                                  wrapper(*topics, counter=counter), [], channel or Channel())


def test_register_makes_topic_routable(routes):
    register(routes, topics=[TopicConfig("T", 4, 8, 6)])
    route = routes.pickup_topic_route_data("T")
    assert route is not None
    assert route.queue_datas == [QueueData("broker-a", 4, 8, 6, 0)]
    [broker] = route.broker_datas
    assert (broker.cluster, broker.broker_name, broker.broker_addrs) == ("C1", "broker-a", {0: "10.0.0.1:10911"})
    assert routes.pickup_topic_route_data("unknown") is None


def test_slave_registration_learns_master_and_keeps_topics_from_master_only(routes):
    register(routes, topics=[TopicConfig("T", 4, 4, 6)])
    result = register(routes, addr="10.0.0.2:10911", broker_id=1, topics=[TopicConfig("T", 1, 1, 2)])
    assert result.master_addr == "10.0.0.1:10911"
    assert result.ha_server_addr == "10.0.0.1:10912"
    route = routes.pickup_topic_route_data("T")
    assert route.queue_datas == [QueueData("broker-a", 4, 4, 6, 0)]
    assert route.broker_datas[0].broker_addrs == {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}


def test_topic_table_updates_only_when_data_version_changes(routes):
    register(routes, topics=[TopicConfig("T", 4, 4, 6)], counter=1)
    register(routes, topics=[TopicConfig("T", 8, 8, 6)], counter=1)
    assert routes.pickup_topic_route_data("T").queue_datas[0].write_queue_nums == 4
    register(routes, topics=[TopicConfig("T", 8, 8, 6)], counter=2)
    assert routes.pickup_topic_route_data("T").queue_datas[0].write_queue_nums == 8


def test_slave_promoted_to_master_drops_its_old_id(routes):
    register(routes, addr="10.0.0.2:10911", broker_id=1)
    register(routes, addr="10.0.0.2:10911", broker_id=0)
    assert routes.broker_addr_table["broker-a"].broker_addrs == {0: "10.0.0.2:10911"}


def test_expiry_after_silence_removes_broker_and_its_topics(routes, clock):
    channel = Channel()
    register(routes, topics=[TopicConfig("T")], channel=channel)
    register(routes, name="broker-b", addr="10.0.0.3:10911", topics=[TopicConfig("T")])
    clock.now += 60_000
    routes.update_broker_info_update_timestamp("10.0.0.3:10911")
    clock.now += 60_001
    assert routes.scan_not_active_broker() == ["10.0.0.1:10911"]
    assert channel.closed
    assert "broker-a" not in routes.broker_addr_table
    assert routes.cluster_addr_table == {"C1": {"broker-b"}}
    assert [q.broker_name for q in routes.pickup_topic_route_data("T").queue_datas] == ["broker-b"]
    clock.now += 60_000
    assert routes.scan_not_active_broker() == ["10.0.0.3:10911"]
    assert routes.topic_queue_table == {} and routes.cluster_addr_table == {}


def test_channel_close_removes_broker_at_once(routes):
    channel = Channel()
    register(routes, topics=[TopicConfig("T")], channel=channel)
    routes.on_channel_destroy("127.0.0.1:55555", channel)
    assert routes.broker_live_table == {}
    assert routes.pickup_topic_route_data("T") is None
    assert routes.get_all_cluster_info().cluster_addr_table == {}


def test_unrelated_channel_close_keeps_broker(routes):
    register(routes, topics=[TopicConfig("T")])
    routes.on_channel_destroy("127.0.0.1:55555", Channel())
    assert routes.pickup_topic_route_data("T") is not None


def test_unregister_removes_only_that_broker_id(routes):
    register(routes, topics=[TopicConfig("T")])
    register(routes, addr="10.0.0.2:10911", broker_id=1)
    routes.unregister_broker("C1", "10.0.0.2:10911", "broker-a", 1)
    assert routes.broker_addr_table["broker-a"].broker_addrs == {0: "10.0.0.1:10911"}
    routes.unregister_broker("C1", "10.0.0.1:10911", "broker-a", 0)
    assert routes.broker_addr_table == {} and routes.topic_queue_table == {}


def test_topic_lists_and_delete(routes):
    register(routes, topics=[TopicConfig("T1"), TopicConfig("T2")])
    register(routes, name="broker-b", addr="10.0.0.3:10911", cluster="C2",
             topics=[TopicConfig("T2"), TopicConfig("T3")])
    assert routes.get_all_topic_list().topics == {"T1", "T2", "T3"}
    assert routes.get_topics_by_cluster("C2").topics == {"T2", "T3"}
    assert routes.get_topics_by_cluster("nope").topics == set()
    system = routes.get_system_topic_list()
    assert system.topics == {"C1", "C2", "broker-a", "broker-b"}
    assert system.broker_addr in ("10.0.0.1:10911", "10.0.0.3:10911")
    routes.delete_topic("T2", "C1")
    assert [q.broker_name for q in routes.pickup_topic_route_data("T2").queue_datas] == ["broker-b"]
    routes.delete_topic("T2")
    assert routes.pickup_topic_route_data("T2") is None


def test_unit_topic_lists(routes):
    unit = TopicConfig("U")
    unit.topic_sys_flag = 1
    unit_sub = TopicConfig("S")
    unit_sub.topic_sys_flag = 2
    register(routes, topics=[unit, unit_sub, TopicConfig("N")])
    assert routes.get_unit_topics().topics == {"U"}
    assert routes.get_has_unit_sub_topic_list().topics == {"S"}
    assert routes.get_has_unit_sub_un_unit_topic_list().topics == {"S"}


def test_wipe_and_add_write_permission(routes):
    register(routes, topics=[TopicConfig("T1", perm=6), TopicConfig("T2", perm=7)])
    assert routes.wipe_write_perm_of_broker("broker-a") == 2
    assert {q.perm for t in ("T1", "T2") for q in routes.pickup_topic_route_data(t).queue_datas} == {4, 5}
    assert routes.add_write_perm_of_broker("broker-a") == 2
    assert {q.perm for t in ("T1", "T2") for q in routes.pickup_topic_route_data(t).queue_datas} == {6}
    assert routes.wipe_write_perm_of_broker("nobody") == 0


# --- register bodies ---------------------------------------------------------------------------


@pytest.mark.parametrize("compressed", [False, True])
def test_register_body_round_trip(compressed):
    topics = [TopicConfig("T1", 4, 8, 6), TopicConfig("T2", 1, 1, 7, "MULTI_TAG")]
    body = RegisterBrokerBody(wrapper(*topics, counter=5), ["10.0.0.9:1234"])
    decoded = RegisterBrokerBody.decode(body.encode(compressed), compressed)
    assert decoded.filter_server_list == ["10.0.0.9:1234"]
    assert decoded.topic_config_wrapper.data_version == DataVersion(123, 5)
    assert decoded.topic_config_wrapper.topic_config_table == {t.topic_name: t for t in topics}


def test_register_body_from_java_json_text():
    text = ('{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,"timestamp":17},'
            '"topicConfigTable":{"TBW102":{"order":false,"perm":7,"readQueueNums":8,"topicFilterType":"SINGLE_TAG",'
            '"topicName":"TBW102","topicSysFlag":0,"writeQueueNums":8}}}}')
    body = RegisterBrokerBody.decode(text.encode())
    assert body.topic_config_wrapper.topic_config_table["TBW102"] == TopicConfig("TBW102", 8, 8, 7)


@pytest.mark.parametrize("body", [
    b"not zlib",
    zlib.compress(b"\x00\x00\x00\x05{}"),
    zlib.compress(b"\x00\x00\x00\x02{}\xff\xff\xff\xff"),
    zlib.compress(b"\x00\x00\x00\x02{}\x00\x00\x00\x01\x00\x00\x00\x03a b"),
])
def test_bad_compressed_register_body_is_a_codec_error(body):
    with pytest.raises(CodecError):
        RegisterBrokerBody.decode(body, compressed=True)
