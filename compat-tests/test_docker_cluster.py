"""Issue 15, point 4: the compatibility suite with every server in a container.

The official name server and broker run from a stand-in of the official image built here from Debian
packages and the Maven Central jars (harness.docker_images); ours run from the rocketmq-py image users
deploy (docker/Dockerfile). The containers use host networking on loopback. Three situations:

* a mixed cluster: our broker and the Java broker under one name server, with Java and Python
  producers and consumers on both;
* the store moving between containers through a shared volume: our broker writes it, the Java broker
  serves it and writes more, ours serves all of it again, committed offsets included;
* a crash: ``docker kill`` of our broker during SYNC_FLUSH sends from the Java producer; after the
  container restarts on the same store, every acknowledged message is consumed.

With CI=true a Docker engine that does not answer fails these tests (conftest turns a skip into a failure).
"""
from __future__ import annotations

import json
import re
import time

import pytest
from harness import HarnessUnavailable, mqadmin, run_peer, unique_name, wire
from harness import docker_images
from harness.docker_backend import JavaBroker, JavaNameServer, PyBroker, PyNameServer, require_docker, run_once
from harness.docker_backend import image as java_image
from harness.peers import start_peer

from rocketmq_py.client.consumer import LitePullConsumer
from rocketmq_py.client.producer import Producer
from rocketmq_py.common.message import Message

pytestmark = [pytest.mark.compat, pytest.mark.docker]

QUERY_CONSUMER_OFFSET = 14
GET_MAX_OFFSET = 30
QUEUES = 4


@pytest.fixture(scope="module", autouse=True)
def docker_engine():
    try:
        require_docker()
    except HarnessUnavailable as error:
        pytest.skip(str(error))


@pytest.fixture
def containers(tmp_path):
    """Starts servers and stops them after the test. It takes tmp_path, where the servers' folders are, so that
    it is torn down first: a passed test's folder is removed with tmp_path (tmp_path_retention_policy), and a
    container saves its console log there when it stops."""
    started = []

    def start(server):
        started.append(server)
        return server.start()

    yield start
    for server in reversed(started):
        server.stop()


def _consume_with_python(namesrv: str, topic: str, wanted: int, timeout_s: float = 60) -> list:
    got = []
    with LitePullConsumer(unique_name("DockerLite"), namesrv_addr=namesrv, consume_from_where="CONSUME_FROM_FIRST_OFFSET") \
            as consumer:
        consumer.subscribe(topic, "*")
        deadline = time.monotonic() + timeout_s
        while len(got) < wanted and time.monotonic() < deadline:
            got.extend(consumer.poll(1000))
    return got


def _committed(broker_addr: str, group: str, topic: str) -> dict[int, int]:
    offsets = {}
    for queue_id in range(QUEUES):
        header, _ = wire.request(broker_addr, QUERY_CONSUMER_OFFSET,
                                 {"consumerGroup": group, "topic": topic, "queueId": queue_id})
        offsets[queue_id] = int(header["extFields"]["offset"]) if header["code"] == 0 else -1
    return offsets


def _stored(broker_addr: str, topic: str) -> int:
    total = 0
    for queue_id in range(QUEUES):
        header, _ = wire.request(broker_addr, GET_MAX_OFFSET, {"topic": topic, "queueId": queue_id})
        total += int(header["extFields"]["offset"])
    return total


def test_mixed_cluster_java_and_python_clients_on_both_brokers(containers, tmp_path):
    namesrv = containers(JavaNameServer(workdir=tmp_path / "namesrv"))
    ours = containers(PyBroker(namesrv, workdir=tmp_path / "ours", broker_name=unique_name("py")))
    java = containers(JavaBroker(namesrv, workdir=tmp_path / "java", broker_name=unique_name("java")))
    topic = unique_name("DockerMixed")
    mqadmin("updateTopic", "-c", "DefaultCluster", "-t", topic, "-r", str(QUEUES), "-w", str(QUEUES),
            namesrv=namesrv.addr)
    cluster = mqadmin("clusterList", namesrv=namesrv.addr)
    assert ours.broker_name in cluster and java.broker_name in cluster

    sent_by_java = run_peer("produce", namesrv=namesrv.addr, topic=topic, count=80, body="java-{i}")
    assert {line["status"] for line in sent_by_java} == {"SEND_OK"}
    assert {line["brokerName"] for line in sent_by_java} == {ours.broker_name, java.broker_name}
    sent_by_python = []
    with Producer(unique_name("DockerProducer"), namesrv_addr=namesrv.addr) as producer:
        for i in range(80):
            sent_by_python.append(producer.send(Message(topic, f"python-{i}".encode())))
    assert {result.message_queue.broker_name for result in sent_by_python} == {ours.broker_name, java.broker_name}
    sent_ids = {line["msgId"] for line in sent_by_java} | {result.msg_id for result in sent_by_python}
    assert len(sent_ids) == 160

    *received, done = run_peer("consume", namesrv=namesrv.addr, topic=topic, group=unique_name("DockerJavaGroup"),
                               count=160, timeout_ms=90000, timeout=150)
    assert done["count"] == 160 and not done["timedOut"]
    assert {line["msgId"] for line in received} == sent_ids
    assert {line["storeHost"] for line in received} == {ours.addr, java.addr}

    polled = _consume_with_python(namesrv.addr, topic, 160)
    assert {message.msg_id for message in polled} == sent_ids
    assert {message.body.decode().split("-")[0] for message in polled} == {"java", "python"}


