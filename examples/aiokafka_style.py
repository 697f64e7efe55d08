"""Both asyncio consumers used as an aiokafka user uses ``AIOKafkaConsumer``; ``mypy --strict`` checks it in CI.

What an aiokafka user writes, and its counterpart here: the methods that only change the consumer's own state
are plain methods (no ``await``), those that ask a broker are coroutines, on both consumers::

    consumer.subscribe(topics=["t"])            consumer.subscribe("T")
    consumer.assign([tp])                       consumer.assign([queue])
    consumer.seek(tp, offset)                   consumer.seek(queue, offset)
    await consumer.seek_to_beginning(tp)        await consumer.seek_to_begin(queue)
    await consumer.start(); await consumer.stop()   async with consumer (or start() and shutdown())
    async for record in consumer                async for message in consumer
    await consumer.getmany(timeout_ms=1000)     await consumer.poll(1000)
    await consumer.commit()                     await consumer.commit()

Run it against a name server whose brokers have (or auto-create) the topic:
``python examples/aiokafka_style.py 127.0.0.1:9876 [TOPIC]``.
"""
from __future__ import annotations

import asyncio
import logging
import sys

from rocketmq_py import AsyncLitePullConsumer, AsyncProducer, AsyncPushConsumer, ConsumeFromWhere, Message

log = logging.getLogger("aiokafka_style")
FIRST = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET


async def produce(namesrv: str, topic: str, count: int) -> list[str]:
    """Send ``count`` messages; their ids."""
    async with AsyncProducer("aiokafka_style_pg", namesrv_addr=namesrv) as producer:
        return [(await producer.send(Message(topic, f"record {i}".encode()))).msg_id for i in range(count)]


async def consume_with_a_group(namesrv: str, topic: str, count: int) -> list[str]:
    """``subscribe`` (plain), then ``async for`` and ``commit``, as with a group in aiokafka."""
    consumer = AsyncLitePullConsumer("aiokafka_style_group", namesrv_addr=namesrv, consume_from_where=FIRST,
                                     auto_commit=False)
    consumer.subscribe(topic)
    ids: list[str] = []
    async with consumer:
        async for message in consumer:
            ids.append(message.msg_id)
            if len(ids) == count:
                break
        await consumer.commit()
    return ids


async def replay_every_queue(namesrv: str, topic: str, count: int) -> list[str]:
    """No group rebalance: ``assign`` the topic's queues and ``seek`` them (plain), then ``poll``, as aiokafka's
    ``assign``, ``seek`` and ``getmany``."""
    consumer = AsyncLitePullConsumer("aiokafka_style_replay", namesrv_addr=namesrv, auto_commit=False)
    ids: list[str] = []
    async with consumer:
        queues = await consumer.fetch_message_queues(topic)
        consumer.assign(queues)
        for queue in queues:
            consumer.seek(queue, 0)
        while len(ids) < count:
            ids.extend(message.msg_id for message in await consumer.poll(1000))
    return ids


async def consume_with_push(namesrv: str, topic: str, count: int) -> list[str]:
    """The push consumer the same way: ``subscribe`` (plain), then ``async for`` over its batches."""
    consumer = AsyncPushConsumer("aiokafka_style_push", namesrv_addr=namesrv, consume_from_where=FIRST)
    consumer.subscribe(topic)
    batches = consumer.messages()
    ids: list[str] = []
    async with consumer:
        async for batch in batches:
            ids.extend(message.msg_id for message in batch)
            if len(ids) >= count:
                break
    return ids


async def main(namesrv: str, topic: str, count: int = 20) -> None:
    sent = await produce(namesrv, topic, count)
    for consume in (consume_with_a_group, replay_every_queue, consume_with_push):
        got = await consume(namesrv, topic, count)
        log.info("%s: %d of the %d messages sent", consume.__name__, len(set(got) & set(sent)), len(sent))


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    asyncio.run(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "AiokafkaStyleTopic"))
