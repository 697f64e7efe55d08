"""Master-slave pairs for the HA tests (issues 12 and 28): the keys that make a broker a slave, the readings the
tests compare (CommitLog ends, CommitLog bytes, queue and consumer offsets, raw pulls), and the official push
consumer as a process that can be paused. Our broker is harness/py_servers.py's PythonBroker.

    master = JavaBroker(ns, broker_name="ha-a", ...)  or  PythonBroker(ns.addr, workdir, "ha-a")
    slave  = PythonBroker(ns.addr, workdir, "ha-a", **SLAVE)   (JavaBroker(..., extra_config=SLAVE))
    wait_replicated(master, slave); commit_log_range(master.store_dir, 0, end) == ...(slave.store_dir, 0, end)
"""
from __future__ import annotations

import base64
import json
import os
import signal
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from . import wire
from .peers import start_peer

GET_BROKER_RUNTIME_INFO = 28
COMMIT_LOG_FILE_SIZE = 64 * 1024 * 1024  # the harness brokers' mappedFileSizeCommitLog

#: broker.conf keys of a slave that serves reads (brokerId 1 in the master's broker name).
SLAVE = {"brokerId": 1, "brokerRole": "SLAVE", "slaveReadEnable": True}


def runtime_info(addr: str) -> dict[str, str]:
    """GET_BROKER_RUNTIME_INFO as a dict (the KVTable body)."""
    header, body = wire.request(addr, GET_BROKER_RUNTIME_INFO, timeout=5.0)
    if header.get("code") != 0:
        raise RuntimeError(f"GET_BROKER_RUNTIME_INFO of {addr} answered {header}")
    return json.loads(body)["table"]


def commit_log_max_offset(addr: str) -> int:
    return int(runtime_info(addr)["commitLogMaxOffset"])


def wait_replicated(master_addr: str, slave_addr: str, timeout_s: float = 120.0) -> int:
    """Wait until the slave's CommitLog ends where the master's does; return that offset."""
    deadline = time.monotonic() + timeout_s
    while True:
        master_end = commit_log_max_offset(master_addr)
        slave_end = commit_log_max_offset(slave_addr)
        if slave_end == master_end:
            return master_end
        if time.monotonic() > deadline:
            raise AssertionError(f"the slave's CommitLog ends at {slave_end}, the master's at {master_end}")
        time.sleep(0.2)


def send_until_stored(producer: Any, messages: list[Any], queue: Any) -> Any:
    """``producer.send(messages, queue)``, again after each SYSTEM_BUSY answer, as an application does.

    A loaded broker (Java's or ours) answers SYSTEM_BUSY ``[TIMEOUT_CLEAN_QUEUE]`` to a send that waited in its
    send queue longer than waitTimeMillsInSendQueue (200 ms) and drops it unstored (Java's BrokerFastFailure), and
    a send to a chosen queue is not retried by the producer: with many brokers on two loaded cores, a Java
    master so refused one batch of a test's writes (waited 948 ms)."""
    from rocketmq_py.errors import SystemBusyError

    while True:
        try:
            return producer.send(messages, queue)
        except SystemBusyError:
            time.sleep(0.1)


def commit_log_range(store_dir: Path, start: int, end: int, file_size: int = COMMIT_LOG_FILE_SIZE) -> bytes:
    """The CommitLog bytes [start, end) read from the files of a store directory."""
    out = bytearray()
    offset = start
    while offset < end:
        base = offset - offset % file_size
        take = min(end - offset, base + file_size - offset)
        with open(Path(store_dir) / "commitlog" / f"{base:020d}", "rb") as file:
            file.seek(offset - base)
            out += file.read(take)
        offset += take
    return bytes(out)


SEND_MESSAGE_V2 = 310
VIEW_MESSAGE_BY_ID = 33


