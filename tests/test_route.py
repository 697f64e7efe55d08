"""Route, cluster and topic-list bodies in the forms the Java name server writes."""
from rocketmq_py.common.route import ClusterInfo, PermName, TopicList, TopicRouteData

UNQUOTED = (
    b'{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"brokerName":"broker-a",'
    b'"cluster":"DefaultCluster"}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,'
    b'"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
)
QUOTED = UNQUOTED.replace(b"{0:", b'{"0":').replace(b",1:", b',"1":')


def test_route_reads_unquoted_and_quoted_broker_ids_alike():
    unquoted = TopicRouteData.decode(UNQUOTED)
    quoted = TopicRouteData.decode(QUOTED)
    assert unquoted == quoted
    broker = unquoted.broker_datas[0]
    assert broker.broker_addrs == {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}
    assert broker.master_addr == "10.0.0.1:10911"
    queue = unquoted.queue_datas[0]
    assert (queue.read_queue_nums, queue.write_queue_nums, queue.perm) == (4, 4, 6)


def test_route_encodes_quoted_for_new_clients_and_bare_for_old_ones():
    route = TopicRouteData.decode(UNQUOTED)
    assert b'"brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.2:10911"}' in route.encode(standard_json=True)
    assert b'"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"}' in route.encode(standard_json=False)
    assert TopicRouteData.decode(route.encode(standard_json=False)) == route


def test_old_topic_syn_flag_spelling_is_read():
    body = b'{"brokerDatas":[],"queueDatas":[{"brokerName":"b","perm":6,"readQueueNums":1,"topicSynFlag":2,"writeQueueNums":1}]}'
    assert TopicRouteData.decode(body).queue_datas[0].topic_sys_flag == 2


def test_cluster_info_round_trip():
    body = (b'{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"broker-a",'
            b'"cluster":"C"}},"clusterAddrTable":{"C":["broker-a"]}}')
    info = ClusterInfo.decode(body)
    assert info.cluster_addr_table == {"C": {"broker-a"}}
    assert info.broker_addr_table["broker-a"].broker_addrs == {0: "127.0.0.1:10911"}
    assert ClusterInfo.decode(info.encode()) == info


def test_topic_list_round_trip():
    topics = TopicList.decode(b'{"topicList":["b","a","TBW102"]}')
    assert topics.topics == {"a", "b", "TBW102"}
    assert TopicList.decode(topics.encode()) == topics


def test_perm_names():
    assert PermName.to_string(6) == "RW-"
    assert PermName.to_string(7) == "RWX"
    assert PermName.is_writeable(2) and not PermName.is_readable(2)
