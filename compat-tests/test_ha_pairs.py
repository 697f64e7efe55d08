"""Issue 12, point 1: mixed master-slave pairs on Java's HA wire, with the official 4.9.7 broker and the 4.9.8
client and mqadmin. For ours+ours, our master + a Java slave, and a Java master + our slave: 10 000
messages from a Java producer through the master; the slave's CommitLog is byte-identical to the master's
over the written range; the slave gets the topic from the master (SlaveSynchronize); ``mqadmin clusterList``
lists both (BID 0 and 1); then, with the master stopped, a Java consumer of a new group (so its route and
its pulls can only reach the slave) gets every message from the slave.
"""
from __future__ import annotations

import base64
import hashlib
import time
import uuid

import pytest
from harness import mqadmin, run_peer, wire
from harness.ha import SLAVE, commit_log_range, create_topic, wait_for_route, wait_replicated
from harness.py_servers import PythonBroker

MESSAGES = 10_000
GET_ALL_TOPIC_CONFIG = 21


def _start(kind: str, start_broker, namesrv, tmp_path, broker_name: str, role_config: dict):
    if kind == "java":
        return start_broker(broker_name=broker_name, **role_config)
    workdir = tmp_path / f"py-{role_config.get('brokerRole', 'master').lower()}"
    return PythonBroker(namesrv.addr, workdir, broker_name, **role_config).start()


def _wait_for_topic(addr: str, topic: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        header, body = wire.request(addr, GET_ALL_TOPIC_CONFIG, timeout=5.0)
        if header.get("code") == 0 and f'"{topic}"'.encode() in body:
            return
        assert time.monotonic() < deadline, f"the slave {addr} never got topic {topic} from its master"
        time.sleep(0.5)


@pytest.mark.parametrize("master_kind,slave_kind", [("py", "py"), ("py", "java"), ("java", "py")])
def test_mixed_pair_replicates_byte_for_byte_and_the_slave_serves_a_java_consumer(
        master_kind, slave_kind, java_namesrv, start_broker, tmp_path):
    broker_name = f"ha-{master_kind}-{slave_kind}-{uuid.uuid4().hex[:6]}"
    ours = []
    try:
        master = _start(master_kind, start_broker, java_namesrv, tmp_path, broker_name, {})
        ours += [master] if master_kind == "py" else []
        slave = _start(slave_kind, start_broker, java_namesrv, tmp_path, broker_name, SLAVE)
        ours += [slave] if slave_kind == "py" else []
        topic = f"HaPair_{uuid.uuid4().hex[:8]}"
        create_topic(master.addr, topic, 4)
        wait_for_route(java_namesrv.addr, topic)

        sent = run_peer("produce", namesrv=java_namesrv.addr, topic=topic, count=MESSAGES, timeout=900)
        assert len(sent) == MESSAGES and {line["status"] for line in sent} == {"SEND_OK"}
        assert {line["brokerName"] for line in sent} == {broker_name}

        end = wait_replicated(master.addr, slave.addr)
        assert end > 0
        master_bytes = commit_log_range(master.store_dir, 0, end)
        slave_bytes = commit_log_range(slave.store_dir, 0, end)
        assert hashlib.sha256(slave_bytes).hexdigest() == hashlib.sha256(master_bytes).hexdigest()
        assert slave_bytes == master_bytes

        listing = mqadmin("clusterList", namesrv=java_namesrv.addr)
        rows = [line.split() for line in listing.splitlines() if broker_name in line]
        assert sorted((row[row.index(broker_name) + 1], row[row.index(broker_name) + 2]) for row in rows) == \
            [("0", master.addr), ("1", slave.addr)], listing

        _wait_for_topic(slave.addr, topic)
        master.stop()
        got = run_peer("consume", namesrv=java_namesrv.addr, topic=topic, group=f"HaSlaveReader_{uuid.uuid4().hex[:6]}",
                       count=MESSAGES, timeout_ms=300_000, timeout=420)
        done = got[-1]
        assert done.get("done") and not done["timedOut"], done
        bodies = {base64.b64decode(line["bodyBase64"]).decode() for line in got[:-1]}
        assert bodies == {f"message-{index}" for index in range(MESSAGES)}
    finally:
        for broker in ours:
            broker.stop()
