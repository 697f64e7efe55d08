"""Broker statistics (Java's StatsItem windows and BrokerStatsManager keys) and the stats requests mqadmin sends,
against the in-process broker: VIEW_BROKER_STATS_DATA, GET_BROKER_CONSUME_STATS, QUERY_CONSUME_QUEUE,
QUERY_CORRECTION_OFFSET, INVOKE_BROKER_TO_GET_CONSUMER_STATUS and RESUME_CHECK_HALF_MESSAGE."""
from __future__ import annotations

import asyncio
import json

import pytest

from rocketmq_py import codec
from rocketmq_py.broker.stats import BrokerStats, PutLatencyHistogram
from rocketmq_py.broker.stats_manager import GROUP_GET_NUMS, TOPIC_PUT_NUMS, BrokerStatsManager
from rocketmq_py.common import consumer_body
from rocketmq_py.common.codes import RequestCode, ResponseCode
from rocketmq_py.common.message_queue import MessageQueue
from rocketmq_py.common.stats import StatsItem
from rocketmq_py.namesrv import NamesrvConfig, NamesrvController
from rocketmq_py.remoting import RemotingCommand, RequestContext, create_response

from support.broker import BrokerEnv, heartbeat


def test_stats_item_minute_window_counts_from_its_first_sample():
    item = StatsItem(TOPIC_PUT_NUMS, "T")
    item.add(120, 3)
    item.sample_minute(100_000)
    first = item.in_minute()
    assert (first.sum, first.times) == (120, 3)
    assert first.tps == pytest.approx(12.0)  # the zero sample is dated one period (10 s) earlier
    assert first.avgpt == pytest.approx(40.0)
    for step in range(1, 10):
        item.add(10, 1)
        item.sample_minute(100_000 + step * 10_000)
    later = item.in_minute()
    assert later.sum == 60  # seven samples: the last minute only
    assert later.tps == pytest.approx(1.0)


def test_manager_samples_on_java_periods_and_keys_by_topic_and_group():
    manager = BrokerStatsManager("C", started_ms=0)
    manager.on_put("T", 5, 500)
    manager.on_get("G", "T", 4, 400, 1)
    manager.tick(0)
    manager.tick(5_000)  # not due yet: no new sample
    assert manager.item(TOPIC_PUT_NUMS, "T").in_minute().sum == 5
    assert manager.item(GROUP_GET_NUMS, "T@G").in_minute().sum == 4
    assert manager.item("BROKER_PUT_NUMS", "C").value == 5
    assert manager.item("BROKER_PUT_NUMS", "C").times == 0
    manager.on_put("T", 1, 100)
    manager.tick(10_000)
    assert manager.item(TOPIC_PUT_NUMS, "T").in_minute().sum == 6
    assert manager.item(TOPIC_PUT_NUMS, "T").in_hour().sum == 5  # the hour window samples every 10 minutes
    manager.on_topic_deleted("T")
    assert manager.item(TOPIC_PUT_NUMS, "T") is None and manager.item(GROUP_GET_NUMS, "T@G") is None
    # A put after the deletion counts in a new item, from zero.
    manager.on_put("T", 2, 200)
    assert manager.item(TOPIC_PUT_NUMS, "T").value == 2 and manager.item("BROKER_PUT_NUMS", "C").value == 8


def test_pulls_count_in_the_four_get_items_and_start_again_after_a_deletion():
    manager = BrokerStatsManager("C", started_ms=0)
    for _ in range(2):
        manager.on_get("G", "T", 3, 300, 7)
    assert (manager.item(GROUP_GET_NUMS, "T@G").value, manager.item(GROUP_GET_NUMS, "T@G").times) == (6, 2)
    assert (manager.item("GROUP_GET_SIZE", "T@G").value, manager.item("GROUP_GET_SIZE", "T@G").times) == (600, 2)
    assert (manager.item("GROUP_GET_LATENCY", "T@G").value, manager.item("GROUP_GET_LATENCY", "T@G").times) == (14, 2)
    assert (manager.item("BROKER_GET_NUMS", "C").value, manager.item("BROKER_GET_NUMS", "C").times) == (6, 0)
    for delete in (lambda: manager.on_group_deleted("G"), lambda: manager.on_topic_deleted("T")):
        delete()
        assert manager.item(GROUP_GET_NUMS, "T@G") is None
        # A pull after the deletion counts in new items that the sets hold, from zero.
        manager.on_get("G", "T", 1, 100, 0)
        assert manager.item(GROUP_GET_NUMS, "T@G").value == 1
        assert manager.item("GROUP_GET_SIZE", "T@G").value == 100


def test_put_latency_histogram_uses_java_buckets():
    histogram = PutLatencyHistogram()
    assert histogram.text() == "null"  # as Java, until the first minute is over
    for latency in (0, 3, 9, 10, 120, 12_000):
        histogram.add(latency)
    histogram.roll()
    assert histogram.text().startswith("[<=0ms]:1 [0~10ms]:2 [10~50ms]:1 [50~100ms]:0 [100~200ms]:1 ")
    assert histogram.text().endswith("[10s~]:1 ")
    assert histogram.percentile_ms(0.5) == 10.0


