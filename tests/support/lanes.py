"""A broker in process on loopback, without a name server, and the raw requests the lane tests send.

Test modules import what they need from here (never from each other).
"""
from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from rocketmq_py import codec
from rocketmq_py.broker import BrokerConfig, BrokerController
from rocketmq_py.common.codes import RequestCode
from rocketmq_py.remoting import RemotingCommand, create_request
from rocketmq_py.store import MessageStoreConfig


@asynccontextmanager
async def lone_broker(root: Path, **options: object) -> AsyncIterator[BrokerController]:
    """A broker on 127.0.0.1 with a small store under ``root``; ``options`` are broker or store settings."""
    store_options = {key: options.pop(key) for key in list(options) if hasattr(MessageStoreConfig, key)}
    config = BrokerConfig(broker_name="broker-lanes", namesrv_addr="", listen_port=0, bind_address="127.0.0.1",
                          broker_ip1="127.0.0.1", broker_ip2="127.0.0.1", fast_channel_enable=False,
                          **options)  # type: ignore[arg-type]
    store = MessageStoreConfig(store_path_root_dir=str(root / "store"), mapped_file_size_commit_log=8 * 1024 * 1024,
                               mapped_file_size_consume_queue=1000 * 20, max_hash_slot_num=1000, max_index_num=4000,
                               **store_options)  # type: ignore[arg-type]
    broker = BrokerController(config, store)
    await broker.start()
    try:
        yield broker
    finally:
        await broker.shutdown()


def send_request(topic: str, queue_id: int = 0, body: bytes = b"body") -> RemotingCommand:
    """A SEND_MESSAGE_V2 request as a Java producer sends it."""
    props = {"WAIT": "true", "UNIQ_KEY": codec.UniqueIdGenerator(b"\x7f\x00\x00\x01").next_id()}
    fields = {"a": "pg", "b": topic, "c": "TBW102", "d": "4", "e": str(queue_id), "f": "0",
              "g": str(int(time.time() * 1000)), "h": "0", "i": codec.properties_to_string(props), "k": "false",
              "m": "false"}
    return create_request(RequestCode.SEND_MESSAGE_V2, fields, body)


def heartbeat_body(client_id: str, group: str, topic: str) -> bytes:
    consumer = {"consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET", "consumeType": "CONSUME_PASSIVELY",
                "groupName": group, "messageModel": "CLUSTERING", "unitMode": False,
                "subscriptionDataSet": [{"classFilterMode": False, "codeSet": [], "expressionType": "TAG",
                                         "subString": "*", "subVersion": 1, "tagsSet": [], "topic": topic}]}
    return codec.json_dumps({"clientID": client_id, "consumerDataSet": [consumer],
                             "producerDataSet": [{"groupName": "pg"}]}).encode()
