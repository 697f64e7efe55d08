"""The producer against an in-process fake name server and fake brokers on loopback: the request it
builds, retries on Java's retriable codes, the TBW102 path, heartbeats and unregistering."""
from __future__ import annotations

import asyncio
import zlib

import pytest
from support.fake_cluster import FakeCluster

from rocketmq_py import codec
from rocketmq_py.client.producer import AsyncProducer, SendStatus
from rocketmq_py.common.codes import RequestCode, ResponseCode
from rocketmq_py.common.heartbeat import HeartbeatData
from rocketmq_py.common.message import Message
from rocketmq_py.common.route import TopicRouteData
from rocketmq_py.errors import (
    ClientErrorCode,
    MessageIllegalError,
    NoRouteInfoError,
    SendFailedError,
)


@pytest.fixture
async def cluster():
    async with FakeCluster() as fake:
        fake.known_topics.add("T")
        yield fake


def _producer(cluster: FakeCluster, **options) -> AsyncProducer:
    return AsyncProducer("test_pg", namesrv_addr=cluster.namesrv.address, instance_name="loopback", **options)


async def test_sync_send_builds_the_v2_header_and_result(cluster):
    async with _producer(cluster) as producer:
        message = Message("T", b"hello", tags="TagA", keys=["k1", "k2"], properties={"p": "v"})
        result = await producer.send(message)
    [(broker, request)] = cluster.sends()
    fields = request.ext_fields
    assert request.code == RequestCode.SEND_MESSAGE_V2
    assert (fields["a"], fields["b"], fields["c"], fields["d"]) == ("test_pg", "T", "TBW102", "4")
    assert fields["f"] == "0" and fields["h"] == "0" and fields["j"] == "0"
    assert fields["k"] == "false" and fields["m"] == "false" and fields["n"] == broker
    assert int(fields["g"]) > 1_600_000_000_000
    properties = codec.string_to_properties(fields["i"])
    assert properties == {"TAGS": "TagA", "KEYS": "k1 k2", "p": "v", "WAIT": "true",
                          "UNIQ_KEY": message.properties["UNIQ_KEY"]}
    assert len(properties["UNIQ_KEY"]) == 32
    assert request.body == b"hello"
    assert result.send_status is SendStatus.SEND_OK
    assert result.msg_id == properties["UNIQ_KEY"]
    assert result.message_queue.broker_name == broker and result.message_queue.queue_id == int(fields["e"])
    assert result.region_id == "RegionX" and result.trace_on


async def test_round_robin_over_all_queues(cluster):
    async with _producer(cluster) as producer:
        results = [await producer.send(Message("T", b"x")) for _ in range(16)]
    seen = {(r.message_queue.broker_name, r.message_queue.queue_id) for r in results}
    assert len(seen) == 8


async def test_retriable_code_moves_to_another_broker(cluster):
    async with _producer(cluster) as producer:
        await producer.send(Message("T", b"warm"))
        cluster.answer_next_sends([ResponseCode.SERVICE_NOT_AVAILABLE])
        before = len(cluster.sends())
        result = await producer.send(Message("T", b"x"))
    brokers = [name for name, _ in cluster.sends()[before:]]
    assert len(brokers) == 3, "each broker refuses once; the third attempt succeeds"
    assert brokers[0] != brokers[1] != brokers[2], "each retry must avoid the broker that just failed"
    assert result.send_status is SendStatus.SEND_OK


async def test_non_retriable_code_is_raised_at_once(cluster):
    async with _producer(cluster) as producer:
        await producer.send(Message("T", b"warm"))
        cluster.answer_next_sends([ResponseCode.MESSAGE_ILLEGAL])
        before = len(cluster.sends())
        with pytest.raises(MessageIllegalError):
            await producer.send(Message("T", b"x"))
    assert len(cluster.sends()) - before == 1


async def test_all_attempts_failing_gives_send_failed_with_the_code(cluster):
    async with _producer(cluster, retry_times_when_send_failed=2) as producer:
        await producer.send(Message("T", b"warm"))
        cluster.answer_next_sends([ResponseCode.SYSTEM_ERROR] * 3)
        with pytest.raises(SendFailedError) as failure:
            await producer.send(Message("T", b"x"))
    assert failure.value.code == ResponseCode.SYSTEM_ERROR
    assert "send [3] times" in str(failure.value)


async def test_not_stored_ok_status_retries_only_when_asked(cluster):
    async with _producer(cluster, retry_another_broker_when_not_store_ok=True) as producer:
        await producer.send(Message("T", b"warm"))
        cluster.answer_next_sends([ResponseCode.FLUSH_DISK_TIMEOUT])
        result = await producer.send(Message("T", b"x"))
        assert result.send_status is SendStatus.SEND_OK
    async with AsyncProducer("test_pg2", namesrv_addr=cluster.namesrv.address) as producer:
        await producer.send(Message("T", b"warm"))
        cluster.answer_next_sends([ResponseCode.FLUSH_DISK_TIMEOUT])
        assert (await producer.send(Message("T", b"x"))).send_status is SendStatus.FLUSH_DISK_TIMEOUT


