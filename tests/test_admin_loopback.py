"""AsyncAdmin and Admin against our name server and broker on loopback, area by area: what each operation
returns is checked against the broker's own tables; refusals are the typed errors."""
from __future__ import annotations

import asyncio
import inspect
import time

import pytest
from support.cluster import LoopbackCluster, wait_until

from rocketmq_py import (
    Admin,
    AsyncAdmin,
    AsyncProducer,
    AsyncPushConsumer,
    ConsumeConcurrentlyStatus,
    Message,
    MessageQueue,
    NoMessageError,
    Producer,
)
from rocketmq_py.admin import TrackType
from rocketmq_py.common.consumer_body import CMResult
from rocketmq_py.common.heartbeat_consumer import ConsumeType, MessageModel
from rocketmq_py.common.kv import NAMESPACE_ORDER_TOPIC_CONFIG
from rocketmq_py.common.subscription_group import SubscriptionGroupConfig
from rocketmq_py.common.topic_config import TopicConfig
from rocketmq_py.errors import (
    ClientError,
    ConsumerNotOnlineError,
    NoPermissionError,
    QueryNotFoundError,
    SystemError_,
    TopicNotExistError,
)

BROKER = "broker-api"


@pytest.fixture
async def cluster(tmp_path):
    async with LoopbackCluster(tmp_path) as running:
        yield running


@pytest.fixture
async def admin(cluster):
    async with AsyncAdmin(namesrv_addr=cluster.namesrv_addr, instance_name="admin-test") as running:
        yield running


async def create_topic(admin: AsyncAdmin, cluster: LoopbackCluster, topic: str, queues: int = 2) -> None:
    await admin.create_and_update_topic_config(cluster.broker.broker_addr, TopicConfig(topic, queues, queues))
    await wait_until(lambda: _has_route(admin, topic))


async def _has_route(admin: AsyncAdmin, topic: str) -> bool:
    try:
        await admin.examine_topic_route_info(topic)
    except TopicNotExistError:
        return False
    return True


async def test_clusters_brokers_and_their_configuration(cluster, admin):
    addr = cluster.broker.broker_addr
    info = await admin.examine_broker_cluster_info()
    assert info.cluster_addr_table == {"DefaultCluster": {BROKER}}
    assert info.broker_addr_table[BROKER].broker_addrs == {0: addr}
    assert await admin.master_addrs_of_cluster("DefaultCluster") == [addr]
    assert await admin.broker_addrs_of_cluster("DefaultCluster") == {addr: []}
    assert await admin.broker_name_of_addr(addr) == BROKER
    with pytest.raises(ClientError, match="no cluster 'Nowhere'"):
        await admin.master_addrs_of_cluster("Nowhere")
    stats = (await admin.fetch_broker_runtime_stats(addr)).table
    assert stats["brokerVersionDesc"] == "V4_9_8" and int(stats["commitLogMaxOffset"]) >= 0
    config = await admin.get_broker_config(addr)
    assert config["brokerName"] == BROKER and config["maxMessageSize"] == str(cluster.broker.store_config.max_message_size)
    await admin.update_broker_config(addr, {"maxMessageSize": "2097152"})
    assert (await admin.get_broker_config(addr))["maxMessageSize"] == "2097152"
    with pytest.raises(NoPermissionError):  # brokerConfigPath is one of the keys a broker refuses to change
        await admin.update_broker_config(addr, {"brokerConfigPath": "/tmp/elsewhere"})


async def test_topics_created_listed_routed_counted_and_deleted(cluster, admin):
    addr = cluster.broker.broker_addr
    await create_topic(admin, cluster, "AdminTopic", 3)
    route = await admin.examine_topic_route_info("AdminTopic")
    assert [(q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm) for q in route.queue_datas] == [
        (BROKER, 3, 3, 6)]
    assert (await admin.examine_topic_config(addr, "AdminTopic")) == TopicConfig("AdminTopic", 3, 3)
    assert "AdminTopic" in (await admin.fetch_all_topic_list()).topics
    assert "AdminTopic" in (await admin.fetch_topics_by_cluster("DefaultCluster")).topics
    assert await admin.get_topic_cluster_list("AdminTopic") == {"DefaultCluster"}
    ids = await cluster.produce("AdminTopic", 7)
    stats = await admin.examine_topic_stats("AdminTopic")
    maxima = cluster.max_offsets("AdminTopic")
    assert {q.queue_id: o.max_offset for q, o in stats.offset_table.items()} == maxima
    assert sum(maxima.values()) == len(ids)
    assert all(o.min_offset == 0 and (o.last_update_timestamp > 0) == (o.max_offset > 0)
               for o in stats.offset_table.values())
    with pytest.raises(TopicNotExistError):
        await admin.examine_topic_stats("NoSuchTopic")

    await admin.create_or_update_order_conf("AdminTopic", f"{BROKER}:3", is_cluster=False)
    await admin.create_or_update_order_conf("AdminTopic", "other-broker:2", is_cluster=False)
    merged = await admin.get_kv_config(NAMESPACE_ORDER_TOPIC_CONFIG, "AdminTopic")
    assert sorted((merged or "").split(";")) == [f"{BROKER}:3", "other-broker:2"]
    await admin.create_or_update_order_conf("AdminTopic", f"{BROKER}:4", is_cluster=True)
    assert await admin.get_kv_config(NAMESPACE_ORDER_TOPIC_CONFIG, "AdminTopic") == f"{BROKER}:4"

    assert await admin.delete_topic("AdminTopic", "DefaultCluster") == [addr]
    assert cluster.broker.topics.select("AdminTopic") is None
    with pytest.raises(TopicNotExistError):
        await admin.examine_topic_route_info("AdminTopic")


async def test_subscription_groups(cluster, admin):
    addr = cluster.broker.broker_addr
    group = SubscriptionGroupConfig("AdminGroup", consume_broadcast_enable=False, retry_max_times=3)
    await admin.create_and_update_subscription_group_config(addr, group)
    assert cluster.broker.groups.table["AdminGroup"] == group
    assert await admin.examine_subscription_group_config(addr, "AdminGroup") == group
    every = await admin.get_all_subscription_group(addr)
    assert every["AdminGroup"] == group and "TOOLS_CONSUMER" in every
    await admin.delete_subscription_group(addr, "AdminGroup", remove_offset=True)
    assert "AdminGroup" not in cluster.broker.groups.table
    assert await admin.examine_subscription_group_config(addr, "AdminGroup") is None


