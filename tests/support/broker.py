"""The in-process broker environment of the broker tests: our name server and broker on loopback, with a
raw remoting client that speaks to them as Java clients and mqadmin do."""
from __future__ import annotations

import time
from pathlib import Path

from rocketmq_py import codec
from rocketmq_py.broker import BrokerConfig, BrokerController
from rocketmq_py.common.codes import RequestCode
from rocketmq_py.common.headers.pull import FLAG_SUBSCRIPTION, FLAG_SUSPEND
from rocketmq_py.namesrv import NamesrvConfig, NamesrvController
from rocketmq_py.remoting import ProcessorTable, RemotingClient, RemotingCommand, create_request
from rocketmq_py.store import MessageStoreConfig


class BrokerEnv:
    """Our name server and broker on loopback, plus a raw client; ``await env.call(code, fields, body)``."""

    def __init__(self, root: Path, **broker_options) -> None:
        self.root = root
        self.broker_options = broker_options
        self.namesrv: NamesrvController | None = None
        self.broker: BrokerController | None = None
        self.client_processors = ProcessorTable()
        self.client = RemotingClient(self.client_processors)

    def make_broker(self, **options) -> BrokerController:
        assert self.namesrv is not None
        store_options = {key: options.pop(key) for key in list(options) if hasattr(MessageStoreConfig, key)}
        config = BrokerConfig(broker_name="broker-t", namesrv_addr=self.namesrv.address, listen_port=0,
                              bind_address="127.0.0.1", broker_ip1="127.0.0.1", broker_ip2="127.0.0.1",
                              fast_channel_enable=False, **options)
        store = MessageStoreConfig(store_path_root_dir=str(self.root / "store"),
                                   mapped_file_size_commit_log=4 * 1024 * 1024,
                                   mapped_file_size_consume_queue=1000 * 20, max_hash_slot_num=1000,
                                   max_index_num=4000, **store_options)
        return BrokerController(config, store)

    async def __aenter__(self) -> "BrokerEnv":
        self.namesrv = NamesrvController(NamesrvConfig(listen_port=0, bind_address="127.0.0.1",
                                                       kv_config_path=str(self.root / "kv.json")))
        await self.namesrv.start()
        self.broker = self.make_broker(**self.broker_options)
        await self.broker.start()
        return self

    async def restart(self, **options) -> None:
        assert self.broker is not None
        await self.broker.shutdown()
        self.broker = self.make_broker(**(options or dict(self.broker_options)))
        await self.broker.start()

    async def __aexit__(self, *exc) -> None:
        await self.client.shutdown()
        if self.broker is not None:
            await self.broker.shutdown()
        if self.namesrv is not None:
            await self.namesrv.shutdown()

    @property
    def addr(self) -> str:
        assert self.broker is not None
        return self.broker.broker_addr

    async def call(self, code: int, fields: dict | None = None, body: bytes | None = None, *,
                   timeout_ms: float = 5000, addr: str | None = None, **options) -> RemotingCommand:
        request = create_request(code, {k: str(v) for k, v in (fields or {}).items()}, body, **options)
        return await self.client.invoke(addr or self.addr, request, timeout_ms)

    async def send(self, topic: str, body: bytes = b"body", *, tags: str | None = None, queue_id: int = -1,
                   properties: dict | None = None, code: int = RequestCode.SEND_MESSAGE_V2,
                   sys_flag: int = 0, reconsume_times: int | None = None, max_reconsume: int | None = None,
                   group: str = "pg") -> RemotingCommand:
        props = {"WAIT": "true", "UNIQ_KEY": codec.UniqueIdGenerator(b"\x7f\x00\x00\x01").next_id()}
        if tags:
            props["TAGS"] = tags
        props.update(properties or {})
        fields = {"a": group, "b": topic, "c": "TBW102", "d": 4, "e": queue_id, "f": sys_flag,
                  "g": int(time.time() * 1000), "h": 0, "i": codec.properties_to_string(props), "k": "false",
                  "m": "false"}
        if reconsume_times is not None:
            fields["j"] = reconsume_times
        if max_reconsume is not None:
            fields["l"] = max_reconsume
        if code == RequestCode.SEND_MESSAGE:
            names = dict(zip("abcdefghijklm", ("producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums",
                                              "queueId", "sysFlag", "bornTimestamp", "flag", "properties",
                                              "reconsumeTimes", "unitMode", "maxReconsumeTimes", "batch")))
            fields = {names[k]: v for k, v in fields.items()}
        return await self.call(code, fields, body)

    async def pull(self, topic: str, queue_id: int, offset: int, *, group: str = "cg", sub: str = "*",
                   expression_type: str = "TAG", suspend_ms: int = 0, sys_flag: int | None = None,
                   commit_offset: int = 0, max_nums: int = 32, timeout_ms: float = 5000) -> RemotingCommand:
        flag = FLAG_SUBSCRIPTION | (FLAG_SUSPEND if suspend_ms else 0) if sys_flag is None else sys_flag
        fields = {"consumerGroup": group, "topic": topic, "queueId": queue_id, "queueOffset": offset,
                  "maxMsgNums": max_nums, "sysFlag": flag, "commitOffset": commit_offset,
                  "suspendTimeoutMillis": suspend_ms, "subscription": sub, "subVersion": 0,
                  "expressionType": expression_type}
        return await self.call(RequestCode.PULL_MESSAGE, fields, timeout_ms=timeout_ms)

    async def create_topic(self, topic: str, queues: int = 4, perm: int = 6, filter_type: str = "SINGLE_TAG",
                           order: bool = False) -> RemotingCommand:
        fields = {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": queues, "writeQueueNums": queues,
                  "perm": perm, "topicFilterType": filter_type, "topicSysFlag": 0, "order": str(order).lower()}
        return await self.call(RequestCode.UPDATE_AND_CREATE_TOPIC, fields)


def heartbeat(client_id: str, group: str, topic: str) -> bytes:
    """A HEART_BEAT body: one push consumer of ``group`` subscribed to all of ``topic``, one producer."""
    consumer = {"consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET", "consumeType": "CONSUME_PASSIVELY",
                "groupName": group, "messageModel": "CLUSTERING", "unitMode": False,
                "subscriptionDataSet": [{"classFilterMode": False, "codeSet": [], "expressionType": "TAG",
                                         "subString": "*", "subVersion": 1, "tagsSet": [], "topic": topic}]}
    return codec.json_dumps({"clientID": client_id, "consumerDataSet": [consumer],
                             "producerDataSet": [{"groupName": "pg"}]}).encode()
