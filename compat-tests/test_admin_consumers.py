"""Issue 32, consumers and producers: with our push consumer (and producer) online on the Java servers and on
ours, our Admin and mqadmin report the same progress, connections and running info; a reset by either tool
(through the broker while the consumer is online, the old way once it is not) moves the offsets the same way."""
from __future__ import annotations

import threading
import time

from harness import mqadmin, run_peer, unique_name
from harness.admin_text import table

from rocketmq_py import Admin, Message, Producer, PushConsumer
from rocketmq_py.admin.cli.java_text import date_seconds
from rocketmq_py.client.consumer import ConsumeConcurrentlyStatus
from rocketmq_py.common.mq_version import version_desc
from rocketmq_py.errors import RocketMQError

COUNT = 10


def _wait(condition, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "the condition was not met in time"
        time.sleep(0.2)


def _progress_rows(admin: Admin, group: str) -> list[list[str]]:
    stats = admin.examine_consume_stats(group)
    return [[q.topic, q.broker_name, str(q.queue_id), str(o.broker_offset), str(o.consumer_offset), str(o.diff),
             *(["N/A"] if o.last_timestamp == 0 else date_seconds(o.last_timestamp).split())]
            for q, o in sorted(stats.offset_table.items())]


def test_progress_connections_running_info_and_resets_match_mqadmin(servers):
    namesrv, broker = servers
    topic, group = unique_name("ProgressTopic"), unique_name("progress_group")
    mqadmin("updateTopic", "-b", broker.addr, "-t", topic, "-r", "2", "-w", "2", namesrv=namesrv.addr)
    run_peer("produce", namesrv=namesrv.addr, topic=topic, count=COUNT)
    consumed: list[bytes] = []
    lock = threading.Lock()

    def listener(messages, context):
        with lock:
            consumed.extend(message.body for message in messages)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = PushConsumer(group, namesrv_addr=namesrv.addr, instance_name=unique_name("consumer"),
                            consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe(topic)
    consumer.register_message_listener(listener)
    with Admin(namesrv_addr=namesrv.addr, instance_name=unique_name("admin")) as admin:
        with consumer:
            _wait(lambda: len(consumed) == COUNT)
            # Stable once the consumer committed everything: both tools then read the same offsets.
            _wait(lambda: admin.examine_consume_stats(group, topic).compute_total_diff() == 0)
            assert table(mqadmin("consumerProgress", "-g", group, namesrv=namesrv.addr))[:-2] == \
                _progress_rows(admin, group)
            overview = [row for row in table(mqadmin("consumerProgress", namesrv=namesrv.addr)) if row[0] == group]
            connection = admin.examine_consumer_connection_info(group)
            assert overview == [[group, "1", version_desc(connection.compute_min_version()), "PUSH", "CLUSTERING",
                                 overview[0][5], "0"]]

            [client] = connection.connection_set
            printed = mqadmin("consumerConnection", "-g", group, namesrv=namesrv.addr)
            assert table(printed)[0] == [client.client_id, client.client_addr, client.language,
                                         version_desc(client.version)]
            assert [topic, "*"] in table(printed) and "ConsumeType: CONSUME_PASSIVELY" in printed
            assert "MessageModel: CLUSTERING" in printed and "ConsumeFromWhere: CONSUME_FROM_FIRST_OFFSET" in printed

            info = admin.get_consumer_running_info(group, client.client_id)
            status = mqadmin("consumerStatus", "-g", group, "-i", client.client_id, namesrv=namesrv.addr)
            properties = status.split("#Consumer Subscription#")[0]
            assert all(f"{key:<40}: {value}" in properties for key, value in info.properties.items())
            offsets = status.split("#Consumer Offset#")[1].split("#Consumer MQ Detail#")[0]
            assert {(row[0], int(row[2])) for row in table(offsets)} == {(q.topic, q.queue_id) for q in info.mq_table}

            reset = admin.reset_offset_by_timestamp(topic, group, 0)
            assert set(reset.values()) == {0} and len(reset) == 2
            _wait(lambda: len(consumed) == 2 * COUNT)
            printed = mqadmin("resetOffsetByTime", "-g", group, "-t", topic, "-s", "0", namesrv=namesrv.addr)
            assert printed.startswith(f"rollback consumer offset by specified group[{group}], topic[{topic}], "
                                      "force[true], timestamp(string)[0], timestamp(long)[0]")
            assert sorted(table(printed.split("\n", 1)[1])) == [[broker.broker_name, str(q.queue_id), "0"]
                                                                for q in sorted(reset)]
            _wait(lambda: len(consumed) == 3 * COUNT)

        # Offline now: both tools take the old way.
        rows = admin.reset_offset_by_timestamp_old(group, topic, -1)
        skipped = table(mqadmin("skipAccumulatedMessage", "-g", group, "-t", topic, namesrv=namesrv.addr))
        assert sorted([r[0], r[1], r[2], r[4], r[5]] for r in skipped) == [  # mqadmin's rows in HashMap order
            [r.broker_name, str(r.queue_id), str(r.broker_offset), str(r.timestamp_offset), str(r.rollback_offset)]
            for r in rows]
        printed = mqadmin("resetOffsetByTime", "-g", group, "-t", topic, "-s", "0", namesrv=namesrv.addr)
        assert printed.startswith(f"rollback consumer offset by specified consumerGroup[{group}]")
        rows = admin.reset_offset_by_timestamp_old(group, topic, 0)
        assert [r[4:] for r in table(printed.split("\n", 1)[1])] == [["0", "0"]] * 2
        assert [(r.consumer_offset, r.timestamp_offset, r.rollback_offset) for r in rows] == [(0, 0, 0)] * 2
        assert admin.examine_consume_stats(group, topic).compute_total_diff() == COUNT


def test_producer_connections_match_mqadmin(servers):
    namesrv, broker = servers
    topic, group = unique_name("ProducerTopic"), unique_name("producer_group")
    mqadmin("updateTopic", "-b", broker.addr, "-t", topic, "-r", "1", "-w", "1", namesrv=namesrv.addr)
    with Admin(namesrv_addr=namesrv.addr, instance_name=unique_name("admin")) as admin, \
            Producer(group, namesrv_addr=namesrv.addr, instance_name=unique_name("producer"),
                     heartbeat_broker_interval=1000) as producer:
        # The broker learns of a producer from its heartbeats: the first, at start, knew no broker yet.
        producer.send(Message(topic, b"hello"))
        admin_connection = _producer_connection(admin, group, topic)
        [row] = table(mqadmin("producerConnection", "-g", group, "-t", topic, namesrv=namesrv.addr))
        [client] = admin_connection.connection_set
        assert row == ["0001", client.client_id, client.client_addr, client.language, version_desc(client.version)]


def _producer_connection(admin: Admin, group: str, topic: str):
    deadline = time.monotonic() + 60
    while True:
        try:
            return admin.examine_producer_connection_info(group, topic)
        except RocketMQError:
            assert time.monotonic() < deadline, "the producer never showed on the broker"
            time.sleep(0.5)
