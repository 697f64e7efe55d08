"""Every name server request code, answered by a NamesrvController on loopback."""
from __future__ import annotations

import asyncio
import zlib

import pytest

from rocketmq_py import codec
from rocketmq_py.client.api import MQClientAPI
from rocketmq_py.common.codes import RequestCode, ResponseCode
from rocketmq_py.common.config_file import parse_properties
from rocketmq_py.common.data_version import DataVersion
from rocketmq_py.common.kv import KVTable
from rocketmq_py.common.route import TopicRouteData
from rocketmq_py.common.topic_config import TopicConfig, TopicConfigSerializeWrapper
from rocketmq_py.errors import TopicNotExistError
from rocketmq_py.namesrv import NamesrvConfig, NamesrvController, RegisterBrokerBody
from rocketmq_py.remoting import RemotingClient, create_request


@pytest.fixture
async def namesrv(tmp_path):
    config = NamesrvConfig(kv_config_path=str(tmp_path / "kvConfig.json"), listen_port=0, bind_address="127.0.0.1",
                           config_store_path=str(tmp_path / "namesrv.properties"))
    async with NamesrvController(config) as controller:
        yield controller


@pytest.fixture
async def client():
    remoting = RemotingClient()
    yield remoting
    await remoting.shutdown()


async def call(client, namesrv, code, fields=None, body=None, version=409):
    request = create_request(code, {k: str(v) for k, v in (fields or {}).items()}, body)
    request.version = version
    return await client.invoke(namesrv.address, request, 3000)


def broker_fields(name="broker-a", addr="127.0.0.1:10911", broker_id=0, cluster="C1"):
    return {"brokerName": name, "brokerAddr": addr, "clusterName": cluster, "brokerId": broker_id}


async def register(client, namesrv, topics=(), compressed=False, crc=True, counter=1, **fields):
    wrapper = TopicConfigSerializeWrapper({t.topic_name: t for t in topics}, DataVersion(99, counter))
    body = RegisterBrokerBody(wrapper, []).encode(compressed)
    header = {**broker_fields(**fields), "haServerAddr": "127.0.0.1:10912", "compressed": str(compressed).lower(),
              "bodyCrc32": zlib.crc32(body) & 0x7FFFFFFF if crc else 0}
    return await call(client, namesrv, RequestCode.REGISTER_BROKER, header, body)


@pytest.mark.parametrize("compressed", [False, True])
async def test_register_then_route_cluster_and_topics(namesrv, client, compressed):
    response = await register(client, namesrv, [TopicConfig("T", 4, 4, 6), TopicConfig("TBW102", 8, 8, 7)],
                              compressed=compressed)
    assert response.code == ResponseCode.SUCCESS
    api = MQClientAPI(client)
    route = await api.get_topic_route(namesrv.address, "T")
    assert route.broker_datas[0].broker_addrs == {0: "127.0.0.1:10911"}
    info = await api.get_cluster_info(namesrv.address)
    assert info.cluster_addr_table == {"C1": {"broker-a"}}
    assert (await api.get_all_topics(namesrv.address)).topics == {"T", "TBW102"}
    assert (await api.get_topics_by_cluster(namesrv.address, "C1")).topics == {"T", "TBW102"}


async def test_crc_mismatch_is_refused(namesrv, client):
    body = RegisterBrokerBody().encode()
    header = {**broker_fields(), "haServerAddr": "x:1", "bodyCrc32": (zlib.crc32(body) + 1) & 0x7FFFFFFF}
    response = await call(client, namesrv, RequestCode.REGISTER_BROKER, header, body)
    assert (response.code, response.remark) == (ResponseCode.SYSTEM_ERROR, "crc32 not match")
    assert namesrv.routes.broker_live_table == {}


async def test_garbage_register_body_is_system_error_and_server_keeps_serving(namesrv, client):
    header = {**broker_fields(), "haServerAddr": "x:1", "compressed": "true"}
    response = await call(client, namesrv, RequestCode.REGISTER_BROKER, header, b"\x00garbage")
    assert response.code == ResponseCode.SYSTEM_ERROR
    missing = await call(client, namesrv, RequestCode.REGISTER_BROKER, {"brokerName": "x"})
    assert missing.code == ResponseCode.SYSTEM_ERROR and "brokerAddr" in missing.remark
    assert (await register(client, namesrv)).code == ResponseCode.SUCCESS


async def test_route_key_quoting_follows_requester_version(namesrv, client):
    await register(client, namesrv, [TopicConfig("T")])
    new = await call(client, namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}, version=409)
    old = await call(client, namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}, version=399)
    asked = await call(client, namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC,
                       {"topic": "T", "acceptStandardJsonOnly": "true"}, version=399)
    assert b'"brokerAddrs":{"0":"127.0.0.1:10911"}' in new.body
    assert b'"brokerAddrs":{0:"127.0.0.1:10911"}' in old.body
    assert b'{"0":' in asked.body
    assert TopicRouteData.decode(old.body) == TopicRouteData.decode(new.body)
    cluster = await call(client, namesrv, RequestCode.GET_BROKER_CLUSTER_INFO)
    assert b'{0:"127.0.0.1:10911"}' in cluster.body


async def test_unknown_topic_is_topic_not_exist(namesrv, client):
    response = await call(client, namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "nope"})
    assert response.code == ResponseCode.TOPIC_NOT_EXIST
    assert response.remark.startswith("No topic route info in name server for the topic: nope")
    with pytest.raises(TopicNotExistError):
        await MQClientAPI(client).get_topic_route(namesrv.address, "nope")