def test_runtime_info_carries_java_keys():
    stats = BrokerStats("C")
    stats.on_put("T", 2, 300, 4)
    info = stats.runtime_info()
    for key in ("putTps", "getTransferedTps", "putMessageDistributeTime", "putLatency99", "getMessageEntireTimeMax"):
        assert key in info
    assert info["putMessageSizeTotal"] == "300"


@pytest.fixture
async def env(tmp_path):
    async with BrokerEnv(tmp_path) as environment:
        yield environment


async def _traffic(env: BrokerEnv, topic: str, group: str, count: int) -> None:
    assert (await env.create_topic(topic, queues=2)).code == ResponseCode.SUCCESS
    for index in range(count):
        assert (await env.send(topic, f"m{index}".encode(), queue_id=index % 2)).code == ResponseCode.SUCCESS
    for queue_id in range(2):
        pulled = await env.pull(topic, queue_id, 0, group=group)
        assert pulled.code == ResponseCode.SUCCESS
    await env.call(RequestCode.UPDATE_CONSUMER_OFFSET, {"consumerGroup": group, "topic": topic, "queueId": 0,
                                                        "commitOffset": 3})


async def test_view_broker_stats_data_after_traffic(env):
    await _traffic(env, "StatsT", "StatsG", 10)
    env.broker.stats.manager.tick(env.broker.stats.manager._due[10_000])
    response = await env.call(RequestCode.VIEW_BROKER_STATS_DATA, {"statsName": "TOPIC_PUT_NUMS",
                                                                    "statsKey": "StatsT"})
    assert response.code == ResponseCode.SUCCESS, response.remark
    data = codec.json_loads(response.body)
    assert sorted(data) == ["statsDay", "statsHour", "statsMinute"]
    assert data["statsMinute"]["sum"] == 10
    got = codec.json_loads((await env.call(RequestCode.VIEW_BROKER_STATS_DATA,
                                           {"statsName": "GROUP_GET_NUMS", "statsKey": "StatsT@StatsG"})).body)
    assert got["statsMinute"]["sum"] == 10
    missing = await env.call(RequestCode.VIEW_BROKER_STATS_DATA, {"statsName": "TOPIC_PUT_NUMS", "statsKey": "nope"})
    assert missing.code == ResponseCode.SYSTEM_ERROR
    assert missing.remark == "The stats <TOPIC_PUT_NUMS> <nope> not exist"


async def test_broker_consume_stats_and_correction_offset(env):
    await _traffic(env, "StatsT", "StatsG", 10)
    await env.call(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=codec.json_dumps(
        {"groupName": "StatsG"}).encode())
    response = await env.call(RequestCode.GET_BROKER_CONSUME_STATS, {"isOrder": "false"})
    assert response.code == ResponseCode.SUCCESS
    data = codec.json_loads(response.body)
    assert data["brokerAddr"] == env.addr
    entry = next(item["StatsG"] for item in data["consumeStatsList"] if "StatsG" in item)
    offsets = {consumer_body.queue_from_key(key).queue_id: value for key, value in entry[0]["offsetTable"].items()}
    assert offsets[0]["brokerOffset"] == 5 and offsets[0]["consumerOffset"] == 3
    assert data["totalDiff"] >= 7
    correction = await env.call(RequestCode.QUERY_CORRECTION_OFFSET, {"topic": "StatsT", "compareGroup": "other"})
    assert codec.json_loads(correction.body) == {"correctionOffsets": {0: 3}}


async def test_query_consume_queue(env):
    await _traffic(env, "StatsT", "StatsG", 6)
    response = await env.call(RequestCode.QUERY_CONSUME_QUEUE, {"topic": "StatsT", "queueId": 0, "index": 1,
                                                                 "count": 2, "consumerGroup": "StatsG"})
    assert response.code == ResponseCode.SUCCESS
    data = codec.json_loads(response.body)
    assert (data["minQueueIndex"], data["maxQueueIndex"]) == (0, 3)
    assert len(data["queueData"]) == 2 and data["queueData"][0]["physicSize"] > 0
    assert data["filterData"] == "StatsG@StatsT is not online!"
    past_end = await env.call(RequestCode.QUERY_CONSUME_QUEUE, {"topic": "StatsT", "queueId": 0, "index": 9,
                                                                 "count": 2})
    assert past_end.code == ResponseCode.SUCCESS and past_end.body is None
    assert past_end.remark == "Index 9 of 0@StatsT is not exist!"
    absent = await env.call(RequestCode.QUERY_CONSUME_QUEUE, {"topic": "Nope", "queueId": 0, "index": 0, "count": 1})
    assert (absent.code, absent.remark) == (ResponseCode.SYSTEM_ERROR, "0@Nope is not exist!")