async def test_consumer_progress_connections_running_info_and_both_offset_resets(cluster, admin):
    topic, group, count = "ProgressTopic", "progress_group", 10
    await create_topic(admin, cluster, topic)
    ids = await cluster.produce(topic, count)
    seen: list[bytes] = []

    def listener(messages, context):
        seen.extend(message.body for message in messages)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = AsyncPushConsumer(group, namesrv_addr=cluster.namesrv_addr, instance_name="progress",
                                 consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe(topic)
    consumer.register_message_listener(listener)
    async with consumer:
        await wait_until(lambda: len(seen) == count)
        connection = await admin.examine_consumer_connection_info(group)
        [client] = connection.connection_set
        assert client.client_id == consumer.instance.client_id and client.language == "PYTHON"
        assert (connection.consume_type, connection.message_model) == (ConsumeType.CONSUME_PASSIVELY,
                                                                        MessageModel.CLUSTERING)
        assert connection.subscription_table[topic].sub_string == "*"
        info = await admin.get_consumer_running_info(group, client.client_id)
        assert {q for q in info.mq_table if q.topic == topic} == {MessageQueue(topic, BROKER, 0),
                                                                 MessageQueue(topic, BROKER, 1)}
        assert info.properties["PROP_CONSUME_TYPE"] == "CONSUME_PASSIVELY"

        message = await admin.view_message(ids[0], topic)
        result = await admin.consume_message_directly(group, client.client_id, ids[0], topic)
        assert result.consume_result is CMResult.CR_SUCCESS and not result.order
        assert seen.count(message.body) == 2, "the consumer consumed the message again"
        await consumer.persist_consumer_offset(force=True)  # the track compares the broker's committed offsets
        tracks = await admin.message_track_detail(message)
        assert [(t.consumer_group, t.track_type) for t in tracks] == [(group, TrackType.CONSUMED)]

        offsets = await admin.reset_offset_by_timestamp(topic, group, 0)
        assert offsets == {MessageQueue(topic, BROKER, 0): 0, MessageQueue(topic, BROKER, 1): 0}
        await wait_until(lambda: len(seen) == 2 * count + 1)  # the consumer heard of the reset and read again
    stats = await admin.examine_consume_stats(group)
    assert {q.queue_id: o.consumer_offset for q, o in stats.offset_table.items() if q.topic == topic} == \
        cluster.committed(group, topic)
    assert stats.compute_total_diff() == 0
    assert all(o.broker_offset > 0 for q, o in stats.offset_table.items() if q.topic == topic)

    with pytest.raises(ConsumerNotOnlineError):
        await admin.reset_offset_by_timestamp(topic, group, 0)
    rows = await admin.reset_offset_by_timestamp_old(group, topic, 0)
    assert [(r.queue_id, r.timestamp_offset, r.rollback_offset) for r in rows] == [(0, 0, 0), (1, 0, 0)]
    assert cluster.committed(group, topic) == {0: 0, 1: 0}
    assert (await admin.examine_consume_stats(group, topic)).compute_total_diff() == count
    skipped = await admin.skip_accumulated_message(group, topic)
    assert isinstance(skipped, list) and cluster.committed(group, topic) == cluster.max_offsets(topic)
    with pytest.raises(ConsumerNotOnlineError):
        await admin.examine_consumer_connection_info(group)


async def test_producer_connections(cluster, admin):
    await create_topic(admin, cluster, "ProducerTopic")
    async with AsyncProducer("admin_pg", namesrv_addr=cluster.namesrv_addr, instance_name="pg") as producer:
        await producer.send(Message("ProducerTopic", b"x"))
        # The broker learns of a producer from its heartbeats; the first after start found no broker to go to.
        await producer.instance.send_heartbeat_to_all_brokers()
        connection = await admin.examine_producer_connection_info("admin_pg", "ProducerTopic")
        assert [c.client_id for c in connection.connection_set] == [producer.instance.client_id]
    with pytest.raises(SystemError_, match="producer group\\[admin_pg\\] not exist"):
        await admin.examine_producer_connection_info("admin_pg", "ProducerTopic")


async def test_messages_by_id_key_unique_key_and_time(cluster, admin):
    await create_topic(admin, cluster, "MessageTopic")
    before = int(time.time() * 1000) - 1
    async with AsyncProducer("msg_pg", namesrv_addr=cluster.namesrv_addr, instance_name="msg") as producer:
        sent = [await producer.send(Message("MessageTopic", f"body-{i}".encode(), tags="TagA" if i % 2 else "TagB",
                                            keys=[f"key-{i}", "shared"])) for i in range(6)]
    after = int(time.time() * 1000) + 1
    by_offset_id = await admin.view_message(sent[2].offset_msg_id)
    assert by_offset_id.body == b"body-2" and by_offset_id.msg_id == sent[2].msg_id
    assert (await admin.view_message(sent[3].msg_id, "MessageTopic")).body == b"body-3"
    assert (await admin.view_message(sent[3].offset_msg_id, "MessageTopic")).body == b"body-3"
    [found] = (await admin.query_message("MessageTopic", "key-4")).message_list
    assert found.body == b"body-4"
    assert len((await admin.query_message("MessageTopic", "shared")).message_list) == 6
    [unique] = (await admin.query_message_by_unique_key("MessageTopic", sent[5].msg_id)).message_list
    assert unique.body == b"body-5"
    with pytest.raises(NoMessageError):
        await admin.query_message("MessageTopic", "no-such-key")
    with pytest.raises(NoMessageError):
        await admin.view_message("not-an-id")
    in_range = await admin.query_message_by_topic("MessageTopic", before, after)
    assert sorted(m.body for m in in_range) == sorted(f"body-{i}".encode() for i in range(6))
    assert await admin.query_message_by_topic("MessageTopic", after, after + 1000) == []
    pulled = []
    for queue in (MessageQueue("MessageTopic", BROKER, 0), MessageQueue("MessageTopic", BROKER, 1)):
        pulled += [m async for m in admin.pull_queue_messages(queue, 0, await admin.max_offset(queue), "TagA")]
    assert sorted(m.body for m in pulled) == [b"body-1", b"body-3", b"body-5"]


async def test_kv_config_and_statistics(cluster, admin):
    await admin.create_and_update_kv_config("admin_ns", "k1", "v1")
    await admin.create_and_update_kv_config("admin_ns", "k2", "v2")
    assert await admin.get_kv_config("admin_ns", "k1") == "v1"
    assert (await admin.get_kv_list_by_namespace("admin_ns")).table == {"k1": "v1", "k2": "v2"}
    await admin.delete_kv_config("admin_ns", "k1")
    with pytest.raises(QueryNotFoundError):
        await admin.get_kv_config("admin_ns", "k1")

    await create_topic(admin, cluster, "StatsTopic")
    await cluster.produce("StatsTopic", 5)
    cluster.broker.stats.manager.tick(int(time.time() * 1000) + 48 * 3_600_000)  # every window sampled once
    data = await admin.view_broker_stats_data(cluster.broker.broker_addr, "TOPIC_PUT_NUMS", "StatsTopic")
    assert data.stats_day.sum == 5 and data.compute_24_hour_sum() == 5
    [row] = await admin.stats_all("StatsTopic")
    assert (row.topic, row.consumer_group, row.in_msg_24_hour, row.out_msg_24_hour) == ("StatsTopic", None, 5, None)
    assert await admin.stats_all("StatsTopic", active_only=True) == [row]


async def test_every_client_has_the_mq_admin_methods(cluster, admin):
    producer = AsyncProducer("mq_admin_pg", namesrv_addr=cluster.namesrv_addr, instance_name="mq-admin")
    consumer = AsyncPushConsumer("mq_admin_cg", namesrv_addr=cluster.namesrv_addr, instance_name="mq-admin-c")
    consumer.subscribe("MqAdminTopic")
    consumer.register_message_listener(lambda messages, context: ConsumeConcurrentlyStatus.CONSUME_SUCCESS)
    async with producer:
        await producer.create_topic("TBW102", "MqAdminTopic", 2)
        await wait_until(lambda: _has_route(admin, "MqAdminTopic"))
        queue = MessageQueue("MqAdminTopic", BROKER, 1)
        sent = await producer.send(Message("MqAdminTopic", b"one", keys="mq-key"), queue)
        async with consumer:
            for client in (producer, consumer, admin):
                assert await client.max_offset(queue) == 1 and await client.min_offset(queue) == 0
                assert await client.search_offset(queue, 0) == 0
                assert await client.earliest_msg_store_time(queue) > 0
                assert (await client.view_message(sent.offset_msg_id)).body == b"one"
                assert (await client.view_message(sent.msg_id, "MqAdminTopic")).body == b"one"
                assert [m.body for m in (await client.query_message("MqAdminTopic", "mq-key")).message_list] == [b"one"]
    with pytest.raises(ClientError, match="system topic"):
        await admin.create_topic("TBW102", "SCHEDULE_TOPIC_XXXX", 1)


def _public_methods(cls: type) -> dict[str, inspect.Signature]:
    return {name: inspect.signature(getattr(cls, name)) for name in dir(cls)
            if not name.startswith("_") and callable(getattr(cls, name)) and name != "core"}


def test_the_blocking_admin_has_every_method_of_the_asyncio_one_with_the_same_parameters():
    blocking, core = _public_methods(Admin), _public_methods(AsyncAdmin)
    assert set(blocking) == set(core)
    for name, signature in core.items():
        assert list(blocking[name].parameters) == list(signature.parameters), name


async def test_the_blocking_admin_runs_on_the_background_loop(cluster):
    def work() -> tuple[set[str], int]:
        with Admin(namesrv_addr=cluster.namesrv_addr, instance_name="blocking-admin") as admin:
            admin.create_and_update_topic_config(cluster.broker.broker_addr, TopicConfig("BlockingTopic", 1, 1))
            deadline = time.monotonic() + 30
            while "BlockingTopic" not in admin.fetch_all_topic_list().topics:
                assert time.monotonic() < deadline, "the topic was not registered"
                time.sleep(0.05)
            queue = MessageQueue("BlockingTopic", BROKER, 0)
            with Producer("blocking_pg", namesrv_addr=cluster.namesrv_addr, instance_name="blocking-pg") as producer:
                sent = producer.send(Message("BlockingTopic", b"blocking", keys="b-key"), queue)
                # The blocking clients run the same MQAdmin methods on their asyncio cores.
                assert producer.max_offset(queue) == admin.max_offset(queue) == 1
                assert producer.view_message(sent.offset_msg_id).body == b"blocking"
                assert [m.body for m in admin.query_message("BlockingTopic", "b-key").message_list] == [b"blocking"]
            return set(admin.examine_broker_cluster_info().cluster_addr_table), admin.min_offset(queue)

    assert await asyncio.to_thread(work) == ({"DefaultCluster"}, 0)