async def test_order_topic_conf_from_kv_namespace(namesrv, client):
    namesrv.config.order_message_enable = True
    await register(client, namesrv, [TopicConfig("T")])
    fields = {"namespace": "ORDER_TOPIC_CONFIG", "key": "T", "value": "broker-a:4"}
    assert (await call(client, namesrv, RequestCode.PUT_KV_CONFIG, fields)).code == ResponseCode.SUCCESS
    response = await call(client, namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"})
    route = TopicRouteData.decode(response.body)
    assert route.order_topic_conf == "broker-a:4"
    registered = await register(client, namesrv, [TopicConfig("T")])
    assert KVTable.decode(registered.body).table == {"T": "broker-a:4"}


async def test_kv_config_requests(namesrv, client):
    ns = {"namespace": "NS"}
    assert (await call(client, namesrv, RequestCode.PUT_KV_CONFIG, {**ns, "key": "k", "value": "v"})).code == 0
    got = await call(client, namesrv, RequestCode.GET_KV_CONFIG, {**ns, "key": "k"})
    assert (got.code, got.ext_fields["value"]) == (0, "v")
    listed = await call(client, namesrv, RequestCode.GET_KVLIST_BY_NAMESPACE, ns)
    assert KVTable.decode(listed.body).table == {"k": "v"}
    assert (await call(client, namesrv, RequestCode.DELETE_KV_CONFIG, {**ns, "key": "k"})).code == 0
    missing = await call(client, namesrv, RequestCode.GET_KV_CONFIG, {**ns, "key": "k"})
    assert (missing.code, missing.remark) == (ResponseCode.QUERY_NOT_FOUND, "No config item, Namespace: NS Key: k")
    nothing = await call(client, namesrv, RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "other"})
    assert nothing.code == ResponseCode.QUERY_NOT_FOUND
    assert "NS" in codec.json_loads(open(namesrv.config.kv_config_path).read())["configTable"]


async def test_query_data_version_and_unregister(namesrv, client):
    await register(client, namesrv, [TopicConfig("T")], counter=7)
    same = await call(client, namesrv, RequestCode.QUERY_DATA_VERSION, broker_fields(), DataVersion(99, 7).encode())
    assert same.ext_fields["changed"] == "false"
    assert DataVersion.decode(same.body) == DataVersion(99, 7)
    other = await call(client, namesrv, RequestCode.QUERY_DATA_VERSION, broker_fields(), DataVersion(99, 8).encode())
    assert other.ext_fields["changed"] == "true"
    assert (await call(client, namesrv, RequestCode.UNREGISTER_BROKER, broker_fields())).code == 0
    gone = await call(client, namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"})
    assert gone.code == ResponseCode.TOPIC_NOT_EXIST


async def test_wipe_and_add_write_perm(namesrv, client):
    await register(client, namesrv, [TopicConfig("T1"), TopicConfig("T2")])
    wiped = await call(client, namesrv, RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
    assert wiped.ext_fields == {"wipeTopicCount": "2"}
    response = await call(client, namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T1"})
    route = TopicRouteData.decode(response.body)
    assert route.queue_datas[0].perm == 4
    added = await call(client, namesrv, RequestCode.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
    assert added.ext_fields == {"addTopicCount": "2"}


async def test_delete_topic_and_system_topics(namesrv, client):
    await register(client, namesrv, [TopicConfig("T1"), TopicConfig("T2")])
    assert (await call(client, namesrv, RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": "T1"})).code == 0
    topics = codec.json_loads((await call(client, namesrv, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)).body)
    assert topics == {"topicList": ["T2"]}
    system = codec.json_loads((await call(client, namesrv, RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS)).body)
    assert system == {"brokerAddr": "127.0.0.1:10911", "topicList": ["C1", "broker-a"]}
    for code in (RequestCode.GET_UNIT_TOPIC_LIST, RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST,
                 RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST):
        assert codec.json_loads((await call(client, namesrv, code)).body) == {"topicList": []}


async def test_config_get_and_update(namesrv, client):
    got = await call(client, namesrv, RequestCode.GET_NAMESRV_CONFIG)
    assert parse_properties(got.body.decode())["orderMessageEnable"] == "false"
    updated = await call(client, namesrv, RequestCode.UPDATE_NAMESRV_CONFIG, body=b"orderMessageEnable=true\n")
    assert updated.code == 0 and namesrv.config.order_message_enable
    assert "orderMessageEnable=true" in open(namesrv.config.config_store_path).read()
    refused = await call(client, namesrv, RequestCode.UPDATE_NAMESRV_CONFIG, body=b"kvConfigPath=/etc/x\n")
    assert (refused.code, refused.remark) == (ResponseCode.NO_PERMISSION, "Can not update config in black list.")


async def test_unknown_code_is_not_supported(namesrv, client):
    response = await call(client, namesrv, 9999)
    assert response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED


async def test_broker_connection_close_drops_it_at_once(namesrv):
    broker = RemotingClient()
    await register(broker, namesrv, [TopicConfig("T")])
    assert namesrv.routes.pickup_topic_route_data("T") is not None
    await broker.shutdown()
    for _ in range(100):
        if namesrv.routes.pickup_topic_route_data("T") is None:
            break
        await asyncio.sleep(0.02)
    assert namesrv.routes.pickup_topic_route_data("T") is None
    assert namesrv.routes.broker_live_table == {}


async def test_expiry_scan_runs_periodically(tmp_path):
    config = NamesrvConfig(kv_config_path=str(tmp_path / "kv.json"), listen_port=0, bind_address="127.0.0.1",
                           broker_channel_expired_millis=100, scan_not_active_broker_interval_millis=50)
    async with NamesrvController(config) as namesrv:
        broker = RemotingClient()
        try:
            await register(broker, namesrv, [TopicConfig("T")])
            await asyncio.sleep(0.5)
            assert namesrv.routes.broker_live_table == {}
        finally:
            await broker.shutdown()
