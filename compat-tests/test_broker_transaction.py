"""Transactions through our broker: half messages, END_TRANSACTION, and the check-back (CHECK_TRANSACTION_STATE
to the producer group) resolving UNKNOW; the official Java consumer sees exactly the committed messages.
The broker checks every second here (the default is 60 s)."""
from __future__ import annotations

import base64
import threading
import time

import pytest
from harness import run_peer, unique_name
from harness.py_servers import PythonBroker

from rocketmq_py.client.producer import LocalTransactionState, SendStatus, TransactionProducer
from rocketmq_py.common.message import Message

COMMIT, ROLLBACK, UNKNOW = (LocalTransactionState.COMMIT_MESSAGE, LocalTransactionState.ROLLBACK_MESSAGE,
                            LocalTransactionState.UNKNOW)
OUTCOMES = {"commit": (COMMIT, None), "rollback": (ROLLBACK, None), "unknown-then-commit": (UNKNOW, COMMIT),
            "unknown-then-rollback": (UNKNOW, ROLLBACK)}


class Listener:
    def __init__(self) -> None:
        self.checked: dict[str, int] = {}
        self.lock = threading.Lock()

    def execute_local_transaction(self, message, arg):
        return OUTCOMES[message.properties["kind"]][0]

    def check_local_transaction(self, message):
        kind = message.properties["kind"]
        with self.lock:
            self.checked[kind] = self.checked.get(kind, 0) + 1
        return OUTCOMES[kind][1]


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
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline and {"unknown-then-commit", "unknown-then-rollback"} - set(listener.checked):
            time.sleep(0.3)
        assert set(listener.checked) == {"unknown-then-commit", "unknown-then-rollback"}, listener.checked
        time.sleep(2)  # END_TRANSACTION after a check is oneway
    expected = {f"{kind}-{i}" for kind in ("commit", "unknown-then-commit") for i in range(per_kind)}
    *received, done = run_peer("consume", namesrv=py_namesrv.addr, topic=topic, group=unique_name("TxGroup"),
                               count=len(expected) + 1, timeout_ms=8000)
    assert done["count"] == len(expected) and done["timedOut"], "exactly the committed messages arrive"
    assert {base64.b64decode(m["bodyBase64"]).decode() for m in received} == expected
    assert all(m["sysFlag"] & 0xC == 0x8 for m in received)
