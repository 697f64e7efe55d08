"""Issue 32, messages: messages sent by Java's producer are found by our Admin and by mqadmin alike, by offset
id, by unique key, by key and by time range, on the Java servers and on ours; and both tools have our
consumer consume one again (consumeMessageDirectly)."""
from __future__ import annotations

import threading
import time

from harness import mqadmin, mqadmin_patiently, run_peer, unique_name
from harness.admin_text import labelled, table

from rocketmq_py import Admin, PushConsumer
from rocketmq_py.admin.cli.java_text import human_ms
from rocketmq_py.client.consumer import ConsumeConcurrentlyStatus
from rocketmq_py.common.consumer_body import CMResult


def _wait(condition, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "the condition was not met in time"
        time.sleep(0.2)


def test_messages_by_id_key_unique_key_and_time(servers):
    namesrv, broker = servers
    topic = unique_name("Lookup")
    mqadmin_patiently("updateTopic", "-b", broker.addr, "-t", topic, "-r", "2", "-w", "2", namesrv=namesrv.addr)
    begin = int(time.time() * 1000) - 1
    sent = run_peer("produce", namesrv=namesrv.addr, topic=topic, count=6, tags="TagA", keys="order-{i} shared",
                    body="lookup-{i}")
    end = int(time.time() * 1000) + 1
    with Admin(namesrv_addr=namesrv.addr, instance_name=unique_name("admin")) as admin:
        first = sent[2]
        message = admin.view_message(first["offsetMsgId"])
        shown = labelled(mqadmin_patiently("queryMsgById", "-i", first["offsetMsgId"], namesrv=namesrv.addr))
        assert shown["OffsetID:"] == message.offset_msg_id == first["offsetMsgId"]
        assert (shown["Topic:"], shown["Tags:"], shown["Keys:"]) == (topic, "[TagA]", f"[{message.keys}]")
        assert (int(shown["Queue ID:"]), int(shown["Queue Offset:"]), int(shown["CommitLog Offset:"])) == (
            message.queue_id, message.queue_offset, message.commit_log_offset)
        assert (shown["Store Host:"], shown["Born Timestamp:"], shown["Store Timestamp:"]) == (
            message.store_host, human_ms(message.born_timestamp), human_ms(message.store_timestamp))
        assert message.body == b"lookup-2" and message.msg_id == first["msgId"]

        [unique] = admin.query_message_by_unique_key(topic, first["msgId"]).message_list
        by_unique = labelled(mqadmin_patiently("queryMsgByUniqueKey", "-i", first["msgId"], "-t", topic,
                                               namesrv=namesrv.addr))
        assert (int(by_unique["Queue Offset:"]), int(by_unique["CommitLog Offset:"])) == (
            unique.queue_offset, unique.commit_log_offset) == (message.queue_offset, message.commit_log_offset)
        assert admin.view_message(first["msgId"], topic).commit_log_offset == message.commit_log_offset

        by_key = admin.query_message(topic, "shared").message_list
        printed = table(mqadmin_patiently("queryMsgByKey", "-t", topic, "-k", "shared", namesrv=namesrv.addr))
        assert sorted(printed) == sorted([m.msg_id, str(m.queue_id), str(m.queue_offset)] for m in by_key)
        assert sorted(m.msg_id for m in by_key) == sorted(line["msgId"] for line in sent)
        [one] = admin.query_message(topic, "order-4").message_list
        assert table(mqadmin_patiently("queryMsgByKey", "-t", topic, "-k", "order-4", namesrv=namesrv.addr)) == [
            [one.msg_id, str(one.queue_id), str(one.queue_offset)]]

        in_range = admin.query_message_by_topic(topic, begin, end)
        printed = mqadmin_patiently("printMsg", "-t", topic, "-b", str(begin), "-e", str(end), "-d", "false",
                          namesrv=namesrv.addr)
        shown_ids = {line.split()[1] for line in printed.splitlines() if line.startswith("MSGID: ")}
        assert shown_ids == {m.msg_id for m in in_range} == {line["msgId"] for line in sent}


def test_both_tools_have_our_consumer_consume_a_message_again(servers):
    namesrv, broker = servers
    topic, group = unique_name("Again"), unique_name("again_group")
    mqadmin_patiently("updateTopic", "-b", broker.addr, "-t", topic, "-r", "1", "-w", "1", namesrv=namesrv.addr)
    [sent] = run_peer("produce", namesrv=namesrv.addr, topic=topic, count=1, body="once")
    bodies: list[bytes] = []
    lock = threading.Lock()

    def listener(messages, context):
        with lock:
            bodies.extend(message.body for message in messages)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = PushConsumer(group, namesrv_addr=namesrv.addr, instance_name=unique_name("consumer"),
                            consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe(topic)
    consumer.register_message_listener(listener)
    with Admin(namesrv_addr=namesrv.addr, instance_name=unique_name("admin")) as admin, consumer:
        _wait(lambda: bodies == [b"once"])
        client_id = admin.examine_consumer_connection_info(group).connection_set[0].client_id
        result = admin.consume_message_directly(group, client_id, sent["msgId"], topic)
        assert result.consume_result is CMResult.CR_SUCCESS and not result.order and result.auto_commit
        # Not repeated: each run has the consumer consume the message once more.
        printed = mqadmin("queryMsgById", "-i", sent["offsetMsgId"], "-g", group, "-d", client_id,
                          namesrv=namesrv.addr)
        assert printed.startswith("ConsumeMessageDirectlyResult [order=false, autoCommit=true, "
                                  "consumeResult=CR_SUCCESS, remark=null, spentTimeMills=")
        assert bodies == [b"once"] * 3
