"""Drives the RocketMQ C++ client (librocketmq, through the ctypes binding of the PyPI package ``rocketmq``)
for compat-tests/test_client_cpp.py; prints JSON lines. It runs in compat-tests/cpp/.venv, never in ours, as
a subprocess of the test, so a crash in C++ fails a test instead of killing pytest.

    client.py send --namesrv HOST:PORT --topic T --mode sync|async|oneway|orderly|batch
        stdin: one JSON message a line {"body", "tags", "keys", "properties": {..}, "orderKey": int}
        stdout: sync/orderly: one line a message {"index", "status", "msgId", "offset"}; async: the same, as
        the callbacks come; oneway: {"index", "sent": true}; batch: one {"status", "msgId", "offset"}
    client.py push --namesrv HOST:PORT --group G --spec JSON
        spec: {"subscriptions": [{"topic", "expression"}], "orderly": bool, "rejectOnceKeys": [..],
               "expect": N, "quietMs": N, "timeoutMs": N, "properties": [names to report]}
        stdout: one line a delivery, then {"done": true, "count", "timedOut"}
    client.py pull --namesrv HOST:PORT --group G --spec JSON
        spec: {"topics": [..], "expect", "timeoutMs", "properties"}; PullConsumer.pull walks every queue of a
        topic from offset 0 until it has no new message; walks repeat until ``expect`` messages came.

A message whose keys are in rejectOnceKeys gets RECONSUME_LATER the first time. The binding's
PushConsumer.subscribe turns every callback into CONSUME_SUCCESS (a raising callback too), so this driver
registers its own ctypes callback, which returns the status itself.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time

from rocketmq.client import Message, Producer, PullConsumer, PushConsumer, RecvMessage
from rocketmq.exceptions import ffi_check
from rocketmq.ffi import MSG_CALLBACK_FUNC, _CConsumeStatus, dll

_print_lock = threading.Lock()


def emit(obj: dict) -> None:
    with _print_lock:
        sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
        sys.stdout.flush()


def _message(topic: str, spec: dict) -> Message:
    msg = Message(topic)
    msg.set_body(spec["body"])
    if spec.get("tags"):
        msg.set_tags(spec["tags"])
    if spec.get("keys"):
        msg.set_keys(spec["keys"])
    for name, value in spec.get("properties", {}).items():
        msg.set_property(name, value)
    return msg


def _result(result) -> dict:
    return {"status": result.status.name, "msgId": result.msg_id, "offset": result.offset}


def send(args) -> None:
    producer = Producer(args.group or "CPP_COMPAT_PRODUCER")
    producer.set_namesrv_addr(args.namesrv)
    producer.start()
    specs = [json.loads(line) for line in sys.stdin if line.strip()]
    if args.mode == "batch":
        emit(_result(producer.send_batch([_message(args.topic, spec) for spec in specs])))
    elif args.mode == "async":
        outstanding = threading.Semaphore(0)

        def callbacks(index):
            def on_success(result):
                emit({"index": index, **_result(result)})
                outstanding.release()

            def on_exception(error):
                emit({"index": index, "error": str(error)})
                outstanding.release()
            return on_success, on_exception

        messages = [_message(args.topic, spec) for spec in specs]  # alive until every callback came
        for index, msg in enumerate(messages):
            producer.send_async(msg, *callbacks(index))
        for _ in messages:
            if not outstanding.acquire(timeout=60):
                raise TimeoutError("an asynchronous send never called back")
    else:
        for index, spec in enumerate(specs):
            msg = _message(args.topic, spec)
            if args.mode == "sync":
                emit({"index": index, **_result(producer.send_sync(msg))})
            elif args.mode == "orderly":
                emit({"index": index, **_result(producer.send_orderly(msg, spec["orderKey"]))})
            else:
                producer.send_oneway(msg)
                emit({"index": index, "sent": True})
    producer.shutdown()


def _delivery(msg: RecvMessage, properties: list[str]) -> dict:
    found = {}
    for name in properties:
        value = msg.get_property(name)
        if value:
            found[name] = value.decode()
    return {"topic": msg.topic, "msgId": msg.id, "body": msg.body.decode(), "tags": msg.tags.decode(),
            "keys": msg.keys.decode(), "properties": found, "queueId": msg.queue_id,
            "queueOffset": msg.queue_offset, "commitLogOffset": msg.commit_log_offset,
            "reconsumeTimes": msg.reconsume_times}


def push(args) -> None:
    spec = json.loads(args.spec)
    reject_once = set(spec.get("rejectOnceKeys", []))
    properties = spec.get("properties", [])
    lock = threading.Lock()
    count = 0
    arrived = threading.Condition(lock)

    def on_message(_consumer, handle):
        nonlocal count
        msg = RecvMessage(handle)
        delivery = _delivery(msg, properties)
        with lock:
            reject = delivery["keys"] in reject_once
            reject_once.discard(delivery["keys"])
            count += 1
            emit({**delivery, "rejected": reject})
            arrived.notify_all()
        status = _CConsumeStatus.RECONSUME_LATER if reject else _CConsumeStatus.CONSUME_SUCCESS
        return status.value

    consumer = PushConsumer(args.group, orderly=spec.get("orderly", False))
    consumer.set_namesrv_addr(args.namesrv)
    for subscription in spec["subscriptions"]:
        ffi_check(dll.Subscribe(consumer._handle, subscription["topic"].encode(), subscription["expression"].encode()))
    callback = MSG_CALLBACK_FUNC(on_message)
    register = dll.RegisterMessageCallbackOrderly if spec.get("orderly") else dll.RegisterMessageCallback
    ffi_check(register(consumer._handle, callback))
    consumer.start()
    deadline = time.monotonic() + spec.get("timeoutMs", 60000) / 1000
    with lock:
        while count < spec["expect"] and time.monotonic() < deadline:
            arrived.wait(timeout=0.2)
        timed_out = count < spec["expect"]
    # Whatever arrives during the quiet period is reported too: a filter must not let more through.
    time.sleep(0 if timed_out else spec.get("quietMs", 0) / 1000)
    consumer.shutdown()
    with lock:
        emit({"done": True, "count": count, "timedOut": timed_out})


def pull(args) -> None:
    spec = json.loads(args.spec)
    consumer = PullConsumer(args.group)
    consumer.set_namesrv_addr(args.namesrv)
    consumer.start()
    count = 0
    deadline = time.monotonic() + spec.get("timeoutMs", 60000) / 1000
    while count < spec["expect"] and time.monotonic() < deadline:
        for topic in spec["topics"]:
            for msg in consumer.pull(topic, "*"):
                emit(_delivery(msg, spec.get("properties", [])))
                count += 1
        time.sleep(0.2)
    consumer.shutdown()
    emit({"done": True, "count": count, "timedOut": count < spec["expect"]})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=("send", "push", "pull"))
    parser.add_argument("--namesrv", required=True)
    parser.add_argument("--topic")
    parser.add_argument("--group")
    parser.add_argument("--mode", choices=("sync", "async", "oneway", "orderly", "batch"), default="sync")
    parser.add_argument("--spec", default="{}")
    args = parser.parse_args()
    try:
        {"send": send, "push": push, "pull": pull}[args.command](args)
    except Exception as error:  # the test reads the failure from this line and the exit code
        emit({"error": f"{type(error).__name__}: {error}"})
        sys.stdout.flush()
        os._exit(1)
    sys.stdout.flush()
    # The binding's destructors shut the client down a second time at exit; leave without them.
    os._exit(0)


if __name__ == "__main__":
    main()
