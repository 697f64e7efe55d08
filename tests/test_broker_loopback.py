"""The broker in process on loopback, next to our name server, driven by raw remoting requests: sends (V1,
V2, batch, retry/DLQ, transactions), the checks and refusals Java makes, pulls with long polling, client
registration, offsets, lookups and the admin requests mqadmin sends."""
from __future__ import annotations

import asyncio
import time
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from rocketmq_py import codec
from rocketmq_py.common.clock import now_ms
from rocketmq_py.common.codes import RequestCode, ResponseCode
from rocketmq_py.common.headers.pull import FLAG_COMMIT_OFFSET, FLAG_SUBSCRIPTION
from rocketmq_py.common.route import ClusterInfo, TopicRouteData
from rocketmq_py.remoting import RemotingClient, create_request, create_response

from support.broker import BrokerEnv, heartbeat
from support.cluster import wait_until


@asynccontextmanager
async def broker_env(tmp_path: Path, **options):
    async with BrokerEnv(tmp_path, **options) as env:
        yield env


@pytest.fixture
async def env(tmp_path):
    async with BrokerEnv(tmp_path) as environment:
        yield environment


def messages(body: bytes | None):
    return codec.decode_store_records(body or b"")


# --- registration and system topics ----------------------------------------------------------------------


async def test_registers_with_the_name_server_and_serves_routes(env):
    response = await env.call(RequestCode.GET_BROKER_CLUSTER_INFO, addr=env.namesrv.address)
    info = ClusterInfo.decode(response.body)
    assert info.cluster_addr_table == {"DefaultCluster": {"broker-t"}} or \
        set(info.cluster_addr_table["DefaultCluster"]) == {"broker-t"}
    assert info.broker_addr_table["broker-t"].broker_addrs == {0: env.addr}
    route = await env.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"}, addr=env.namesrv.address)
    [queue] = TopicRouteData.decode(route.body).queue_datas
    assert (queue.read_queue_nums, queue.write_queue_nums, queue.perm) == (8, 8, 7)


async def test_system_topics_are_created_as_java_creates_them(env):
    table = env.broker.topics.table
    expected = {"SELF_TEST_TOPIC": (1, 6), "TBW102": (8, 7), "BenchmarkTest": (1024, 6), "DefaultCluster": (16, 7),
                "broker-t": (1, 7), "OFFSET_MOVED_EVENT": (1, 6), "SCHEDULE_TOPIC_XXXX": (18, 6),
                "DefaultCluster_REPLY_TOPIC": (1, 6)}
    for name, (queues, perm) in expected.items():
        assert (table[name].write_queue_nums, table[name].perm) == (queues, perm), name
    assert "RMQ_SYS_TRACE_TOPIC" not in table


async def test_auto_created_topic_is_registered_at_once(env):
    response = await env.send("AutoTopic", b"x")
    assert response.code == ResponseCode.SUCCESS
    assert env.broker.topics.table["AutoTopic"].write_queue_nums == 4
    deadline = time.monotonic() + 5
    while True:
        route = await env.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "AutoTopic"}, addr=env.namesrv.address)
        if route.code == ResponseCode.SUCCESS or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.05)
    assert route.code == ResponseCode.SUCCESS
    assert (env.root / "store" / "config" / "topics.json").read_text().count("AutoTopic") >= 1


# --- sends ------------------------------------------------------------------------------------------------


async def test_send_v2_answer_and_stored_record(env):
    response = await env.send("T1", b"hello", tags="TagA", queue_id=2, properties={"color": "blue"})
    assert response.code == ResponseCode.SUCCESS and response.remark is None
    fields = response.ext_fields
    assert fields["queueId"] == "2" and fields["queueOffset"] == "0"
    assert fields["MSG_REGION"] == "DefaultRegion" and fields["TRACE_ON"] == "true"
    host, port, offset = codec.decode_offset_msg_id(fields["msgId"])
    assert f"{host}:{port}" == env.addr
    [message] = messages(env.broker.store.select_one_message_by_offset(offset))
    assert message.body == b"hello" and message.topic == "T1" and message.queue_id == 2
    assert message.properties["CLUSTER"] == "DefaultCluster" and message.properties["color"] == "blue"
    assert "WAIT" not in message.properties
    assert message.born_host.startswith("127.0.0.1:")


