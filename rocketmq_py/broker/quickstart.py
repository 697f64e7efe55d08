"""``rocketmq-py quickstart``: a name server and a broker of this package in a temporary directory, a producer
sending messages, a consumer reading them back, and a summary.

Everything runs in this process on loopback ports chosen by the system, so
it works on a fresh machine without configuration. The exit code is 0 only
when every message sent was consumed with the body and tag it was sent with.
"""
from __future__ import annotations

import asyncio
import json
import logging
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rocketmq_py import codec
from rocketmq_py.broker.config import BrokerConfig
from rocketmq_py.broker.controller import BrokerController
from rocketmq_py.common.message import Message, MessageExt
from rocketmq_py.store import MessageStoreConfig

_log = logging.getLogger(__name__)

TOPIC = "QuickStartTopic"
PRODUCER_GROUP = "QuickStartProducerGroup"
CONSUMER_GROUP = "QuickStartConsumerGroup"
CONSUME_TIMEOUT_S = 60.0


@dataclass
class Summary:
    namesrv: str = ""
    broker: str = ""
    store_dir: str = ""
    codec: str = codec.IMPLEMENTATION
    topic: str = TOPIC
    sent: int = 0
    send_ok: int = 0
    queues_used: list[int] = field(default_factory=list)
    received: int = 0
    matched: int = 0
    consumer: str = ""
    send_seconds: float = 0.0
    consume_seconds: float = 0.0
    committed_offsets: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.sent > 0 and self.send_ok == self.sent and self.matched == self.sent

    def text(self) -> str:
        lines = [
            "rocketmq-py quickstart",
            f"  name server      {self.namesrv}",
            f"  broker           {self.broker}  (store {self.store_dir}, codec {self.codec})",
            f"  produced         {self.send_ok}/{self.sent} SEND_OK to {self.topic} over queues {self.queues_used} "
            f"in {self.send_seconds:.2f} s",
            f"  consumed         {self.received} messages with {self.consumer} in {self.consume_seconds:.2f} s; "
            f"{self.matched}/{self.sent} match what was sent (body and tag)",
            f"  committed        {self.committed_offsets}",
            f"  result           {'OK' if self.ok else 'FAILED'}",
        ]
        return "\n".join(lines)


def _body(index: int) -> bytes:
    return f"Hello RocketMQ {index}".encode()


def _tag(index: int) -> str:
    return "TagA" if index % 2 == 0 else "TagB"


async def _produce(namesrv: str, count: int, summary: Summary) -> dict[str, int]:
    from rocketmq_py.client.producer import AsyncProducer

    producer = AsyncProducer(PRODUCER_GROUP, namesrv_addr=namesrv)
    await producer.start()
    expected: dict[str, int] = {}
    started = time.monotonic()
    try:
        for index in range(count):
            result = await producer.send(Message(TOPIC, _body(index), tags=_tag(index), keys=f"key-{index}"))
            summary.sent += 1
            if result.send_status.name == "SEND_OK":
                summary.send_ok += 1
            expected[result.msg_id] = index
            if result.message_queue.queue_id not in summary.queues_used:
                summary.queues_used.append(result.message_queue.queue_id)
    finally:
        summary.send_seconds = time.monotonic() - started
        await producer.shutdown()
    summary.queues_used.sort()
    return expected


async def _consume(namesrv: str, expected: dict[str, int], summary: Summary) -> None:
    from rocketmq_py.client.consumer import AsyncLitePullConsumer, ConsumeFromWhere

    consumer = AsyncLitePullConsumer(CONSUMER_GROUP, namesrv_addr=namesrv,
                                     consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    summary.consumer = "AsyncLitePullConsumer"
    consumer.subscribe(TOPIC, "*")
    await consumer.start()
    started = time.monotonic()
    seen: set[str] = set()
    try:
        while len(seen) < len(expected) and time.monotonic() - started < CONSUME_TIMEOUT_S:
            for message in await consumer.poll(1000):
                summary.received += 1
                if _matches(message, expected) and message.msg_id not in seen:
                    seen.add(message.msg_id)
                    summary.matched += 1
        await consumer.commit_sync()
    finally:
        summary.consume_seconds = time.monotonic() - started
        await consumer.shutdown()


def _matches(message: MessageExt, expected: dict[str, int]) -> bool:
    index = expected.get(message.msg_id)
    return index is not None and message.body == _body(index) and message.tags == _tag(index)


async def quickstart(count: int, work_dir: Path) -> Summary:
    from rocketmq_py.namesrv import NamesrvConfig, NamesrvController

    summary = Summary(store_dir=str(work_dir / "store"))
    namesrv = NamesrvController(NamesrvConfig(listen_port=0, bind_address="127.0.0.1",
                                              kv_config_path=str(work_dir / "namesrv" / "kvConfig.json"),
                                              config_store_path=str(work_dir / "namesrv" / "namesrv.properties")))
    await namesrv.start()
    summary.namesrv = namesrv.address
    broker_config = BrokerConfig(broker_name="broker-quickstart", namesrv_addr=namesrv.address, listen_port=0,
                                 bind_address="127.0.0.1", broker_ip1="127.0.0.1", broker_ip2="127.0.0.1",
                                 fast_channel_enable=False)
    store_config = MessageStoreConfig(store_path_root_dir=summary.store_dir,
                                      mapped_file_size_commit_log=64 * 1024 * 1024,
                                      mapped_file_size_consume_queue=30_000 * 20,
                                      max_hash_slot_num=50_000, max_index_num=200_000)
    broker = BrokerController(broker_config, store_config)
    try:
        await broker.start()
        summary.broker = broker.broker_addr
        expected = await _produce(namesrv.address, count, summary)
        await _consume(namesrv.address, expected, summary)
        summary.committed_offsets = {str(queue): offset for queue, offset in
                                     sorted(broker.offsets.query_offsets(CONSUMER_GROUP, TOPIC).items())}
    finally:
        await broker.shutdown()
        await namesrv.shutdown()
    return summary


def run_quickstart(count: int = 100, keep: str | None = None, as_json: bool = False) -> int:
    from rocketmq_py.remoting.loop import run_on_new_loop

    work_dir = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="rocketmq-py-quickstart-"))
    work_dir.mkdir(parents=True, exist_ok=True)
    result: list[Summary] = []

    async def main() -> None:
        result.append(await quickstart(count, work_dir))

    try:
        run_on_new_loop(main())
    finally:
        if not keep:
            shutil.rmtree(work_dir, ignore_errors=True)
    summary = result[0]
    if as_json:
        sys.stdout.write(json.dumps(dict(asdict(summary), ok=summary.ok), indent=2) + "\n")
    else:
        sys.stdout.write(summary.text() + "\n")
    return 0 if summary.ok else 1
