"""A name server and a master-slave pair of our brokers in process on loopback (issue 12 tests)."""
from __future__ import annotations

import asyncio
import time
from pathlib import Path

from rocketmq_py import codec
from rocketmq_py.broker import BrokerConfig, BrokerController
from rocketmq_py.common.codes import RequestCode
from rocketmq_py.namesrv import NamesrvConfig, NamesrvController
from rocketmq_py.remoting import RemotingClient, RemotingCommand, create_request
from rocketmq_py.store import MessageStoreConfig

from .ports import free_broker_port

#: Small CommitLog files, so a few hundred messages roll over several of them.
COMMIT_LOG_FILE_SIZE = 256 * 1024


class HAPair:
    """``async with HAPair(root, master_role=...) as pair``: name server, master, and (``await pair.start_slave()``)
    a slave of the same broker name."""

    def __init__(self, root: Path, master_role: str = "ASYNC_MASTER", **store_options) -> None:
        self.root = root
        self.master_role = master_role
        self.store_options = store_options
        self.namesrv: NamesrvController | None = None
        self.master: BrokerController | None = None
        self.slave: BrokerController | None = None
        self.client = RemotingClient()
        self._ids = codec.UniqueIdGenerator(b"\x7f\x00\x00\x01")

    def make_broker(self, name: str, role: str, broker_id: int, broker_options: dict | None = None,
                    **store_options) -> BrokerController:
        assert self.namesrv is not None
        config = BrokerConfig(broker_name="broker-ha", namesrv_addr=self.namesrv.address,
                              listen_port=free_broker_port(), bind_address="127.0.0.1", broker_ip1="127.0.0.1",
                              broker_ip2="127.0.0.1", fast_channel_enable=False, broker_id=broker_id,
                              **(broker_options or {}))
        options = dict(self.store_options, **store_options)
        store = MessageStoreConfig(store_path_root_dir=str(self.root / name), broker_role=role,
                                   mapped_file_size_commit_log=COMMIT_LOG_FILE_SIZE,
                                   mapped_file_size_consume_queue=1000 * 20, max_hash_slot_num=1000,
                                   max_index_num=4000, **options)
        return BrokerController(config, store)

    async def __aenter__(self) -> "HAPair":
        self.namesrv = NamesrvController(NamesrvConfig(listen_port=0, bind_address="127.0.0.1",
                                                       kv_config_path=str(self.root / "kv.json")))
        await self.namesrv.start()
        self.master = self.make_broker("master", self.master_role, 0)
        await self.master.start()
        return self

    async def start_slave(self, broker_options: dict | None = None, **store_options) -> BrokerController:
        """The slave (brokerId 1); ``broker_options`` are BrokerConfig fields (``slave_read_enable=True``)."""
        self.slave = self.make_broker("slave", "SLAVE", 1, broker_options, **store_options)
        await self.slave.start()
        return self.slave

    async def stop_slave(self) -> None:
        if self.slave is not None:
            await self.slave.shutdown()
            self.slave = None

    async def __aexit__(self, *exc) -> None:
        await self.client.shutdown()
        for broker in (self.slave, self.master):
            if broker is not None:
                await broker.shutdown()
        if self.namesrv is not None:
            await self.namesrv.shutdown()

    async def send(self, topic: str, body: bytes, addr: str | None = None, queue_id: int = 0,
                   tags: str | None = None) -> RemotingCommand:
        assert self.master is not None
        properties = {"WAIT": "true", "UNIQ_KEY": self._ids.next_id()}
        if tags is not None:
            properties["TAGS"] = tags
        fields = {"a": "ha_pg", "b": topic, "c": "TBW102", "d": "4", "e": str(queue_id), "f": "0",
                  "g": str(int(time.time() * 1000)), "h": "0", "i": codec.properties_to_string(properties),
                  "k": "false", "m": "false"}
        request = create_request(RequestCode.SEND_MESSAGE_V2, fields, body)
        return await self.client.invoke(addr or self.master.broker_addr, request, 10_000)

    async def wait_caught_up(self, timeout_s: float = 60.0) -> None:
        assert self.master is not None and self.slave is not None
        deadline = time.monotonic() + timeout_s
        while self.slave.store.commit_log.max_offset < self.master.store.commit_log.max_offset:
            if time.monotonic() > deadline:
                raise AssertionError(f"the slave is at {self.slave.store.commit_log.max_offset}, the master at "
                                     f"{self.master.store.commit_log.max_offset}")
            await asyncio.sleep(0.05)


def commit_log_bytes(broker: BrokerController, start: int, end: int) -> bytes:
    """The CommitLog bytes [start, end) of a broker's store, read from its files."""
    commit_log = broker.store.commit_log
    out = bytearray()
    offset = start
    while offset < end:
        mapped = commit_log.queue.find_mapped_file_by_offset(offset)
        assert mapped is not None, f"no CommitLog file holds offset {offset}"
        position = offset - mapped.file_from_offset
        take = min(end - offset, mapped.file_size - position)
        out += mapped.mm[position:position + take]
        offset += take
    return bytes(out)


async def until(condition, timeout_s: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)


def codec_request(code: int, fields: dict) -> RemotingCommand:
    return create_request(code, fields)