async def test_send_v1_and_random_queue(env):
    await env.create_topic("T2", queues=4)
    seen = set()
    for _ in range(20):
        response = await env.send("T2", code=RequestCode.SEND_MESSAGE)
        assert response.code == ResponseCode.SUCCESS
        seen.add(int(response.ext_fields["queueId"]))
    assert seen <= {0, 1, 2, 3} and len(seen) > 1


async def test_batch_send_stores_every_item(env):
    items = [(0, f"item-{i}".encode(), {"UNIQ_KEY": f"{i:032X}", "TAGS": "B"}) for i in range(5)]
    props = codec.properties_to_string({"WAIT": "true"})
    fields = {"a": "pg", "b": "TB", "c": "TBW102", "d": 4, "e": 1, "f": 0, "g": 1, "h": 0, "i": props,
              "k": "false", "m": "true"}
    response = await env.call(RequestCode.SEND_BATCH_MESSAGE, fields, codec.encode_batch(items))
    assert response.code == ResponseCode.SUCCESS
    assert len(response.ext_fields["msgId"].split(",")) == 5
    pulled = await env.pull("TB", 1, 0)
    assert [m.body for m in messages(pulled.body)] == [f"item-{i}".encode() for i in range(5)]


async def test_refusals_carry_java_codes_and_remarks(env):
    forbidden = await env.send("SCHEDULE_TOPIC_XXXX")
    assert (forbidden.code, forbidden.remark) == (ResponseCode.NO_PERMISSION,
                                                  "Sending message to topic[SCHEDULE_TOPIC_XXXX] is forbidden.")
    assert forbidden.ext_fields["MSG_REGION"] == "DefaultRegion"
    illegal = await env.send("bad topic!")
    assert illegal.code == ResponseCode.SYSTEM_ERROR and "illegal characters" in illegal.remark
    await env.create_topic("Small", queues=2)
    queue = await env.send("Small", queue_id=7)
    assert queue.code == ResponseCode.SYSTEM_ERROR and queue.remark.startswith("request queueId[7] is illegal")
    big = await env.send("Small", b"x" * (4 * 1024 * 1024 + 1))
    assert big.code == ResponseCode.MESSAGE_ILLEGAL and "msg body length limit 4194304B" in big.remark
    no_topic = await env.call(RequestCode.SEND_MESSAGE_V2, {"a": "pg"}, b"x")
    assert (no_topic.code, no_topic.remark) == (ResponseCode.SYSTEM_ERROR, "The specified topic is blank.")
    missing = await env.call(RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "Small"}, b"x")
    assert missing.code == ResponseCode.SYSTEM_ERROR and "the custom field <c> is null" in missing.remark
    unknown = await env.call(9999)
    assert (unknown.code, unknown.remark) == (ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                                              " request type 9999 not supported")
    assert (await env.send("Small")).code == ResponseCode.SUCCESS


async def test_no_auto_creation_without_it(tmp_path):
    async with broker_env(tmp_path, auto_create_topic_enable=False) as env:
        response = await env.send("Unknown")
        assert response.code == ResponseCode.TOPIC_NOT_EXIST
        assert response.remark.startswith("topic[Unknown] not exist, apply first please!")


