"""Consumer pieces without a network: allocation strategies, subscriptions and selectors, the process
queue and its flow-control figures, offset stores (Java's local file layout), listeners and settings."""
from __future__ import annotations

import asyncio
import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketmq_py import codec
from rocketmq_py.client.consumer import (
    AllocateMachineRoomNearby,
    AllocateMessageQueueAveragely,
    AllocateMessageQueueAveragelyByCircle,
    AllocateMessageQueueByConfig,
    AllocateMessageQueueByMachineRoom,
    AllocateMessageQueueConsistentHash,
    ConsumeConcurrentlyStatus,
    ConsumeOrderlyStatus,
    MessageListenerOrderly,
    MessageSelector,
)
from rocketmq_py.client.consumer.allocate import md5_hash, resolve_strategy
from rocketmq_py.client.consumer.config import LitePullConsumerConfig, PushConsumerConfig, parse_consume_timestamp
from rocketmq_py.client.consumer.listener import Listener, concurrently_status, orderly_status
from rocketmq_py.client.consumer.offset_store import (
    LocalFileOffsetStore,
    ReadOffsetType,
    offset_file_text,
    read_offset_file,
    write_offset_file,
)
from rocketmq_py.client.consumer.process_queue import ProcessQueue
from rocketmq_py.client.consumer.service import wait_event
from rocketmq_py.common.consumer_body import (
    ConsumerRunningInfo,
    ProcessQueueInfo,
    decode_lock_batch_response,
    decode_reset_offset_body,
    lock_batch_request,
)
from rocketmq_py.common.filter import SUB_ALL, ExpressionType, build_subscription, check_sql92
from rocketmq_py.common.heartbeat_consumer import ConsumeFromWhere, ConsumerData, ConsumeType, MessageModel
from rocketmq_py.common.message import MessageExt
from rocketmq_py.common.message_queue import MessageQueue
from rocketmq_py.errors import InvalidArgumentError, InvalidSelectorError


def queues(count: int, brokers: tuple[str, ...] = ("broker-a",), topic: str = "T") -> list[MessageQueue]:
    return sorted(MessageQueue(topic, b, i) for b in brokers for i in range(count))


def split(strategy, mq_all, cid_all) -> dict[str, list[MessageQueue]]:
    return {cid: strategy.allocate("g", cid, mq_all, cid_all) for cid in cid_all}


# --- allocation -----------------------------------------------------------------------------------


def test_averagely_gives_consecutive_blocks_larger_first():
    mq_all = queues(8)
    result = split(AllocateMessageQueueAveragely(), mq_all, ["c1", "c2", "c3"])
    assert [[q.queue_id for q in result[c]] for c in ("c1", "c2", "c3")] == [[0, 1, 2], [3, 4, 5], [6, 7]]


def test_averagely_with_more_consumers_than_queues():
    result = split(AllocateMessageQueueAveragely(), queues(2), ["a", "b", "c"])
    assert [[q.queue_id for q in result[c]] for c in "abc"] == [[0], [1], []]


def test_averagely_by_circle_deals_round_robin():
    result = split(AllocateMessageQueueAveragelyByCircle(), queues(8), ["c1", "c2", "c3"])
    assert [[q.queue_id for q in result[c]] for c in ("c1", "c2", "c3")] == [[0, 3, 6], [1, 4, 7], [2, 5]]


@pytest.mark.parametrize("strategy", [AllocateMessageQueueAveragely(), AllocateMessageQueueAveragelyByCircle(),
                                      AllocateMessageQueueConsistentHash()], ids=lambda s: s.name)
def test_every_queue_goes_to_exactly_one_consumer(strategy):
    rng = random.Random(7)
    for _ in range(50):
        mq_all = queues(rng.randint(1, 16), tuple(f"b{i}" for i in range(rng.randint(1, 3))))
        cid_all = sorted(f"10.0.0.{rng.randint(1, 99)}@{i}" for i in range(rng.randint(1, 7)))
        result = split(strategy, mq_all, cid_all)
        taken = list(itertools.chain.from_iterable(result.values()))
        assert sorted(taken) == mq_all
        if strategy.name != "CONSISTENT_HASH":
            sizes = [len(v) for v in result.values()]
            assert max(sizes) - min(sizes) <= 1


