"""Issue 32, topics: what our Admin creates, mqadmin routes, lists and counts the same way, and the reverse, on
the Java servers and on ours; deletion by either tool is seen by the other; an ordered topic's KV entry is the
same whichever tool wrote it."""
from __future__ import annotations

import time

import pytest
from harness import mqadmin, run_peer, unique_name
from harness.admin_text import table

from rocketmq_py import Admin
from rocketmq_py.admin.cli.java_text import human_ms
from rocketmq_py.common.kv import NAMESPACE_ORDER_TOPIC_CONFIG
from rocketmq_py.common.route import TopicRouteData
from rocketmq_py.common.topic_config import TopicConfig
from rocketmq_py.errors import TopicNotExistError


def _routed(admin: Admin, topic: str, timeout_s: float = 30.0) -> TopicRouteData:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return admin.examine_topic_route_info(topic)
        except TopicNotExistError:
            assert time.monotonic() < deadline, f"{topic} was not registered with the name server"
            time.sleep(0.2)


def _mqadmin_route(namesrv: str, topic: str) -> TopicRouteData:
    printed = mqadmin("topicRoute", "-t", topic, namesrv=namesrv)
    return TopicRouteData.decode(printed[printed.index("{"):].encode())


def test_topics_made_by_either_tool_route_list_and_count_alike(servers):
    namesrv, broker = servers
    ours, theirs = unique_name("AdminMade"), unique_name("MqadminMade")
    with Admin(namesrv_addr=namesrv.addr, instance_name=unique_name("admin")) as admin:
        admin.create_and_update_topic_config(broker.addr, TopicConfig(ours, 3, 4, perm=6))
        route = _routed(admin, ours)
        assert _mqadmin_route(namesrv.addr, ours) == route
        assert [(q.read_queue_nums, q.write_queue_nums, q.perm) for q in route.queue_datas] == [(3, 4, 6)]

        mqadmin("updateTopic", "-b", broker.addr, "-t", theirs, "-r", "2", "-w", "2", "-p", "6", namesrv=namesrv.addr)
        assert _routed(admin, theirs) == _mqadmin_route(namesrv.addr, theirs)
        assert admin.examine_topic_config(broker.addr, theirs) == TopicConfig(theirs, 2, 2, 6)

        assert set(mqadmin("topicList", namesrv=namesrv.addr).split()) == admin.fetch_all_topic_list().topics
        assert mqadmin("topicClusterList", "-t", ours, namesrv=namesrv.addr).split() == sorted(
            admin.get_topic_cluster_list(ours))

        run_peer("produce", namesrv=namesrv.addr, topic=theirs, count=9)
        stats = admin.examine_topic_stats(theirs)
        printed = table(mqadmin("topicStatus", "-t", theirs, namesrv=namesrv.addr))
        assert printed == [[broker.broker_name, str(q.queue_id), str(o.min_offset), str(o.max_offset),
                            *human_ms(o.last_update_timestamp).split()]
                           for q, o in sorted(stats.offset_table.items())]
        assert sum(o.max_offset for o in stats.offset_table.values()) == 9


def test_ordered_topics_and_deletion_by_either_tool(servers):
    namesrv, broker = servers
    first, second = unique_name("OrderedA"), unique_name("OrderedB")
    with Admin(namesrv_addr=namesrv.addr, instance_name=unique_name("admin")) as admin:
        # mqadmin prints the stack trace of its lookup of the (absent) old order conf, and goes on.
        out = mqadmin("updateTopic", "-b", broker.addr, "-t", first, "-w", "3", "-o", "true", namesrv=namesrv.addr,
                      check=False)
        assert f"orderConf=[{broker.broker_name}:3]create topic to {broker.addr} success." in out
        assert admin.get_kv_config(NAMESPACE_ORDER_TOPIC_CONFIG, first) == f"{broker.broker_name}:3"
        admin.create_and_update_topic_config(broker.addr, TopicConfig(second, 3, 3, order=True))
        admin.create_or_update_order_conf(second, f"{broker.broker_name}:3", is_cluster=False)
        assert admin.get_kv_config(NAMESPACE_ORDER_TOPIC_CONFIG, second) == f"{broker.broker_name}:3"
        # The route carries the order conf only when the name server has orderMessageEnable (off by default).
        assert _routed(admin, second) == _mqadmin_route(namesrv.addr, second)

        assert admin.delete_topic(second, broker.cluster) == [broker.addr]
        assert second not in mqadmin("topicList", namesrv=namesrv.addr).split()
        _routed(admin, first)
        out = mqadmin("deleteTopic", "-t", first, "-c", broker.cluster, namesrv=namesrv.addr)
        assert f"delete topic [{first}] from NameServer success." in out
        with pytest.raises(TopicNotExistError):
            admin.examine_topic_route_info(first)
        assert admin.examine_topic_config(broker.addr, first) is None