async def test_retry_topic_send_past_max_goes_to_dlq(env):
    await env.call(RequestCode.HEART_BEAT, body=codec.json_dumps(
        {"clientID": "c1", "consumerDataSet": [], "producerDataSet": []}).encode())
    env.broker.groups.find("g1")
    response = await env.send("%RETRY%g1", reconsume_times=3, max_reconsume=3)
    assert response.code == ResponseCode.SUCCESS
    [message] = messages(env.broker.store.select_one_message_by_offset(
        codec.decode_offset_msg_id(response.ext_fields["msgId"])[2]))
    assert message.topic == "%DLQ%g1"
    assert env.broker.topics.table["%DLQ%g1"].write_queue_nums == 1


async def test_delayed_send_goes_to_the_schedule_topic(env):
    response = await env.send("TD", properties={"DELAY": "2"}, queue_id=0)
    [message] = messages(env.broker.store.select_one_message_by_offset(
        codec.decode_offset_msg_id(response.ext_fields["msgId"])[2]))
    assert message.topic == "SCHEDULE_TOPIC_XXXX" and message.queue_id == 1
    assert message.properties["REAL_TOPIC"] == "TD"


# --- pulls and long polling ----------------------------------------------------------------------------


async def test_pull_filters_by_tag_and_answers_java_statuses(env):
    await env.create_topic("TP", queues=1)
    for i in range(6):
        await env.send("TP", f"m{i}".encode(), tags="A" if i % 2 else "B", queue_id=0)
    found = await env.pull("TP", 0, 0, sub="A")
    assert found.code == ResponseCode.SUCCESS and found.remark == "FOUND"
    assert [m.body for m in messages(found.body)] == [b"m1", b"m3", b"m5"]
    assert found.ext_fields["nextBeginOffset"] == "6" and found.ext_fields["maxOffset"] == "6"
    assert found.ext_fields["suggestWhichBrokerId"] == "0"
    none_matched = await env.pull("TP", 0, 0, sub="C")
    assert none_matched.code == ResponseCode.PULL_RETRY_IMMEDIATELY
    at_end = await env.pull("TP", 0, 6)
    assert (at_end.code, at_end.remark) == (ResponseCode.PULL_NOT_FOUND, "OFFSET_OVERFLOW_ONE")
    beyond = await env.pull("TP", 0, 60)
    assert (beyond.code, beyond.ext_fields["nextBeginOffset"]) == (ResponseCode.PULL_OFFSET_MOVED, "6")
    bad_queue = await env.pull("TP", 3, 0)
    assert bad_queue.code == ResponseCode.SYSTEM_ERROR and "queueId[3] is illegal" in bad_queue.remark
    no_topic = await env.pull("Nope", 0, 0)
    assert no_topic.code == ResponseCode.TOPIC_NOT_EXIST


async def test_pull_without_subscription_needs_a_heartbeat(env):
    await env.create_topic("TH", queues=1)
    response = await env.pull("TH", 0, 0, sys_flag=0)
    assert response.code == ResponseCode.SUBSCRIPTION_NOT_EXIST


async def test_long_polling_parks_and_wakes_with_the_original_opaque(env):
    await env.create_topic("TL", queues=1)
    request = env.pull("TL", 0, 0, suspend_ms=10000, timeout_ms=15000)
    task = asyncio.create_task(request)
    await wait_until(lambda: env.broker.hold_service.suspended == 1)
    assert not task.done()
    await env.send("TL", b"late", queue_id=0)
    response = await asyncio.wait_for(task, 3)
    assert response.code == ResponseCode.SUCCESS and [m.body for m in messages(response.body)] == [b"late"]
    assert env.broker.hold_service.suspended == 0


async def test_long_polling_ignores_messages_the_filter_refuses_and_times_out(env):
    await env.create_topic("TF", queues=1)
    task = asyncio.create_task(env.pull("TF", 0, 0, sub="Wanted", suspend_ms=3000))
    await wait_until(lambda: env.broker.hold_service.suspended == 1)
    # The store tells the hold service of the arrival before the send is answered: the pull is still parked.
    await env.send("TF", b"other", tags="Other", queue_id=0)
    assert not task.done() and env.broker.hold_service.suspended == 1
    response = await asyncio.wait_for(task, 30)
    assert response.code == ResponseCode.PULL_RETRY_IMMEDIATELY
    assert env.broker.hold_service.suspended == 0


