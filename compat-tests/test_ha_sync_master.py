"""Issue 12, point 2: SYNC_MASTER answers, ours next to the official 4.9.7 broker's in the same situations.
With no slave: SLAVE_NOT_AVAILABLE (11). With a slave connected: SUCCESS, and the acknowledged message is
already readable on the slave by its CommitLog offset. With the slave paused (SIGSTOP): FLUSH_SLAVE_TIMEOUT
(12) after slaveTimeout. The codes are asserted for both brokers, so they must agree.
"""
from __future__ import annotations

import os
import signal
import time
import uuid

import pytest
from harness.ha import SLAVE, create_topic, pause, physical_offset, readable_at, send_raw
from harness.py_servers import PythonBroker

SUCCESS, SLAVE_NOT_AVAILABLE, FLUSH_SLAVE_TIMEOUT = 0, 11, 12
SYNC_MASTER = {"brokerRole": "SYNC_MASTER", "slaveTimeout": 3000}


def _start(kind: str, start_broker, namesrv, workdir, broker_name: str, config: dict):
    if kind == "java":
        return start_broker(broker_name=broker_name, **config)
    return PythonBroker(namesrv.addr, workdir, broker_name, **config).start()


@pytest.mark.parametrize("kind", ["java", "py"])
def test_sync_master_answers_as_java_does(kind, java_namesrv, start_broker, tmp_path):
    broker_name = f"ha-sync-{kind}-{uuid.uuid4().hex[:6]}"
    ours = []
    try:
        master = _start(kind, start_broker, java_namesrv, tmp_path / "master", broker_name, SYNC_MASTER)
        ours += [master] if kind == "py" else []
        topic = f"HaSync_{uuid.uuid4().hex[:8]}"
        create_topic(master.addr, topic, 1)

        code, _ = send_raw(master.addr, topic, b"before any slave")
        assert code == SLAVE_NOT_AVAILABLE

        slave = _start(kind, start_broker, java_namesrv, tmp_path / "slave", broker_name, SLAVE)
        ours += [slave] if kind == "py" else []
        deadline = time.monotonic() + 60
        while send_raw(master.addr, topic, b"until the slave is connected")[0] != SUCCESS:
            assert time.monotonic() < deadline, "the slave never connected to the master"
            time.sleep(0.5)
        for index in range(30):
            code, fields = send_raw(master.addr, topic, b"acknowledged %d" % index)
            assert code == SUCCESS
            assert readable_at(slave.addr, physical_offset(fields["msgId"])), \
                f"message {index} was acknowledged before the slave had it"

        pause(slave.pid)
        try:
            code, _ = send_raw(master.addr, topic, b"while the slave is paused")
            assert code == FLUSH_SLAVE_TIMEOUT
        finally:
            os.kill(slave.pid, signal.SIGCONT)
    finally:
        for broker in ours:
            broker.stop()