async def test_unknown_topic_goes_through_tbw102_capped_at_default_queue_nums(cluster):
    async with _producer(cluster) as producer:
        queues = await producer.fetch_publish_message_queues("NewTopic")
        await producer.send(Message("NewTopic", b"x"))
    assert "TBW102" in cluster.route_requests
    assert len(queues) == 2 * 4, "TBW102 has 8 queues per broker; the producer caps them at 4"
    [(_, request)] = cluster.sends()
    assert request.ext_fields["b"] == "NewTopic" and request.ext_fields["c"] == "TBW102"


async def test_no_route_anywhere_raises_no_route_info():
    async with FakeCluster() as fake:
        fake.route = lambda queues, perm=6: TopicRouteData()  # TBW102 has no queues either
        async with _producer(fake) as producer:
            with pytest.raises(NoRouteInfoError) as failure:
                await producer.send(Message("Nowhere", b"x"))
    assert failure.value.code == ClientErrorCode.NOT_FOUND_TOPIC_EXCEPTION
    assert "no route info of this topic: Nowhere" in str(failure.value)


async def test_compression_above_the_threshold(cluster):
    body = b"abc" * 3000
    async with _producer(cluster) as producer:
        await producer.send(Message("T", body))
        await producer.send(Message("T", body[:4095]))
    (_, big), (_, small) = cluster.sends()
    assert int(big.ext_fields["f"]) == 0x301 and zlib.decompress(big.body) == body
    assert int(small.ext_fields["f"]) == 0 and small.body == body[:4095]


@pytest.mark.parametrize("kind,code", [("LZ4", 1), ("ZSTD", 2)])
async def test_other_compression_types(cluster, kind, code):
    body = bytes(range(256)) * 40
    async with _producer(cluster, compress_type=kind) as producer:
        await producer.send(Message("T", body))
    [(_, request)] = cluster.sends()
    assert int(request.ext_fields["f"]) == 1 | (code << 8)
    assert codec.decompress(request.body, code) == body


async def test_batch_body_and_header(cluster):
    messages = [Message("T", f"m{i}".encode(), tags="B", properties={"i": str(i)}) for i in range(3)]
    async with _producer(cluster) as producer:
        result = await producer.send(messages)
    [(_, request)] = cluster.sends()
    assert request.code == RequestCode.SEND_BATCH_MESSAGE
    assert request.ext_fields["m"] == "true"
    assert codec.string_to_properties(request.ext_fields["i"]) == {"WAIT": "true"}
    items = codec.decode_batch(request.body)
    assert [body for _, body, _ in items] == [b"m0", b"m1", b"m2"]
    assert [props["UNIQ_KEY"] for _, _, props in items] == result.msg_id.split(",")


async def test_oneway_and_async(cluster):
    async with _producer(cluster) as producer:
        await producer.send_oneway(Message("T", b"one"))
        results = await asyncio.gather(*(producer.send_async(Message("T", b"a")) for _ in range(5)))
    assert all(r.send_status is SendStatus.SEND_OK for r in results)
    for _ in range(50):
        if len(cluster.sends()) == 6:
            break
        await asyncio.sleep(0.01)
    assert len(cluster.sends()) == 6
    oneway = [r for _, r in cluster.sends() if r.body == b"one"]
    assert oneway and oneway[0].is_oneway


async def test_async_send_retries_when_the_broker_is_unreachable():
    async with FakeCluster(broker_count=2) as fake:
        fake.known_topics.add("T")
        async with _producer(fake, retry_times_when_send_async_failed=2) as producer:
            await producer.send(Message("T", b"warm"))
            await fake.brokers[0].server.shutdown()
            results = [await producer.send_async(Message("T", b"x")) for _ in range(4)]
    assert all(r.message_queue.broker_name == "broker-b" for r in results)


async def test_heartbeat_and_unregister(cluster):
    producer = _producer(cluster)
    await producer.start()
    await producer.send(Message("T", b"x"))
    await producer.instance.send_heartbeat_to_all_brokers()
    client_id = producer.instance.client_id
    await producer.shutdown()
    for broker in cluster.brokers:
        [heartbeat, *_] = broker.of_code(RequestCode.HEART_BEAT)
        data = HeartbeatData.decode(heartbeat.body)
        assert data.client_id == client_id and data.producer_groups == ["test_pg"]
        [unregister] = broker.of_code(RequestCode.UNREGISTER_CLIENT)
        assert unregister.ext_fields == {"clientID": client_id, "producerGroup": "test_pg"}
    assert client_id.endswith("@loopback")


async def test_one_client_instance_per_client_id(cluster):
    async with _producer(cluster) as first, AsyncProducer(
            "other_pg", namesrv_addr=cluster.namesrv.address, instance_name="loopback") as second:
        assert first.instance is second.instance
        assert set(first.instance.producers) == {"test_pg", "other_pg"}
    async with _producer(cluster) as again:
        assert again.instance is not first.instance


async def test_namespace_wraps_topic_and_group(cluster):
    cluster.known_topics.add("ns1%T")
    async with _producer(cluster, namespace="ns1") as producer:
        result = await producer.send(Message("T", b"x"))
    [(_, request)] = cluster.sends()
    assert request.ext_fields["a"] == "ns1%test_pg" and request.ext_fields["b"] == "ns1%T"
    assert codec.string_to_properties(request.ext_fields["i"])["INSTANCE_ID"] == "ns1"
    assert result.message_queue.topic == "T"