def test_a_client_missing_from_the_list_gets_nothing():
    assert AllocateMessageQueueAveragely().allocate("g", "ghost", queues(4), ["a", "b"]) == []


def test_bad_allocation_input_is_refused():
    with pytest.raises(InvalidArgumentError):
        AllocateMessageQueueAveragely().allocate("g", "a", [], ["a"])
    with pytest.raises(InvalidArgumentError):
        AllocateMessageQueueAveragely().allocate("g", "", queues(1), ["a"])


def test_consistent_hash_uses_javas_md5_ring():
    assert md5_hash("abc") == 0x90015098  # the first four bytes of md5("abc"), unsigned
    mq_all = queues(6)
    strategy = AllocateMessageQueueConsistentHash(virtual_node_count=10)
    result = split(strategy, mq_all, ["a", "b"])
    ring = sorted((md5_hash(f"{cid}-{i}"), cid) for cid in ("a", "b") for i in range(10))
    for queue in mq_all:
        point = md5_hash(str(queue))
        owner = next((cid for h, cid in ring if h >= point), ring[0][1])
        assert queue in result[owner]


def test_by_config_and_machine_room():
    chosen = queues(3)[:2]
    assert AllocateMessageQueueByConfig(chosen).allocate("g", "a", queues(3), ["a", "b"]) == chosen
    mq_all = sorted(queues(2, ("room1@b1", "room2@b2", "b3")))
    strategy = AllocateMessageQueueByMachineRoom({"room1"})
    result = split(strategy, mq_all, ["a", "b"])
    assert [q.broker_name for q in result["a"] + result["b"]] == ["room1@b1"] * 2


def test_machine_room_nearby_keeps_queues_in_their_room():
    mq_all = sorted(queues(2, ("r1@b1", "r2@b2", "r3@b3")))
    strategy = AllocateMachineRoomNearby(AllocateMessageQueueAveragely(), lambda q: q.broker_name.split("@")[0],
                                         lambda cid: cid.split("-")[0])
    result = split(strategy, mq_all, ["r1-a", "r2-b"])
    assert {q.broker_name for q in result["r1-a"]} >= {"r1@b1"}
    assert all(not q.broker_name.startswith("r1") for q in result["r2-b"])
    assert sorted(result["r1-a"] + result["r2-b"]) == mq_all


def test_strategies_by_name_and_unknown_names():
    assert isinstance(resolve_strategy("avg"), AllocateMessageQueueAveragely)
    assert isinstance(resolve_strategy("AVG_BY_CIRCLE"), AllocateMessageQueueAveragelyByCircle)
    assert isinstance(resolve_strategy("consistent_hash"), AllocateMessageQueueConsistentHash)
    with pytest.raises(InvalidArgumentError, match="unknown allocation strategy"):
        resolve_strategy("FASTEST")
    with pytest.raises(InvalidArgumentError, match="needs parameters"):
        resolve_strategy("CONFIG")


# --- subscriptions and selectors ------------------------------------------------------------------


def test_tag_expression_builds_tags_and_java_hash_codes():
    subscription = build_subscription("T", " TagA ||TagB|| TagA ")
    assert subscription.tags_set == ["TagA", "TagB"]
    assert subscription.code_set == [codec.java_string_hash("TagA"), codec.java_string_hash("TagB")]
    assert subscription.expression_type == ExpressionType.TAG
    assert subscription.matches_tag("TagB") and not subscription.matches_tag("TagC")
    assert not subscription.matches_tag(None)
    for everything in ("*", None, "", " * "):
        assert build_subscription("T", everything).sub_string == SUB_ALL
    assert build_subscription("T", "*").matches_tag(None)


def test_subscription_json_is_fastjsons_order():
    data = build_subscription("T", "TagA").to_json()
    assert list(data) == sorted(data)
    assert data["codeSet"] == [2598919] and data["tagsSet"] == ["TagA"]


@pytest.mark.parametrize("expression", [
    "a > 5", "a >= 1.5 AND b <> 'x'", "(a = 1 OR b = 2) AND NOT c IS NULL", "a BETWEEN 1 AND 10",
    "a NOT BETWEEN -1 AND +1", "color IN ('red', 'green')", "color NOT IN ('it''s')", "flag = TRUE",
    "x IS NOT NULL -- comment\n", "a > 5E3 /* block */",
])
def test_valid_sql92(expression):
    check_sql92(expression)
    assert build_subscription("T", MessageSelector.by_sql(expression)).expression_type == "SQL92"