async def test_pull_commits_the_offset_it_carries(env):
    await env.create_topic("TC", queues=1)
    await env.send("TC", queue_id=0)
    flag = FLAG_SUBSCRIPTION | FLAG_COMMIT_OFFSET
    await env.pull("TC", 0, 1, sys_flag=flag, commit_offset=1, group="gc")
    assert env.broker.offsets.query_offset("gc", "TC", 0) == 1


async def test_sql92_pull(tmp_path):
    async with broker_env(tmp_path, enable_property_filter=True) as env:
        await env.create_topic("TS", queues=1)
        for i in range(5):
            await env.send("TS", f"s{i}".encode(), queue_id=0, properties={"a": str(i)})
        response = await env.pull("TS", 0, 0, sub="a >= 3", expression_type="SQL92")
        assert [m.body for m in messages(response.body)] == [b"s3", b"s4"]
        bad = await env.pull("TS", 0, 0, sub="a >>", expression_type="SQL92")
        assert bad.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED


async def test_sql92_refused_without_property_filter(env):
    await env.create_topic("TQ", queues=1)
    response = await env.pull("TQ", 0, 0, sub="a > 1", expression_type="SQL92")
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert response.remark == "The broker does not support consumer to filter message by SQL92"


# --- clients and offsets ----------------------------------------------------------------------------------


async def test_heartbeat_registers_and_notifies_consumer_id_changes(env):
    notices = []

    async def on_notice(ctx, request):
        notices.append(request.ext_fields["consumerGroup"])
        return None

    env.client_processors.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, on_notice)
    response = await env.call(RequestCode.HEART_BEAT, body=heartbeat("client-1", "cgroup", "TopicX"))
    assert response.code == ResponseCode.SUCCESS and response.version == codec.VERSION_4_9_8
    assert "%RETRY%cgroup" in env.broker.topics.table and "cgroup" in env.broker.groups.table
    listed = await env.call(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "cgroup"})
    assert codec.json_loads(listed.body) == {"consumerIdList": ["client-1"]}
    for _ in range(50):
        if notices:
            break
        await asyncio.sleep(0.02)
    assert notices == ["cgroup"]
    await env.call(RequestCode.UNREGISTER_CLIENT, {"clientID": "client-1", "consumerGroup": "cgroup",
                                                  "producerGroup": "pg"})
    gone = await env.call(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "cgroup"})
    assert (gone.code, gone.remark) == (ResponseCode.SYSTEM_ERROR, "no consumer for this group, cgroup")


async def test_closed_connection_drops_its_consumer(env):
    other = RemotingClient()
    request = create_request(RequestCode.HEART_BEAT, None, heartbeat("client-2", "g2", "T"))
    await other.invoke(env.addr, request, 3000)
    assert env.broker.consumers.group("g2") is not None
    await other.shutdown()
    for _ in range(50):
        if env.broker.consumers.group("g2") is None:
            break
        await asyncio.sleep(0.02)
    assert env.broker.consumers.group("g2") is None


async def test_consumer_offsets_query_update_and_survive_restart(env):
    await env.create_topic("TO", queues=2)
    for _ in range(3):
        await env.send("TO", queue_id=1)
    fresh = await env.call(RequestCode.QUERY_CONSUMER_OFFSET, {"consumerGroup": "go", "topic": "TO", "queueId": 1})
    assert (fresh.code, fresh.ext_fields["offset"]) == (ResponseCode.SUCCESS, "0")
    await env.call(RequestCode.UPDATE_CONSUMER_OFFSET, {"consumerGroup": "go", "topic": "TO", "queueId": 1,
                                                        "commitOffset": 2})
    await env.restart()
    after = await env.call(RequestCode.QUERY_CONSUMER_OFFSET, {"consumerGroup": "go", "topic": "TO", "queueId": 1})
    assert after.ext_fields["offset"] == "2"
    text = (env.root / "store" / "config" / "consumerOffset.json").read_text()
    assert '"TO@go":{' in text.replace("\t", "").replace("\n", "")


