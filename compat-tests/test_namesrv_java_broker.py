"""Issue 5, name server: the official Java broker registers with OUR name server, Java's mqadmin reads
the cluster through it, and a Java producer and consumer route through it to the Java broker."""
from __future__ import annotations

import base64
import re
import time
import uuid

import pytest
from harness import JavaBroker, mqadmin, run_peer

from rocketmq_py.common.route import TopicRouteData


@pytest.fixture(scope="module")
def broker_on_py_namesrv(py_namesrv, java_build, tmp_path_factory):
    broker = JavaBroker(py_namesrv.addr, build=java_build, workdir=tmp_path_factory.mktemp("broker-py-ns"),
                        broker_name="broker-pyns")
    broker.start()
    yield broker
    broker.stop()


def _cluster_rows(printed: str) -> set[tuple[str, str, int, str]]:
    rows = set()
    for line in printed.splitlines():
        match = re.match(r"^(\S+)\s+(\S+)\s+(\d+)\s+(\d+\.\d+\.\d+\.\d+:\d+)\s", line)
        if match:
            rows.add((match[1], match[2], int(match[3]), match[4]))
    return rows


def _cluster_rows_when(namesrv_addr: str, done, timeout_s: float = 30.0) -> set[tuple[str, str, int, str]]:
    """clusterList rows, asked again until ``done(rows)`` (mqadmin may time out on a loaded machine)."""
    deadline = time.monotonic() + timeout_s
    while True:
        rows = _cluster_rows(mqadmin("clusterList", namesrv=namesrv_addr, check=False))
        if done(rows) or time.monotonic() > deadline:
            return rows
        time.sleep(0.5)


def test_mqadmin_cluster_list_shows_the_java_broker(py_namesrv, broker_on_py_namesrv):
    expected = {(broker_on_py_namesrv.cluster, broker_on_py_namesrv.broker_name, 0, broker_on_py_namesrv.addr)}
    assert _cluster_rows_when(py_namesrv.addr, lambda rows: rows == expected) == expected


def test_mqadmin_topic_list_has_the_broker_system_topics(py_namesrv, broker_on_py_namesrv):
    topics = set(mqadmin("topicList", namesrv=py_namesrv.addr).split())
    assert {"TBW102", "SELF_TEST_TOPIC", broker_on_py_namesrv.broker_name, broker_on_py_namesrv.cluster} <= topics


def test_mqadmin_update_topic_then_topic_route(py_namesrv, broker_on_py_namesrv):
    topic = f"PyNsTopic_{uuid.uuid4().hex[:8]}"
    out = mqadmin("updateTopic", "-c", broker_on_py_namesrv.cluster, "-t", topic, "-r", "3", "-w", "5",
                  namesrv=py_namesrv.addr)
    assert "success" in out
    deadline = time.monotonic() + 20  # the broker re-registers at once after creating a topic
    while True:
        printed = mqadmin("topicRoute", "-t", topic, namesrv=py_namesrv.addr, check=False)
        if "{" in printed or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    route = TopicRouteData.decode(printed[printed.index("{"):].encode())
    [queue] = route.queue_datas
    assert (queue.broker_name, queue.read_queue_nums, queue.write_queue_nums, queue.perm) == (
        broker_on_py_namesrv.broker_name, 3, 5, 6)
    assert route.broker_datas[0].broker_addrs == {0: broker_on_py_namesrv.addr}


def test_java_producer_and_consumer_route_through_our_namesrv(py_namesrv, broker_on_py_namesrv):
    topic = f"PyNsFlow_{uuid.uuid4().hex[:8]}"
    mqadmin("updateTopic", "-c", broker_on_py_namesrv.cluster, "-t", topic, "-r", "4", "-w", "4",
            namesrv=py_namesrv.addr)
    sent = run_peer("produce", namesrv=py_namesrv.addr, topic=topic, count=20, tags="TagA", body="via-py-ns-{i}")
    assert {s["status"] for s in sent} == {"SEND_OK"}
    assert {s["brokerName"] for s in sent} == {broker_on_py_namesrv.broker_name}
    *received, done = run_peer("consume", namesrv=py_namesrv.addr, topic=topic,
                               group=f"PyNsGroup_{uuid.uuid4().hex[:8]}", count=20, timeout_ms=60000)
    assert done["count"] == 20 and not done["timedOut"]
    assert sorted(base64.b64decode(m["bodyBase64"]).decode() for m in received) == sorted(
        f"via-py-ns-{i}" for i in range(20))
    assert sorted(m["msgId"] for m in received) == sorted(s["msgId"] for s in sent)


def test_compressed_registration_and_unregistration_on_stop(py_namesrv, java_build, tmp_path):
    broker = JavaBroker(py_namesrv.addr, build=java_build, workdir=tmp_path / "broker", broker_name="broker-zip",
                        cluster="ZipCluster", extra_config={"compressedRegister": True})
    broker.start()
    try:
        row = ("ZipCluster", "broker-zip", 0, broker.addr)
        assert row in _cluster_rows_when(py_namesrv.addr, lambda rows: row in rows)
        printed = mqadmin("topicRoute", "-t", "TBW102", namesrv=py_namesrv.addr)
        route = TopicRouteData.decode(printed[printed.index("{"):].encode())
        assert "broker-zip" in {q.broker_name for q in route.queue_datas}
    finally:
        broker.stop()
    gone = _cluster_rows_when(py_namesrv.addr, lambda rows: not any(r[1] == "broker-zip" for r in rows))
    assert not any(row[1] == "broker-zip" for row in gone), "a stopped broker must be gone from the cluster"