@pytest.mark.parametrize("expression", [
    "", "a >", "a == 5", "(a = 1", "a IN (1, 2)", "a = 'unterminated", "a ! b", "AND a = 1", "a = 1 b = 2",
])
def test_invalid_sql92_is_refused_with_a_message(expression):
    with pytest.raises(InvalidSelectorError):
        build_subscription("T", MessageSelector.by_sql(expression))


def test_bad_tag_expressions():
    with pytest.raises(InvalidSelectorError):
        build_subscription("T", "||")
    with pytest.raises(InvalidSelectorError):
        build_subscription("T", MessageSelector("XPATH", "a"))
    with pytest.raises(InvalidSelectorError):
        build_subscription("T", 42)  # type: ignore[arg-type]


def test_consumer_data_json():
    data = ConsumerData("g", ConsumeType.CONSUME_PASSIVELY, MessageModel.CLUSTERING,
                        ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, [build_subscription("T", "*")]).to_json()
    assert list(data) == sorted(data)
    assert data["consumeType"] == "CONSUME_PASSIVELY" and data["messageModel"] == "CLUSTERING"
    assert ConsumerData.from_json(data).subscription_data_set[0].topic == "T"


def test_message_queue_is_a_value_equal_hashed_and_ordered_by_its_fields():
    queue = MessageQueue("T", "broker-a", 1)
    same = MessageQueue(topic="T", broker_name="broker-a", queue_id=1)
    assert queue == same and hash(queue) == hash(same) and queue is not same
    assert {queue: 1}[same] == 1, "a queue made again finds the entries of the first"
    assert len({queue, same, MessageQueue("T", "broker-a", 2), MessageQueue("T", "broker-b", 1)}) == 3
    assert queue != MessageQueue("U", "broker-a", 1) and queue != MessageQueue("T", "broker-a", 2)
    # Java's compareTo: topic, then broker name, then queue id
    assert sorted([MessageQueue("T", "b", 0), MessageQueue("S", "z", 9), MessageQueue("T", "a", 5),
                   MessageQueue("T", "a", 1)]) == [MessageQueue("S", "z", 9), MessageQueue("T", "a", 1),
                                                   MessageQueue("T", "a", 5), MessageQueue("T", "b", 0)]
    with pytest.raises(AttributeError):
        queue.queue_id = 2  # type: ignore[misc]
    assert MessageQueue.from_json(queue.to_json()) == queue
    assert queue.to_json() == {"brokerName": "broker-a", "queueId": 1, "topic": "T"}
    assert str(queue) == "MessageQueue [topic=T, brokerName=broker-a, queueId=1]"
    assert repr(queue) == "MessageQueue(topic='T', broker_name='broker-a', queue_id=1)"


# --- process queue ---------------------------------------------------------------------------------


def message(offset: int, size: int = 10, max_offset: int | None = None) -> MessageExt:
    m = MessageExt("T", b"x" * size)
    m.queue_offset = offset
    if max_offset is not None:
        m.properties["MAX_OFFSET"] = str(max_offset)
    return m


def test_process_queue_counts_sizes_and_commit_offset():
    pq = ProcessQueue()
    batch = [message(i, 100, max_offset=50) for i in range(10, 20)]
    assert pq.put_messages(batch) is True
    assert pq.put_messages([message(20)]) is False, "dispatch only when nothing was being consumed"
    assert (pq.msg_count, pq.msg_size, pq.max_span) == (11, 1010, 10)
    assert pq.msg_acc_cnt == 31
    assert pq.remove_messages([batch[3]]) == 10, "the smallest cached offset is what can be committed"
    assert pq.remove_messages([batch[0], batch[1], batch[2]]) == 14
    assert pq.put_messages([message(15, 100)]) is False, "an offset already cached is not counted twice"
    assert pq.msg_count == 7
    rest = batch[4:] + [message(20)]
    assert pq.remove_messages(rest) == 21, "all consumed: the offset after the largest seen"
    assert (pq.msg_count, pq.msg_size, pq.max_span) == (0, 0, 0)
    assert pq.remove_messages([message(21)]) == -1