def test_store_moves_between_containers_through_a_shared_volume(containers, tmp_path):
    namesrv = containers(PyNameServer(workdir=tmp_path / "namesrv"))
    store_home, broker_name = tmp_path / "broker", unique_name("moving")
    topic, group = unique_name("DockerMove"), unique_name("DockerMoveGroup")

    ours = containers(PyBroker(namesrv, workdir=store_home, broker_name=broker_name))
    mqadmin("updateTopic", "-b", ours.addr, "-t", topic, "-r", str(QUEUES), "-w", str(QUEUES),
            namesrv=namesrv.addr)
    first = run_peer("produce", namesrv=namesrv.addr, topic=topic, count=120, body="first-{i}")
    ours.stop()

    java = containers(JavaBroker(namesrv, workdir=store_home, broker_name=broker_name, port=ours.port))
    *received, done = run_peer("consume", namesrv=namesrv.addr, topic=topic, group=group, count=120,
                               timeout_ms=90000, timeout=150)
    assert done["count"] == 120 and not done["timedOut"]
    assert {line["msgId"] for line in received} == {line["msgId"] for line in first}, \
        "the Java broker serves every message our broker stored"
    second = run_peer("produce", namesrv=namesrv.addr, topic=topic, count=40, body="second-{i}")
    time.sleep(1)  # the consumer's last oneway offset update
    committed = _committed(java.addr, group, topic)
    java.stop()

    back = containers(PyBroker(namesrv, workdir=store_home, broker_name=broker_name, port=ours.port))
    assert _committed(back.addr, group, topic) == committed, "committed offsets move with the store"
    everything = {line["msgId"] for line in first} | {line["msgId"] for line in second}
    *received, done = run_peer("consume", namesrv=namesrv.addr, topic=topic, group=unique_name("DockerMoveFresh"),
                               count=160, timeout_ms=90000, timeout=150)
    assert done["count"] == 160 and not done["timedOut"]
    assert {line["msgId"] for line in received} == everything, \
        "our broker serves what it wrote and what the Java broker wrote"


def test_docker_kill_during_sync_flush_sends_loses_no_acknowledged_message(containers, tmp_path):
    namesrv = containers(JavaNameServer(workdir=tmp_path / "namesrv"))
    broker = containers(PyBroker(namesrv, workdir=tmp_path / "broker", broker_name=unique_name("crash"),
                                 extra_config={"flushDiskType": "SYNC_FLUSH"}))
    topic = unique_name("DockerCrash")
    mqadmin("updateTopic", "-b", broker.addr, "-t", topic, "-r", str(QUEUES), "-w", str(QUEUES),
            namesrv=namesrv.addr)

    producer = start_peer("produce", namesrv=namesrv.addr, topic=topic, count=100_000, body="stream-{i}",
                          retries=0, timeout_ms=3000)
    acked: list[dict] = []
    try:
        assert producer.stdout is not None
        for line in producer.stdout:
            item = json.loads(line)
            if "msgId" in item:
                acked.append(item)
            if len(acked) == 300:
                broker.kill()  # docker kill: SIGKILL to the broker, the container is gone
                break
        for line in producer.stdout:
            item = json.loads(line)
            if "msgId" in item:
                acked.append(item)
    finally:
        producer.kill()
        producer.wait(timeout=60)
    assert len(acked) >= 300 and {item["status"] for item in acked} == {"SEND_OK"}
    assert (broker.store_dir / "abort").exists(), "the kill left the abort file: recovery will be abnormal"

    broker.start()
    stored = _stored(broker.addr, topic)
    assert stored >= len(acked)
    *received, done = run_peer("consume", namesrv=namesrv.addr, topic=topic, group=unique_name("DockerCrashGroup"),
                               count=stored, timeout_ms=90000, timeout=150)
    assert done["count"] == stored and not done["timedOut"]
    assert {item["msgId"] for item in acked} <= {line["msgId"] for line in received}, \
        "every acknowledged send survives the kill"


@pytest.mark.parametrize("cpus", [None, "1", "1.5"])
def test_our_broker_counts_a_containers_cpu_quota_as_java_does(cpus):
    """``docker run --cpus``: our broker starts one front per CPU that Java's ``availableProcessors`` counts in
    the same container (the JVM prints it as "Effective CPU Count"), none on one; not one per host core."""
    limit = ("--cpus", cpus) if cpus else ()
    java = run_once(java_image(), "-XshowSettings:system", "-version", docker_args=(*limit, "--entrypoint", "java"))
    counted = re.search(r"Effective CPU Count: (\d+)", java)
    assert counted, java
    java_cpus = int(counted.group(1))
    printed = run_once(docker_images.rocketmq_py_image(), "broker", "-p", docker_args=limit)
    fronts = re.search(r"^serverWorkerProcesses=(\d+)$", printed, re.MULTILINE)
    assert fronts, printed
    assert int(fronts.group(1)) == (java_cpus if java_cpus > 1 else 0), (cpus, java_cpus, printed)