async def test_offset_queries(env):
    await env.create_topic("TQO", queues=1)
    before = now_ms()
    await env.send("TQO", queue_id=0)
    fields = {"topic": "TQO", "queueId": 0}
    earliest = int((await env.call(RequestCode.GET_EARLIEST_MSG_STORETIME, fields)).ext_fields["timestamp"])
    assert earliest >= before
    # Java's search by time is a bisection that stops at any message stored in that millisecond (offset 1 when
    # the first two share it): the others are stored once the clock has moved on.
    await wait_until(lambda: now_ms() > earliest)
    for _ in range(3):
        await env.send("TQO", queue_id=0)
    assert (await env.call(RequestCode.GET_MAX_OFFSET, fields)).ext_fields["offset"] == "4"
    assert (await env.call(RequestCode.GET_MIN_OFFSET, fields)).ext_fields["offset"] == "0"
    found = await env.call(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, dict(fields, timestamp=earliest))
    assert found.ext_fields["offset"] == "0"


async def test_view_and_query_message(env):
    response = await env.send("TV", b"view-me", properties={"KEYS": "k1 k2"})
    offset = codec.decode_offset_msg_id(response.ext_fields["msgId"])[2]
    viewed = await env.call(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": offset})
    assert messages(viewed.body)[0].body == b"view-me"
    missing = await env.call(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": 10 ** 9})
    assert missing.code == ResponseCode.SYSTEM_ERROR
    queried = await env.call(RequestCode.QUERY_MESSAGE, {"topic": "TV", "key": "k2", "maxNum": 32,
                                                         "beginTimestamp": 0, "endTimestamp": 2 ** 62})
    assert queried.code == ResponseCode.SUCCESS and messages(queried.body)[0].body == b"view-me"
    nothing = await env.call(RequestCode.QUERY_MESSAGE, {"topic": "TV", "key": "zz", "maxNum": 32,
                                                         "beginTimestamp": 0, "endTimestamp": 2 ** 62})
    assert nothing.code == ResponseCode.QUERY_NOT_FOUND


async def test_consumer_send_msg_back_goes_through_the_delay_then_the_dlq(env):
    response = await env.send("TB2", b"retry-me", queue_id=0)
    offset = codec.decode_offset_msg_id(response.ext_fields["msgId"])[2]
    back = await env.call(RequestCode.CONSUMER_SEND_MSG_BACK, {"offset": offset, "group": "gb", "delayLevel": 0,
                                                               "maxReconsumeTimes": 16})
    assert back.code == ResponseCode.SUCCESS
    scheduled = env.broker.store.get_messages("x", "SCHEDULE_TOPIC_XXXX", 2, 0, 32)
    [message] = messages(scheduled.body)
    assert message.properties["REAL_TOPIC"] == "%RETRY%gb" and message.properties["RETRY_TOPIC"] == "TB2"
    assert message.reconsume_times == 1
    dead = await env.call(RequestCode.CONSUMER_SEND_MSG_BACK, {"offset": offset, "group": "gb", "delayLevel": -1})
    assert dead.code == ResponseCode.SUCCESS
    dlq = env.broker.store.get_messages("x", "%DLQ%gb", 0, 0, 32)
    assert [m.body for m in messages(dlq.body)] == [b"retry-me"]


async def test_a_sent_back_message_names_its_origin_by_the_offset_message_id(env):
    # Java's broker reads the message back with lookMessageByOffset, a MessageExt whose msgId is the offset id,
    # even when the producer set UNIQ_KEY (the C++ client's consumer reports this property).
    response = await env.send("TB3", b"origin", queue_id=0, properties={"UNIQ_KEY": "0" * 31 + "1"})
    offset_msg_id = response.ext_fields["msgId"]
    offset = codec.decode_offset_msg_id(offset_msg_id)[2]
    back = await env.call(RequestCode.CONSUMER_SEND_MSG_BACK, {"offset": offset, "group": "go", "delayLevel": 0,
                                                               "maxReconsumeTimes": 16})
    assert back.code == ResponseCode.SUCCESS
    [scheduled] = messages(env.broker.store.get_messages("x", "SCHEDULE_TOPIC_XXXX", 2, 0, 32).body)
    assert scheduled.properties["ORIGIN_MESSAGE_ID"] == offset_msg_id
    again = await env.call(RequestCode.CONSUMER_SEND_MSG_BACK, {"offset": scheduled.commit_log_offset,
                                                                "group": "go", "delayLevel": 0})
    assert again.code == ResponseCode.SUCCESS
    [rescheduled] = messages(env.broker.store.get_messages("x", "SCHEDULE_TOPIC_XXXX", 3, 0, 32).body)
    assert rescheduled.reconsume_times == 2
    assert rescheduled.properties["ORIGIN_MESSAGE_ID"] == offset_msg_id, "the first origin is kept"


async def test_lock_and_unlock_batch(env):
    queue = {"brokerName": "broker-t", "queueId": 0, "topic": "T"}
    body = codec.json_dumps({"clientId": "a", "consumerGroup": "g", "mqSet": [queue]}).encode()
    locked = await env.call(RequestCode.LOCK_BATCH_MQ, body=body)
    assert codec.json_loads(locked.body)["lockOKMQSet"] == [queue]
    other = codec.json_dumps({"clientId": "b", "consumerGroup": "g", "mqSet": [queue]}).encode()
    assert codec.json_loads((await env.call(RequestCode.LOCK_BATCH_MQ, body=other)).body)["lockOKMQSet"] == []
    await env.call(RequestCode.UNLOCK_BATCH_MQ, body=body)
    assert codec.json_loads((await env.call(RequestCode.LOCK_BATCH_MQ, body=other)).body)["lockOKMQSet"] == [queue]


# --- transactions -------------------------------------------------------------------------------------------


async def test_transaction_half_commit_and_rollback(env):
    props = {"TRAN_MSG": "true", "PGROUP": "tx-group"}
    half = await env.send("TX", b"half", properties=props, sys_flag=0x4, group="tx-group", queue_id=1)
    assert half.code == ResponseCode.SUCCESS and half.ext_fields["queueId"] == "1"
    offset = codec.decode_offset_msg_id(half.ext_fields["msgId"])[2]
    [stored] = messages(env.broker.store.select_one_message_by_offset(offset))
    assert stored.topic == "RMQ_SYS_TRANS_HALF_TOPIC" and stored.sys_flag & 0xC == 0
    assert (await env.pull("TX", 1, 0)).code != ResponseCode.SUCCESS
    fields = {"producerGroup": "tx-group", "tranStateTableOffset": half.ext_fields["queueOffset"],
              "commitLogOffset": offset, "commitOrRollback": 8, "msgId": "x"}
    await env.call(RequestCode.END_TRANSACTION, fields)
    committed = await env.pull("TX", 1, 0)
    [message] = messages(committed.body)
    assert message.body == b"half" and message.sys_flag & 0xC == 0x8
    assert message.prepared_transaction_offset == offset
    op = env.broker.store.get_messages("x", "RMQ_SYS_TRANS_OP_HALF_TOPIC", 0, 0, 32)
    [op_message] = messages(op.body)
    assert (op_message.tags, op_message.body) == ("d", half.ext_fields["queueOffset"].encode())
    wrong = await env.call(RequestCode.END_TRANSACTION, dict(fields, producerGroup="other"))
    assert (wrong.code, wrong.remark) == (ResponseCode.SYSTEM_ERROR, "The producer group wrong")


async def test_transaction_check_asks_the_producer(tmp_path):
    async with broker_env(tmp_path, transaction_time_out=100, transaction_check_interval=300) as env:
        checks = []

        async def on_check(ctx, request):
            checks.append((request.ext_fields, messages(request.body)[0]))
            return None

        env.client_processors.register(RequestCode.CHECK_TRANSACTION_STATE, on_check)
        await env.call(RequestCode.HEART_BEAT, body=codec.json_dumps(
            {"clientID": "p1", "consumerDataSet": [], "producerDataSet": [{"groupName": "txg"}]}).encode())
        await env.send("TXC", b"unknown", properties={"TRAN_MSG": "true", "PGROUP": "txg"}, sys_flag=0x4,
                       group="txg", queue_id=0)
        for _ in range(100):
            if checks:
                break
            await asyncio.sleep(0.05)
        fields, message = checks[0]
        assert message.topic == "TXC" and message.body == b"unknown"
        assert message.properties["TRANSACTION_CHECK_TIMES"] == "1"
        assert fields["msgId"] == message.properties["UNIQ_KEY"]


# --- admin ----------------------------------------------------------------------------------------------------


async def test_admin_topic_and_group_requests(env):
    assert (await env.create_topic("AdminTopic", queues=3, perm=4)).code == ResponseCode.SUCCESS
    system = await env.create_topic("TBW102")
    assert system.code == ResponseCode.SYSTEM_ERROR and "conflict with system topic" in system.remark
    all_topics = codec.json_loads((await env.call(RequestCode.GET_ALL_TOPIC_CONFIG)).body)
    assert all_topics["topicConfigTable"]["AdminTopic"]["perm"] == 4
    pull = await env.pull("AdminTopic", 0, 0)
    assert pull.code == ResponseCode.PULL_NOT_FOUND
    await env.create_topic("AdminTopic", queues=3, perm=2)
    refused = await env.pull("AdminTopic", 0, 0)
    assert (refused.code, refused.remark) == (ResponseCode.NO_PERMISSION,
                                              "the topic[AdminTopic] pulling message is forbidden")
    assert (await env.call(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "AdminTopic"})).code == 0
    assert "AdminTopic" not in env.broker.topics.table
    group = codec.json_dumps({"groupName": "admin-g", "retryMaxTimes": 3}).encode()
    assert (await env.call(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=group)).code == 0
    groups = codec.json_loads((await env.call(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)).body)
    assert groups["subscriptionGroupTable"]["admin-g"]["retryMaxTimes"] == 3
    await env.call(RequestCode.DELETE_SUBSCRIPTIONGROUP, {"groupName": "admin-g"})
    assert "admin-g" not in env.broker.groups.table


async def test_stats_for_mqadmin(env):
    await env.create_topic("TStat", queues=2)
    for _ in range(3):
        await env.send("TStat", queue_id=0)
    await env.call(RequestCode.HEART_BEAT, body=heartbeat("client-s", "gs", "TStat"))
    await env.call(RequestCode.UPDATE_CONSUMER_OFFSET, {"consumerGroup": "gs", "topic": "TStat", "queueId": 0,
                                                        "commitOffset": 1})
    stats = codec.json_loads((await env.call(RequestCode.GET_TOPIC_STATS_INFO, {"topic": "TStat"})).body)
    table = {key.to_dict()["queueId"]: value for key, value in stats["offsetTable"].items()}
    assert table[0]["maxOffset"] == 3 and table[1]["maxOffset"] == 0 and table[0]["lastUpdateTimestamp"] > 0
    consume = codec.json_loads((await env.call(RequestCode.GET_CONSUME_STATS, {"consumerGroup": "gs"})).body)
    offsets = {key.to_dict()["queueId"]: value for key, value in consume["offsetTable"].items()}
    assert offsets[0]["brokerOffset"] == 3 and offsets[0]["consumerOffset"] == 1
    connections = codec.json_loads((await env.call(RequestCode.GET_CONSUMER_CONNECTION_LIST,
                                                   {"consumerGroup": "gs"})).body)
    assert connections["connectionSet"][0]["clientId"] == "client-s"
    assert connections["connectionSet"][0]["language"] == "PYTHON"
    producers = codec.json_loads((await env.call(RequestCode.GET_PRODUCER_CONNECTION_LIST,
                                                 {"producerGroup": "pg"})).body)
    assert producers["connectionSet"][0]["clientId"] == "client-s"
    who = codec.json_loads((await env.call(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": "TStat"})).body)
    assert who == {"groupList": ["gs"]}
    offline = await env.call(RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "nobody"})
    assert offline.code == ResponseCode.CONSUMER_NOT_ONLINE


async def test_runtime_info_and_config(env):
    info = codec.json_loads((await env.call(RequestCode.GET_BROKER_RUNTIME_INFO)).body)["table"]
    assert info["brokerVersionDesc"] == "V4_9_8" and info["brokerVersion"] == "409"
    assert len(info["putTps"].split(" ")) == 3 and "commitLogMaxOffset" in info
    config = await env.call(RequestCode.GET_BROKER_CONFIG)
    text = config.body.decode()
    assert "brokerName=broker-t\n" in text and "flushDiskType=ASYNC_FLUSH\n" in text
    assert codec.json_loads(config.ext_fields["version"])["counter"] == 0
    assert "clientWorkerThreads=4\n" in text and "rocketmqHome=\n" not in text, "Java's keys, with its defaults"
    updated = await env.call(RequestCode.UPDATE_BROKER_CONFIG,
                             body=b"traceOn=false\nfileReservedTime=10\nclientWorkerThreads=6\n")
    assert updated.code == ResponseCode.SUCCESS
    assert env.broker.config.trace_on is False and env.broker.store_config.file_reserved_time == 10
    assert "clientWorkerThreads=6\n" in (await env.call(RequestCode.GET_BROKER_CONFIG)).body.decode()
    assert (await env.send("TCfg")).ext_fields["TRACE_ON"] == "false"
    black = await env.call(RequestCode.UPDATE_BROKER_CONFIG, body=b"brokerConfigPath=/tmp/x\n")
    assert (black.code, black.remark) == (ResponseCode.NO_PERMISSION, "Can not update config in black list.")
    # A key whose meaning changes what the store holds, which this broker does not implement, is refused (with
    # nothing applied), rather than accepted and ignored.
    dledger = await env.call(RequestCode.UPDATE_BROKER_CONFIG, body=b"fileReservedTime=11\nenableLmq=true\n")
    assert dledger.code == ResponseCode.SYSTEM_ERROR and "enableLmq=true is not supported" in dledger.remark
    assert env.broker.store_config.file_reserved_time == 10


async def test_client_calls_are_passed_to_the_consumer(env):
    async def on_running_info(ctx, request):
        return create_response(request, 0, None, None, b'{"properties":{}}')

    env.client_processors.register(RequestCode.GET_CONSUMER_RUNNING_INFO, on_running_info)
    await env.call(RequestCode.HEART_BEAT, body=heartbeat("client-r", "gr", "T"))
    answer = await env.call(RequestCode.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": "gr", "clientId": "client-r"})
    assert answer.code == 0 and answer.body == b'{"properties":{}}'
    offline = await env.call(RequestCode.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": "gr", "clientId": "zz"})
    assert offline.code == ResponseCode.SYSTEM_ERROR


async def test_binary_serialization_is_answered_in_kind(env):
    response = await env.call(RequestCode.GET_BROKER_RUNTIME_INFO, serialize_type=codec.SERIALIZE_ROCKETMQ)
    assert response.code == 0 and response.serialize_type == codec.SERIALIZE_ROCKETMQ