def test_process_queue_orderly_take_commit_and_consume_again():
    pq = ProcessQueue()
    pq.put_messages([message(i) for i in range(5)])
    first = pq.take_messages(2)
    assert [m.queue_offset for m in first] == [0, 1]
    pq.make_message_to_consume_again(first)
    again = pq.take_messages(3)
    assert [m.queue_offset for m in again] == [0, 1, 2], "put back in front of the rest"
    assert pq.commit() == 3
    assert pq.msg_count == 2
    pq.take_messages(1)
    pq.rollback()
    assert [m.queue_offset for m in pq.take_messages(5)] == [3, 4]
    assert pq.commit() == 5
    assert pq.take_messages(1) == [] and pq.consuming is False
    info = ProcessQueueInfo()
    pq.fill_info(info)
    assert info.cached_msg_count == 0 and info.droped is False


def test_consumer_stats_sum_pulls_and_consume_calls_per_topic_over_the_window():
    from rocketmq_py.client.consumer.stats import ConsumerStats

    stats = ConsumerStats()
    stats.pull("T", 10.0, 32)
    stats.pull("T", 20.0, 0)
    stats.consumed("T", 2.0, 3, 0)
    stats.consumed("T", 4.0, 0, 2)
    status = stats.status("T")
    assert (status.pull_rt, status.pull_tps * 60) == (15.0, 32)
    assert (status.consume_rt, status.consume_ok_tps * 60, status.consume_failed_tps * 60) == (3.0, 3, 2)
    assert status.consume_failed_msgs == 2
    other = stats.status("U")
    assert (other.pull_rt, other.pull_tps, other.consume_rt, other.consume_failed_msgs) == (0.0, 0.0, 0.0, 0)


def test_process_queue_keeps_order_with_out_of_order_puts():
    pq = ProcessQueue()
    for offset in (5, 9, 7, 1, 8):
        pq.put_messages([message(offset)])
    assert [m.queue_offset for m in pq.take_messages(10)] == [1, 5, 7, 8, 9]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(0, 40), max_size=8), max_size=8), st.integers(0, 3))
def test_process_queue_puts_any_batches_as_one_message_at_a_time(batches, consumed):
    """A pull's batch (ascending, past the cache) is stored in one step; any other batch (out of order, repeated or
    overlapping offsets) one message at a time: both count, size and order it as putting each message would."""
    pq = ProcessQueue()
    model: dict[int, int] = {}
    offset_max = 0
    for batch in batches:
        messages = [message(offset, 1 + offset % 5) for offset in batch]
        pq.put_messages(messages)
        for m in messages:
            if m.queue_offset not in model:
                model[m.queue_offset] = len(m.body)
                offset_max = m.queue_offset
        taken = pq.take_messages(consumed)
        assert [m.queue_offset for m in taken] == sorted(model)[:len(taken)]
        if taken:
            pq.commit()
            for m in taken:
                del model[m.queue_offset]
        assert (pq.msg_count, pq.msg_size) == (len(model), sum(model.values()))
        assert pq.queue_offset_max == offset_max
    assert [m.queue_offset for m in pq.take_messages(100)] == sorted(model)


def test_push_flow_control_thresholds_pause_and_are_counted_by_reason():
    from rocketmq_py.client.consumer.push import FLOW_CONTROL_DELAY_S, AsyncPushConsumer
    from rocketmq_py.client.consumer.stats import FlowControlTimes

    consumer = AsyncPushConsumer("g", namesrv_addr="127.0.0.1:1", pull_threshold_for_queue=3,
                                 pull_threshold_size_for_queue=1, consume_concurrently_max_span=5)
    queue = MessageQueue("T", "b", 0)
    pq = ProcessQueue()
    pq.put_messages([message(i) for i in range(3)])
    assert consumer._flow_control_delay(queue, pq) == 0.0
    pq.put_messages([message(3)])
    assert consumer._flow_control_delay(queue, pq) == FLOW_CONTROL_DELAY_S, "more than pull_threshold_for_queue"
    pq = ProcessQueue()
    pq.put_messages([message(0, 600 * 1024), message(1, 600 * 1024)])
    assert consumer._flow_control_delay(queue, pq) == FLOW_CONTROL_DELAY_S, "more than pull_threshold_size_for_queue"
    pq = ProcessQueue()
    pq.put_messages([message(0), message(6)])
    assert consumer._flow_control_delay(queue, pq) == FLOW_CONTROL_DELAY_S, "offset span over the maximum"
    assert consumer.flow_control == FlowControlTimes(cached_count=1, cached_size=1, offset_span=1)
    assert consumer.flow_control.total == 3


