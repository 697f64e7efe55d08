"""Issue 12, point 4: catch-up. A slave that is stopped while 100 MB are written to its master catches up when
it starts again and ends byte-identical over the whole CommitLog; a slave that starts late (empty) starts,
as Java's does, from the start of the master's last CommitLog file and ends byte-identical from there.
Pairs: ours with ours, our master with Java slaves, the Java master with our slaves.
"""
from __future__ import annotations

import hashlib
import uuid

import pytest
from harness import run_peer
from harness.ha import (
    COMMIT_LOG_FILE_SIZE,
    SLAVE,
    commit_log_range,
    create_topic,
    wait_for_route,
    wait_replicated,
)
from harness.py_servers import PythonBroker

MB = 1024 * 1024
BODY = 4096
BATCH = 32


def _write(namesrv: str, topic: str, megabytes: int) -> None:
    count = megabytes * MB // BODY
    result = run_peer("producer-bench", namesrv=namesrv, topic=topic, mode="batch", count=count, size=BODY,
                      batch=BATCH, warmup=0, timeout=900)
    assert result[-1]["errors"] == 0, result


def _start(kind: str, start_broker, namesrv, workdir, broker_name: str, config: dict):
    if kind == "java":
        return start_broker(broker_name=broker_name, **config)
    return PythonBroker(namesrv.addr, workdir, broker_name, **config).start()


def _digest(store_dir, start: int, end: int) -> str:
    digest = hashlib.sha256()
    offset = start
    while offset < end:  # 16 MB at a time: the range is over 100 MB
        step = min(end - offset, 16 * MB)
        digest.update(commit_log_range(store_dir, offset, offset + step))
        offset += step
    return digest.hexdigest()


@pytest.mark.parametrize("master_kind,slave_kind", [("py", "py"), ("py", "java"), ("java", "py")])
def test_restarted_and_late_slaves_catch_up_byte_identical(master_kind, slave_kind, java_namesrv, start_broker,
                                                            tmp_path):
    broker_name = f"ha-catchup-{master_kind}-{slave_kind}-{uuid.uuid4().hex[:6]}"
    ours = []
    try:
        master = _start(master_kind, start_broker, java_namesrv, tmp_path / "master", broker_name, {})
        ours += [master] if master_kind == "py" else []
        slave = _start(slave_kind, start_broker, java_namesrv, tmp_path / "slave", broker_name, SLAVE)
        ours += [slave] if slave_kind == "py" else []
        topic = f"HaCatchUp_{uuid.uuid4().hex[:8]}"
        create_topic(master.addr, topic, 4)
        wait_for_route(java_namesrv.addr, topic)
        _write(java_namesrv.addr, topic, 4)
        wait_replicated(master.addr, slave.addr)

        slave.stop()
        _write(java_namesrv.addr, topic, 100)
        slave.start()  # the same port and store
        end = wait_replicated(master.addr, slave.addr, timeout_s=600)
        assert end > 100 * MB
        assert _digest(slave.store_dir, 0, end) == _digest(master.store_dir, 0, end)

        late = _start(slave_kind, start_broker, java_namesrv, tmp_path / "late", broker_name,
                      dict(SLAVE, brokerId=2))
        ours += [late] if slave_kind == "py" else []
        end = wait_replicated(master.addr, late.addr, timeout_s=600)
        first = end - end % COMMIT_LOG_FILE_SIZE
        assert first >= COMMIT_LOG_FILE_SIZE
        assert _digest(late.store_dir, first, end) == _digest(master.store_dir, first, end)
    finally:
        for broker in ours:
            broker.stop()