async def test_consumer_status_asks_the_online_consumers(env):
    await _traffic(env, "StatsT", "StatsG", 2)

    async def status(ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        answer = create_response(request, ResponseCode.SUCCESS)
        answer.body = consumer_body.encode_consumer_status_body({MessageQueue("StatsT", "broker-t", 0): 1})
        return answer

    env.client_processors.register(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, status)
    nobody = await env.call(RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, {"topic": "StatsT", "group": "StatsG"})
    assert nobody.remark == "No Any Consumer online in the consumer group: [StatsG]"
    assert (await env.call(RequestCode.HEART_BEAT, body=heartbeat("cid-1", "StatsG", "StatsT"))).code == ResponseCode.SUCCESS
    response = await env.call(RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, {"topic": "StatsT",
                                                                                  "group": "StatsG"})
    assert response.code == ResponseCode.SUCCESS
    table = codec.json_loads(response.body)["consumerTable"]
    assert {client: consumer_body.decode_queue_table(queues) for client, queues in table.items()} == {
        "cid-1": {consumer_body.queue_from_key(next(iter(table["cid-1"]))): 1}}


async def test_resume_check_half_message_stores_it_again(env):
    response = await env.send("HalfT", b"half", properties={"TRAN_MSG": "true", "PGROUP": "pg"})
    assert response.code == ResponseCode.SUCCESS
    half_id = response.ext_fields["msgId"]
    before = env.broker.store.get_max_offset_in_queue("RMQ_SYS_TRANS_HALF_TOPIC", 0)
    resumed = await env.call(RequestCode.RESUME_CHECK_HALF_MESSAGE, {"msgId": half_id})
    assert resumed.code == ResponseCode.SUCCESS, resumed.remark
    assert env.broker.store.get_max_offset_in_queue("RMQ_SYS_TRANS_HALF_TOPIC", 0) == before + 1
    bad = await env.call(RequestCode.RESUME_CHECK_HALF_MESSAGE, {"msgId": "not-an-id"})
    assert bad.code == ResponseCode.SYSTEM_ERROR


# --- Prometheus metrics and health ------------------------------------------------------------------------


async def _http_get(port: int, path: str) -> tuple[int, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    await writer.drain()
    raw = await asyncio.wait_for(reader.read(), 30)
    writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def _samples(text: bytes) -> dict[tuple[str, tuple], float]:
    from prometheus_client.parser import text_string_to_metric_families

    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text.decode()) for sample in family.samples}


def _value(samples: dict, name: str, **labels: str) -> float:
    matches = [value for (metric, found), value in samples.items()
               if metric == name and all((key, want) in found for key, want in labels.items())]
    assert len(matches) == 1, (name, labels, matches)
    return matches[0]


async def test_metrics_count_the_traffic_and_health_tells_a_full_store(tmp_path):
    async with BrokerEnv(tmp_path, metrics_port=-1) as env:
        port = env.broker.metrics_server.port
        await _traffic(env, "MetricT", "MetricG", 10)
        await env.call(RequestCode.UPDATE_CONSUMER_OFFSET, {"consumerGroup": "MetricG", "topic": "MetricT",
                                                            "queueId": 1, "commitOffset": 5})
        env.broker.stats.sample()
        status, body = await _http_get(port, "/metrics")
        assert status == 200
        samples = _samples(body)
        topic = {"cluster": "DefaultCluster", "broker": "broker-t", "topic": "MetricT"}
        assert _value(samples, "rocketmq_topic_put_messages_total", **topic) == 10
        assert _value(samples, "rocketmq_producer_offset", **topic) == 10
        assert _value(samples, "rocketmq_group_get_messages_total", group="MetricG", **topic) == 10
        assert _value(samples, "rocketmq_consumer_offset", group="MetricG", **topic) == 8
        assert _value(samples, "rocketmq_group_diff", group="MetricG", topic="MetricT") == 2
        assert _value(samples, "rocketmq_broker_put_latency_milliseconds_count") == 10
        assert _value(samples, "rocketmq_producer_tps", **topic) > 0
        for name in ("rocketmq_broker_tps", "rocketmq_broker_qps", "rocketmq_brokeruntime_put_tps10",
                     "rocketmq_brokeruntime_commitlog_disk_ratio", "rocketmq_brokeruntime_pmdt_0to10ms"):
            assert any(metric == name for metric, _ in samples), name

        status, body = await _http_get(port, "/health")
        assert status == 200 and json.loads(body)["storeWritable"] is True
        env.broker.store.mark_disk_full(True, 0.99)
        status, body = await _http_get(port, "/health")
        assert status == 503
        assert json.loads(body) | {"nameServers": None} == json.loads(body) | {
            "status": "DOWN", "storeWritable": False, "registered": True, "nameServers": None}
        assert (await _http_get(port, "/nope"))[0] == 404


async def test_name_server_metrics(tmp_path):
    config = NamesrvConfig(listen_port=0, bind_address="127.0.0.1", kv_config_path="", metrics_port=-1)
    async with NamesrvController(config) as namesrv:
        status, body = await _http_get(namesrv.metrics_server.port, "/metrics")
        assert status == 200 and _value(_samples(body), "rocketmq_namesrv_live_brokers") == 0
        status, body = await _http_get(namesrv.metrics_server.port, "/health")
        assert status == 200 and json.loads(body)["status"] == "UP"