def send_raw(addr: str, topic: str, body: bytes, queue_id: int = 0, timeout: float = 30.0) -> tuple[int, dict]:
    """One SEND_MESSAGE_V2 as a Java producer sends it (WAIT=true); returns (response code, ext fields)."""
    key = uuid_key()
    properties = f"WAIT\x01true\x02UNIQ_KEY\x01{key}\x02"
    fields = {"a": "ha_compat_pg", "b": topic, "c": "TBW102", "d": 4, "e": queue_id, "f": 0,
              "g": int(time.time() * 1000), "h": 0, "i": properties, "j": 0, "k": "false", "m": "false"}
    header, _ = wire.request(addr, SEND_MESSAGE_V2, fields, body, timeout=timeout)
    return header["code"], header.get("extFields") or {}


def uuid_key() -> str:
    import uuid

    return uuid.uuid4().hex.upper()


def physical_offset(offset_msg_id: str) -> int:
    """The CommitLog offset in an (IPv4) offset message id."""
    return int(offset_msg_id[-16:], 16)


def readable_at(addr: str, offset: int) -> bool:
    """Whether the broker returns the whole record at CommitLog ``offset`` (VIEW_MESSAGE_BY_ID)."""
    header, body = wire.request(addr, VIEW_MESSAGE_BY_ID, {"offset": offset}, timeout=5.0)
    return header.get("code") == 0 and len(body) > 0


UPDATE_AND_CREATE_TOPIC = 17


def create_topic(broker_addr: str, topic: str, queues: int = 4, timeout: float = 30.0) -> None:
    """UPDATE_AND_CREATE_TOPIC as ``mqadmin updateTopic -b`` sends it, with a timeout a loaded machine allows
    (mqadmin's own is 3 s)."""
    header, _ = wire.request(broker_addr, UPDATE_AND_CREATE_TOPIC, {
        "topic": topic, "defaultTopic": "TBW102", "readQueueNums": queues, "writeQueueNums": queues, "perm": 6,
        "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": "false"}, timeout=timeout)
    if header.get("code") != 0:
        raise RuntimeError(f"creating {topic} on {broker_addr} failed: {header}")


GET_ALL_TOPIC_CONFIG = 21


def wait_topic_synced(slave_addr: str, topic: str, timeout_s: float = 120.0) -> None:
    """Wait until the slave has ``topic`` in its topic table.

    A slave copies the master's topics every 10 s (SlaveSynchronize), once it has learnt the master's address
    from a registration; a slave that never copied a topic answers TOPIC_NOT_EXIST for it after the master
    dies, in Java's broker as in ours. A failover test must wait for the copy before it kills the master."""
    deadline = time.monotonic() + timeout_s
    while True:
        header, body = wire.request(slave_addr, GET_ALL_TOPIC_CONFIG, {}, timeout=5.0)
        if header.get("code") == 0 and f'"{topic}"'.encode() in (body or b""):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"the slave {slave_addr} did not copy {topic} from its master in {timeout_s} s")
        time.sleep(0.5)


GET_ROUTEINFO_BY_TOPIC = 105


def wait_for_route(namesrv_addr: str, topic: str, timeout_s: float = 60.0) -> None:
    """Wait until the name server has a route for ``topic`` (a broker registers a new topic asynchronously)."""
    deadline = time.monotonic() + timeout_s
    while True:
        header, _ = wire.request(namesrv_addr, GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, timeout=5.0)
        if header.get("code") == 0:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"the name server {namesrv_addr} has no route for {topic}: {header}")
        time.sleep(0.2)


def pause(pid: int, timeout_s: float = 30.0) -> None:
    """SIGSTOP ``pid`` and wait until every one of its threads is stopped (a loaded machine delays that)."""
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + timeout_s
    while True:
        states = []
        for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
            try:
                states.append(stat.read_text().rsplit(")", 1)[1].split()[0])
            except (OSError, IndexError):
                continue
        if states and all(state in ("T", "t") for state in states):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"process {pid} did not stop: thread states {sorted(set(states))}")
        time.sleep(0.05)


GET_MAX_OFFSET = 30
QUERY_CONSUMER_OFFSET = 14
GET_CONSUMER_LIST_BY_GROUP = 38
PULL_MESSAGE = 11
#: PullSysFlag: the pull carries its subscription.
PULL_FLAG_SUBSCRIPTION = 0x4


