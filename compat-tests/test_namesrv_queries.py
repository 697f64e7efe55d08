"""Issue 2, point 1: the Python remoting client reads routes, cluster info and topic lists from the
official Java name server, and what it parses equals what Java's mqadmin prints for the same cluster."""
from __future__ import annotations

import re
import uuid

import pytest
from harness import mqadmin

from rocketmq_py import codec
from rocketmq_py.client.api import MQClientAPI
from rocketmq_py.common.route import TopicRouteData
from rocketmq_py.errors import TopicNotExistError
from rocketmq_py.remoting import RemotingClient

SERIALIZATIONS = pytest.mark.parametrize(
    "serialize_type", [codec.SERIALIZE_JSON, codec.SERIALIZE_ROCKETMQ], ids=["json", "rocketmq"]
)


@pytest.fixture(scope="module")
def created_topic(java_namesrv, java_broker):
    topic = f"RouteTopic_{uuid.uuid4().hex[:8]}"
    mqadmin("updateTopic", "-c", java_broker.cluster, "-t", topic, "-r", "3", "-w", "5", "-p", "6",
            namesrv=java_namesrv.addr)
    return topic


async def _api_call(serialize_type, method, *args):
    remoting = RemotingClient()
    api = MQClientAPI(remoting, serialize_type=serialize_type)
    try:
        return await getattr(api, method)(*args)
    finally:
        await remoting.shutdown()


@SERIALIZATIONS
async def test_topic_route_matches_mqadmin_topic_route(java_namesrv, java_broker, created_topic, serialize_type):
    route = await _api_call(serialize_type, "get_topic_route", java_namesrv.addr, created_topic)

    printed = mqadmin("topicRoute", "-t", created_topic, namesrv=java_namesrv.addr)
    expected = TopicRouteData.decode(printed[printed.index("{"):].encode())

    assert route == expected
    [queue] = route.queue_datas
    assert (queue.broker_name, queue.read_queue_nums, queue.write_queue_nums, queue.perm) == (
        java_broker.broker_name, 3, 5, 6)
    [broker] = route.broker_datas
    assert broker.broker_addrs == {0: java_broker.addr}
    assert broker.cluster == java_broker.cluster


def _cluster_rows(printed: str) -> set[tuple[str, str, int, str]]:
    """(cluster, broker, broker id, address) rows of mqadmin's clusterList table."""
    rows = set()
    for line in printed.splitlines():
        match = re.match(r"^(\S+)\s+(\S+)\s+(\d+)\s+(\d+\.\d+\.\d+\.\d+:\d+)\s", line)
        if match:
            rows.add((match[1], match[2], int(match[3]), match[4]))
    return rows


@SERIALIZATIONS
async def test_cluster_info_matches_mqadmin_cluster_list(java_namesrv, java_broker, serialize_type):
    info = await _api_call(serialize_type, "get_cluster_info", java_namesrv.addr)

    ours = {
        (cluster, name, broker_id, addr)
        for cluster, names in info.cluster_addr_table.items()
        for name in names
        for broker_id, addr in info.broker_addr_table[name].broker_addrs.items()
    }
    printed = _cluster_rows(mqadmin("clusterList", namesrv=java_namesrv.addr))
    assert printed, "mqadmin clusterList printed no broker row"
    assert ours == printed
    assert (java_broker.cluster, java_broker.broker_name, 0, java_broker.addr) in ours


@SERIALIZATIONS
async def test_topic_list_matches_mqadmin_topic_list(java_namesrv, created_topic, serialize_type):
    topics = await _api_call(serialize_type, "get_all_topics", java_namesrv.addr)

    printed = {line.strip() for line in mqadmin("topicList", namesrv=java_namesrv.addr).splitlines() if line.strip()}
    assert topics.topics == printed
    assert {created_topic, "TBW102"} <= topics.topics


async def test_topics_by_cluster_lists_the_created_topic(java_namesrv, java_broker, created_topic):
    topics = await _api_call(codec.SERIALIZE_ROCKETMQ, "get_topics_by_cluster", java_namesrv.addr,
                             java_broker.cluster)
    assert created_topic in topics.topics


async def test_unknown_topic_is_a_typed_error_that_says_what_to_check(java_namesrv, java_broker):
    with pytest.raises(TopicNotExistError, match="no route info of topic 'NoSuchTopic_x'") as raised:
        await _api_call(codec.SERIALIZE_JSON, "get_topic_route", java_namesrv.addr, "NoSuchTopic_x")
    assert raised.value.code == 17
