"""Issue 5, point 2: the official ``mqadmin`` (4.9.8 tools) against OUR name server and broker gives sane output
for clusterList, topicList, topicRoute, topicStatus, updateTopic, consumerProgress and brokerStatus (and
updateSubGroup, deleteTopic, getBrokerConfig). mqadmin prints failures as stack traces on stderr, which
the harness turns into test failures."""
from __future__ import annotations

import re
import time

from harness import mqadmin, run_peer, unique_name, wire

from rocketmq_py.common.route import TopicRouteData


def _route(namesrv: str, topic: str, timeout_s: float = 20.0) -> TopicRouteData:
    deadline = time.monotonic() + timeout_s
    while True:
        printed = mqadmin("topicRoute", "-t", topic, namesrv=namesrv, check=False)
        if "{" in printed or time.monotonic() > deadline:
            return TopicRouteData.decode(printed[printed.index("{"):].encode())
        time.sleep(0.3)


def test_cluster_list_shows_our_broker(py_namesrv, py_broker):
    printed = mqadmin("clusterList", namesrv=py_namesrv.addr)
    rows = [line.split() for line in printed.splitlines() if py_broker.addr in line]
    assert len(rows) == 1, printed
    row = rows[0]
    assert row[:5] == [py_broker.cluster, py_broker.broker_name, "0", py_broker.addr, "V4_9_8"]
    assert re.match(r"^\d+\.\d{2}\(0,0ms\)$", row[5]), row


def test_update_topic_then_route_list_and_status(py_namesrv, py_broker):
    topic = unique_name("AdminTopic")
    out = mqadmin("updateTopic", "-c", py_broker.cluster, "-t", topic, "-r", "3", "-w", "5",
                  namesrv=py_namesrv.addr)
    assert "success" in out
    route = _route(py_namesrv.addr, topic)
    [queue] = route.queue_datas
    assert (queue.broker_name, queue.read_queue_nums, queue.write_queue_nums, queue.perm) == (
        py_broker.broker_name, 3, 5, 6)
    assert route.broker_datas[0].broker_addrs == {0: py_broker.addr}
    listed = set(mqadmin("topicList", namesrv=py_namesrv.addr).split())
    assert {topic, "TBW102", "SELF_TEST_TOPIC", "SCHEDULE_TOPIC_XXXX", py_broker.broker_name,
            py_broker.cluster} <= listed
    sent = run_peer("produce", namesrv=py_namesrv.addr, topic=topic, count=12, body="status-{i}")
    printed = mqadmin("topicStatus", "-t", topic, namesrv=py_namesrv.addr)
    rows = [line.split() for line in printed.splitlines() if line.startswith(py_broker.broker_name)]
    assert [int(row[1]) for row in rows] == [0, 1, 2, 3, 4]
    assert sum(int(row[3]) for row in rows) == len(sent) and all(int(row[2]) == 0 for row in rows)
    per_queue = {}
    for item in sent:
        per_queue[item["queueId"]] = per_queue.get(item["queueId"], 0) + 1
    assert {int(row[1]): int(row[3]) for row in rows if int(row[3])} == per_queue
    assert all(len(row) >= 6 for row in rows if int(row[3])), "queues with messages show a last-updated time"


def test_consumer_progress_after_a_java_consumer(py_namesrv, py_broker):
    topic, group = unique_name("Progress"), unique_name("ProgressGroup")
    mqadmin("updateTopic", "-b", py_broker.addr, "-t", topic, "-r", "2", "-w", "2", namesrv=py_namesrv.addr)
    run_peer("produce", namesrv=py_namesrv.addr, topic=topic, count=10)
    *_, done = run_peer("consume", namesrv=py_namesrv.addr, topic=topic, group=group, count=10, timeout_ms=60000)
    assert done["count"] == 10
    time.sleep(1)  # the consumer's last offset update is oneway
    committed = {}
    for queue_id in (0, 1):
        header, _ = wire.request(py_broker.addr, 14, {"consumerGroup": group, "topic": topic, "queueId": queue_id})
        committed[queue_id] = int(header["extFields"]["offset"])
    assert sum(committed.values()) >= 8, "the Java consumer may still miss its very last commit"
    printed = mqadmin("consumerProgress", "-g", group, namesrv=py_namesrv.addr)
    rows = [line.split() for line in printed.splitlines() if line.startswith(topic)]
    assert len(rows) == 2, printed
    for row in rows:
        broker_offset, consumer_offset, diff = int(row[3]), int(row[4]), int(row[5])
        assert row[1] == py_broker.broker_name and consumer_offset == committed[int(row[2])]
        assert diff == broker_offset - consumer_offset
    assert sum(int(row[3]) for row in rows) == 10
    assert f"Diff Total: {10 - sum(committed.values())}" in printed
    overview = mqadmin("consumerProgress", namesrv=py_namesrv.addr)
    assert group in overview, overview


def test_broker_status_and_config(py_namesrv, py_broker):
    run_peer("produce", namesrv=py_namesrv.addr, topic=unique_name("StatusTopic"), count=3)
    printed = mqadmin("brokerStatus", "-b", py_broker.addr, namesrv=py_namesrv.addr)
    stats = {}
    for line in printed.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            stats[key.strip()] = value.strip()
    assert stats["brokerVersionDesc"] == "V4_9_8" and stats["brokerVersion"] == "409"
    # Java prints the 10 s, 60 s and 600 s put rates once it has that much history.
    assert int(stats["msgPutTotalTodayNow"]) >= 3 and len(stats["putTps"].split()) <= 3
    assert int(stats["commitLogMaxOffset"]) > 0
    config = mqadmin("getBrokerConfig", "-b", py_broker.addr, namesrv=py_namesrv.addr)
    assert re.search(r"brokerName\s*=\s*" + re.escape(py_broker.broker_name), config), config


def test_subscription_group_and_delete_topic(py_namesrv, py_broker):
    group, topic = unique_name("AdminGroup"), unique_name("Doomed")
    out = mqadmin("updateSubGroup", "-b", py_broker.addr, "-g", group, "-r", "5", namesrv=py_namesrv.addr)
    assert "success" in out
    mqadmin("updateTopic", "-b", py_broker.addr, "-t", topic, "-r", "1", "-w", "1", namesrv=py_namesrv.addr)
    _route(py_namesrv.addr, topic)
    out = mqadmin("deleteTopic", "-c", py_broker.cluster, "-t", topic, namesrv=py_namesrv.addr)
    assert "success" in out
    assert topic not in mqadmin("topicList", namesrv=py_namesrv.addr).split()
