"""Issue 3, point 4: transactions against the Java broker. Commit and rollback end at once; UNKNOW is
resolved through the broker's CHECK_TRANSACTION_STATE; only committed messages reach the Java consumer.

A dedicated name server and broker check half messages every second (the default is 60 s)."""
from __future__ import annotations

import base64
import threading
import time
import uuid

from harness import run_peer

from rocketmq_py.client.producer import LocalTransactionState, SendStatus, TransactionProducer
from rocketmq_py.common.message import Message

OUTCOMES = {
    "commit": (LocalTransactionState.COMMIT_MESSAGE, None),
    "rollback": (LocalTransactionState.ROLLBACK_MESSAGE, None),
    "unknown-then-commit": (LocalTransactionState.UNKNOW, LocalTransactionState.COMMIT_MESSAGE),
    "unknown-then-rollback": (LocalTransactionState.UNKNOW, LocalTransactionState.ROLLBACK_MESSAGE),
    "raises-then-commit": (None, LocalTransactionState.COMMIT_MESSAGE),
}


class Listener:
    def __init__(self) -> None:
        self.executed: list[str] = []
        self.checked: dict[str, int] = {}
        self.lock = threading.Lock()

    def execute_local_transaction(self, message, arg):
        assert arg == "the-arg"
        assert message.transaction_id == message.properties["UNIQ_KEY"]
        kind = message.properties["kind"]
        with self.lock:
            self.executed.append(kind)
        first, _ = OUTCOMES[kind]
        if first is None:
            raise RuntimeError("the local transaction failed")
        return first

    def check_local_transaction(self, message):
        kind = message.properties["kind"]
        with self.lock:
            self.checked[kind] = self.checked.get(kind, 0) + 1
        assert message.topic.startswith("Tx_")
        assert message.transaction_id == message.properties["UNIQ_KEY"]
        return OUTCOMES[kind][1]


def test_commit_rollback_and_check_back(start_namesrv, start_broker):
    namesrv = start_namesrv()
    start_broker(namesrv=namesrv, transactionCheckInterval=1000, transactionTimeOut=1000)
    topic = f"Tx_{uuid.uuid4().hex[:8]}"
    listener = Listener()
    per_kind = 2
    sent = {}
    with TransactionProducer(f"tx_pg_{uuid.uuid4().hex[:6]}", listener, namesrv_addr=namesrv.addr,
                             default_topic_queue_nums=1) as producer:
        for i in range(per_kind):
            for kind in OUTCOMES:
                message = Message(topic, f"{kind}-{i}".encode(), tags="Tx", keys=f"{kind}-{i}",
                                  properties={"kind": kind})
                result = producer.send_message_in_transaction(message, "the-arg")
                assert result.send_status is SendStatus.SEND_OK
                expected_first = OUTCOMES[kind][0] or LocalTransactionState.UNKNOW
                assert result.local_transaction_state is expected_first
                sent[message.properties["UNIQ_KEY"]] = kind
        deadline = time.monotonic() + 60
        unresolved = [k for k, (first, _) in OUTCOMES.items() if first is not LocalTransactionState.COMMIT_MESSAGE
                      and first is not LocalTransactionState.ROLLBACK_MESSAGE]
        while time.monotonic() < deadline and not all(k in listener.checked for k in unresolved):
            time.sleep(0.5)
        assert all(k in listener.checked for k in unresolved), f"the broker checked only {listener.checked}"
        time.sleep(2)  # the check answers are oneway; let the broker write the committed messages
        marker = Message(topic, b"marker", tags="Marker")
        producer.send(marker)
    assert "commit" not in listener.checked and "rollback" not in listener.checked

    committed = {mid for mid, kind in sent.items() if kind.endswith("commit")}
    lines = run_peer("consume", namesrv=namesrv.addr, topic=topic, group=f"tx_cg_{uuid.uuid4().hex[:6]}",
                     count=len(committed) + 1, timeout_ms=60000, timeout=120)
    done, received = lines[-1], lines[:-1]
    assert not done["timedOut"], f"the Java consumer got {done['count']} of {len(committed) + 1}"
    assert base64.b64decode(received[-1]["bodyBase64"]) == b"marker", "one queue: the marker comes last"
    got = {line["msgId"] for line in received[:-1]}
    assert got == committed, {sent.get(m, m) for m in got ^ committed}
    for line in received[:-1]:
        assert line["properties"]["kind"] == sent[line["msgId"]]
        assert line["properties"]["TRAN_MSG"] == "true"
