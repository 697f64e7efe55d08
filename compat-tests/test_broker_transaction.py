"""Transactions through our broker: half messages, END_TRANSACTION, and the check-back (CHECK_TRANSACTION_STATE
to the producer group) resolving UNKNOW; the official Java consumer sees exactly the committed messages.
The broker checks every second here (the default is 60 s)."""
from __future__ import annotations

import base64
import threading
import time
from collections import Counter

import pytest
from harness import run_peer, unique_name
from harness.ha import max_offset
from harness.py_servers import PythonBroker

from rocketmq_py.client.producer import LocalTransactionState, SendStatus, TransactionProducer
from rocketmq_py.common.message import Message

COMMIT, ROLLBACK, UNKNOW = (LocalTransactionState.COMMIT_MESSAGE, LocalTransactionState.ROLLBACK_MESSAGE,
                            LocalTransactionState.UNKNOW)
#: kind: (the local transaction's answer, the answer to a check-back). A committed or rolled-back message is
#: checked back too when the broker's check pass finds its half message before the producer's (oneway)
#: END_TRANSACTION was written, as on a loaded machine; its check then answers what the application knows.
OUTCOMES = {"commit": (COMMIT, COMMIT), "rollback": (ROLLBACK, ROLLBACK), "unknown-then-commit": (UNKNOW, COMMIT),
            "unknown-then-rollback": (UNKNOW, ROLLBACK)}


class Listener:
    def __init__(self) -> None:
        #: the bodies of the messages the broker checked back, with how often
        self.checked: dict[str, int] = {}
        self.lock = threading.Lock()

    def execute_local_transaction(self, message, arg):
        return OUTCOMES[message.properties["kind"]][0]

    def check_local_transaction(self, message):
        with self.lock:
            self.checked[message.body.decode()] = self.checked.get(message.body.decode(), 0) + 1
        return OUTCOMES[message.properties["kind"]][1]

    def checked_bodies(self) -> set[str]:
        with self.lock:
            return set(self.checked)


def _stored(broker_addr: str, topic: str) -> int:
    """The messages of ``topic`` in the broker's queues (a transactional topic made by a send has 4)."""
    return sum(max_offset(broker_addr, topic, queue_id) for queue_id in range(4))


@pytest.fixture(scope="module")
def checking_broker(py_namesrv, tmp_path_factory):
    broker = PythonBroker(py_namesrv.addr, tmp_path_factory.mktemp("py-broker-tx"), transactionCheckInterval=1000,
                          transactionTimeOut=1000).start()
    yield broker
    assert broker.stop() == 0


def test_commit_rollback_and_check_back(py_namesrv, checking_broker):
    topic = unique_name("PyTx")
    listener = Listener()
    per_kind = 2
    with TransactionProducer(unique_name("tx_pg"), listener, namesrv_addr=py_namesrv.addr) as producer:
        for i in range(per_kind):
            for kind in OUTCOMES:
                message = Message(topic, f"{kind}-{i}".encode(), properties={"kind": kind})
                result = producer.send_message_in_transaction(message, None)
                assert result.send_status is SendStatus.SEND_OK
        # Every UNKNOW message checked back (each may be checked in a later pass than another of its kind), and
        # the committed ones then in the topic: END_TRANSACTION after a check is oneway, so the producer's answer
        # says nothing of when the broker has written the message.
        unknown = {f"{kind}-{i}" for kind in ("unknown-then-commit", "unknown-then-rollback") for i in range(per_kind)}
        expected = {f"{kind}-{i}" for kind in ("commit", "unknown-then-commit") for i in range(per_kind)}
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and (not unknown <= listener.checked_bodies()
                                               or _stored(checking_broker.addr, topic) < len(expected)):
            time.sleep(0.3)
        assert unknown <= listener.checked_bodies(), listener.checked
    # A message checked back while its END_TRANSACTION was on the way is committed twice, and stored twice (at
    # least once, as Java's EndTransactionProcessor writes the final message for each COMMIT of a half message).
    *received, done = run_peer("consume", namesrv=py_namesrv.addr, topic=topic, group=unique_name("TxGroup"),
                               count=2 * len(expected) + 1, timeout_ms=8000)
    bodies = Counter(base64.b64decode(m["bodyBase64"]).decode() for m in received)
    assert done["timedOut"] and done["count"] == _stored(checking_broker.addr, topic), "every stored message arrives"
    assert set(bodies) == expected, "exactly the committed messages arrive"
    assert {body for body, n in bodies.items() if n > 1} <= listener.checked_bodies(), bodies
    assert all(m["sysFlag"] & 0xC == 0x8 for m in received)