# --- offset stores ------------------------------------------------------------------------------------


def test_local_file_layout_and_backup(tmp_path):
    path = tmp_path / "offsets.json"
    table = {MessageQueue("T", "b", 0): 5, MessageQueue("%RETRY%g", "b", 0): 1}
    write_offset_file(path, table)
    text = path.read_text()
    assert text.startswith('{\n\t"offsetTable":{{\n\t\t\t"brokerName":')
    assert codec.json_loads(text)["offsetTable"]
    assert read_offset_file(path) == table
    write_offset_file(path, {MessageQueue("T", "b", 0): 6})
    assert read_offset_file(path.with_name("offsets.json.bak")) == table
    path.write_text("{broken")
    assert read_offset_file(path) == table, "a broken file falls back to the backup"
    assert offset_file_text({}) == '{\n\t"offsetTable":{}\n}'
    assert read_offset_file(tmp_path / "missing.json") is None


async def test_local_file_offset_store(tmp_path):
    store = LocalFileOffsetStore("10.0.0.1@x", "group", base_dir=tmp_path)
    assert store.path == tmp_path / "10.0.0.1@x" / "group" / "offsets.json"
    queue, other = MessageQueue("T", "b", 0), MessageQueue("T", "b", 1)
    store.update_offset(queue, 10, False)
    store.update_offset(queue, 5, True)
    assert store.read_offset_from_memory(queue) == 10, "increase only never goes back"
    store.update_offset(queue, 5, False)
    store.update_offset(other, 3, False)
    await store.persist_all([queue])
    assert read_offset_file(store.path) == {queue: 5}
    await store.persist(other)
    fresh = LocalFileOffsetStore("10.0.0.1@x", "group", base_dir=tmp_path)
    await fresh.load()
    assert fresh.clone_offset_table("T") == {queue: 5, other: 3}
    fresh.remove_offset(queue)
    assert await fresh.read_offset(queue, ReadOffsetType.READ_FROM_MEMORY) == -1
    assert await fresh.read_offset(queue, ReadOffsetType.MEMORY_FIRST_THEN_STORE) == 5


# --- bodies ---------------------------------------------------------------------------------------------


def test_lock_and_reset_bodies():
    body = lock_batch_request("g", "cid", [MessageQueue("T", "b", 1), MessageQueue("T", "b", 0)])
    assert body.decode() == ('{"clientId":"cid","consumerGroup":"g","mqSet":[{"brokerName":"b","queueId":0,'
                             '"topic":"T"},{"brokerName":"b","queueId":1,"topic":"T"}]}')
    assert decode_lock_batch_response(b'{"lockOKMQSet":[{"brokerName":"b","queueId":1,"topic":"T"}]}') == \
        {MessageQueue("T", "b", 1)}
    reset = b'{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:7,{"brokerName":"b","queueId":1,"topic":"T"}:0}}'
    assert decode_reset_offset_body(reset) == {MessageQueue("T", "b", 0): 7, MessageQueue("T", "b", 1): 0}


def test_running_info_json_keys_are_message_queue_objects():
    info = ConsumerRunningInfo(properties={"PROP_CONSUME_TYPE": "CONSUME_PASSIVELY"},
                               subscription_set=[build_subscription("T", "*")],
                               mq_table={MessageQueue("T", "b", 0): ProcessQueueInfo(commit_offset=4)})
    data = codec.json_loads(info.encode())
    [(key, value)] = data["mqTable"].items()
    assert key.to_dict() == {"brokerName": "b", "queueId": 0, "topic": "T"} and value["commitOffset"] == 4


# --- listeners and settings -------------------------------------------------------------------------------