def max_offset(addr: str, topic: str, queue_id: int) -> int:
    """GET_MAX_OFFSET: the queue's next offset on the broker at ``addr``."""
    header, _ = wire.request(addr, GET_MAX_OFFSET, {"topic": topic, "queueId": queue_id}, timeout=5.0)
    if header.get("code") != 0:
        raise RuntimeError(f"GET_MAX_OFFSET {topic}/{queue_id} of {addr} answered {header}")
    return int(header["extFields"]["offset"])


def wait_max_offset(addr: str, topic: str, queue_id: int, expected: int, timeout_s: float = 60.0) -> int:
    """The queue's max offset once it reaches ``expected`` (or at the deadline): what to compare with after
    :func:`wait_replicated`.

    A broker fills its ConsumeQueue from the CommitLog on a thread of its own (Java's ReputMessageService, our
    dispatcher), so a slave's CommitLog can end where the master's does while its queues still lag behind."""
    deadline = time.monotonic() + timeout_s
    while True:
        offset = max_offset(addr, topic, queue_id)
        if offset >= expected or time.monotonic() > deadline:
            return offset
        time.sleep(0.1)


def committed_offset(addr: str, group: str, topic: str, queue_id: int) -> int:
    """QUERY_CONSUMER_OFFSET on the broker at ``addr``; -1 when it holds none for the group."""
    header, _ = wire.request(addr, QUERY_CONSUMER_OFFSET,
                             {"consumerGroup": group, "topic": topic, "queueId": queue_id}, timeout=5.0)
    return int(header["extFields"]["offset"]) if header.get("code") == 0 else -1


def has_consumer(addr: str, group: str) -> bool:
    """Whether a consumer of ``group`` has sent the broker at ``addr`` its heartbeat."""
    header, _ = wire.request(addr, GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": group}, timeout=5.0)
    return header.get("code") == 0


def raw_pull(addr: str, group: str, topic: str, queue_id: int, offset: int, subscription: str = "*",
             max_nums: int = 32) -> tuple[dict, bytes]:
    """One PULL_MESSAGE with its subscription, without SUSPEND or COMMIT_OFFSET: (response header, body)."""
    return wire.request(addr, PULL_MESSAGE, {
        "consumerGroup": group, "topic": topic, "queueId": queue_id, "queueOffset": offset, "maxMsgNums": max_nums,
        "sysFlag": PULL_FLAG_SUBSCRIPTION, "commitOffset": 0, "suspendTimeoutMillis": 0,
        "subscription": subscription, "subVersion": 0, "expressionType": "TAG"}, timeout=10.0)


class JavaPushConsumer:
    """``Peer consume``: the official DefaultMQPushConsumer, streaming its messages; their bodies are counted as
    they arrive. ``pause()`` (SIGSTOP, waited for) and ``resume()`` stop and continue the whole JVM."""

    def __init__(self, namesrv: str, topic: str, group: str, stderr_path: Path, **options) -> None:
        self._lock = threading.Lock()
        self._bodies: Counter[str] = Counter()
        self.stderr_path = Path(stderr_path)
        self._stderr = open(self.stderr_path, "w")
        self.proc = start_peer("consume", namesrv=namesrv, topic=topic, group=group, count=10_000_000,
                               timeout_ms=900_000, stderr=self._stderr, **options)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            record = json.loads(line)
            if "bodyBase64" in record:
                body = base64.b64decode(record["bodyBase64"]).decode()
                with self._lock:
                    self._bodies[body] += 1

    @property
    def bodies(self) -> dict[str, int]:
        """A copy of the counts so far: body -> times received."""
        with self._lock:
            return dict(self._bodies)

    def pause(self) -> None:
        pause(self.proc.pid)

    def resume(self) -> None:
        self.proc.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=30)
        self._stderr.close()

    def describe(self) -> str:
        return f"Java consumer exit {self.proc.poll()}, stderr tail:\n{self.stderr_path.read_text()[-2000:]}"