def test_listener_kinds():
    def plain(messages, context):
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    async def coroutine(messages, context):
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    class Ordered(MessageListenerOrderly):
        def consume_message(self, messages, context):
            return ConsumeOrderlyStatus.SUCCESS

    assert Listener.of(plain) == Listener(plain, False, False)
    assert Listener.of(coroutine).is_async
    assert Listener.of(plain, orderly=True).orderly
    assert Listener.of(Ordered()).orderly
    with pytest.raises(InvalidArgumentError):
        Listener.of(Ordered(), orderly=False)
    with pytest.raises(InvalidArgumentError):
        Listener.of("not a listener")  # type: ignore[arg-type]
    assert concurrently_status(None, True, "g") is ConsumeConcurrentlyStatus.RECONSUME_LATER
    assert concurrently_status("done", False, "g") is ConsumeConcurrentlyStatus.RECONSUME_LATER
    assert orderly_status(None, False, "g") is ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT


@pytest.mark.parametrize("options, match", [
    ({"consumer_group": ""}, "blank"),
    ({"consumer_group": "bad group!"}, "illegal characters"),
    ({"consumer_group": "DEFAULT_CONSUMER"}, "cannot be"),
    ({"consume_thread_min": 0}, "consume_thread_min"),
    ({"consume_thread_min": 30, "consume_thread_max": 20}, "larger than"),
    ({"pull_batch_size": 2000}, "pull_batch_size"),
    ({"consume_timestamp": "2024-01-01"}, "yyyyMMddHHmmss"),
])
def test_push_settings_are_checked(options, match):
    config = PushConsumerConfig(**{"consumer_group": "g", "namesrv_addr": "127.0.0.1:9876", **options})
    with pytest.raises(InvalidArgumentError, match=match):
        config.validate()


def test_a_consumer_without_a_name_server_is_refused():
    from rocketmq_py.errors import NoNameServerError

    with pytest.raises(NoNameServerError, match="namesrv_addr"):
        PushConsumerConfig(consumer_group="g", namesrv_addr="").validate()


def test_settings_take_java_names_for_enums():
    config = PushConsumerConfig(consumer_group="g", message_model="broadcasting",
                                consume_from_where="CONSUME_FROM_TIMESTAMP")
    assert config.message_model is MessageModel.BROADCASTING
    assert config.consume_from_where is ConsumeFromWhere.CONSUME_FROM_TIMESTAMP
    with pytest.raises(InvalidArgumentError, match="one of"):
        PushConsumerConfig(consumer_group="g", message_model="EVERYONE")
    assert parse_consume_timestamp("20240131235959") > 0
    with pytest.raises(InvalidArgumentError):
        LitePullConsumerConfig(consumer_group="g", namesrv_addr="n:1", auto_commit_interval_millis=10).validate()


async def test_consumers_refuse_bad_input_before_anything_is_sent():
    from rocketmq_py.client.consumer import AsyncLitePullConsumer, AsyncPushConsumer

    consumer = AsyncPushConsumer("g", namesrv_addr="127.0.0.1:1")
    with pytest.raises(InvalidArgumentError):
        consumer.subscribe("bad topic!", "*")
    with pytest.raises(InvalidArgumentError, match="unknown consumer option"):
        AsyncPushConsumer("g", pull_batch=3)
    with pytest.raises(Exception, match="no message listener"):
        consumer.subscribe("T", "*")
        await consumer.start()
    lite = AsyncLitePullConsumer("g", namesrv_addr="127.0.0.1:1")
    lite.assign([MessageQueue("T", "b", 0)])
    with pytest.raises(Exception, match="mutually exclusive"):
        lite.subscribe("T", "*")
    with pytest.raises(Exception, match="not running"):
        await lite.poll(10)
    assert asyncio.get_running_loop()


async def test_wait_event_returns_on_the_event_or_the_timeout():
    event = asyncio.Event()
    assert await wait_event(event, 0.01) is False
    asyncio.get_running_loop().call_later(0.01, event.set)
    assert await wait_event(event, 5) is True
    assert await wait_event(event, 0) is True


async def test_wait_event_never_loses_a_cancellation():
    """asyncio.wait_for (Python < 3.12) returns normally when it is cancelled just after the event was set;
    wait_event raises CancelledError whenever it is cancelled before it returned."""
    cancelled_late = 0
    for hops in range(6):
        event = asyncio.Event()
        waiting = asyncio.ensure_future(wait_event(event, 10))
        await asyncio.sleep(0)
        event.set()
        for _ in range(hops):
            await asyncio.sleep(0)
        if waiting.done():
            assert waiting.result() is True
            continue
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        cancelled_late += hops > 0
    assert cancelled_late, "some cancellation came after the event was set"
