"""Our name server and broker in process on loopback, for tests of the client API against a real broker.

``async with LoopbackCluster(tmp_path) as cluster`` starts both; ``cluster.namesrv_addr`` is what clients
take, ``await cluster.produce(topic, n)`` sends n messages with our producer, ``cluster.committed(group,
topic)`` reads the broker's consumer offsets, and ``await cluster.stop_broker()`` takes the broker away (an
outage: its port closes while clients still hold its route).
"""
from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Awaitable, Callable, TypeVar

from rocketmq_py.broker import BrokerConfig, BrokerController
from rocketmq_py.namesrv import NamesrvConfig, NamesrvController
from rocketmq_py.store import MessageStoreConfig

_T = TypeVar("_T")


class LoopbackCluster:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.namesrv = NamesrvController(NamesrvConfig(listen_port=0, bind_address="127.0.0.1",
                                                       kv_config_path=str(root / "kv.json")))
        self.broker: BrokerController | None = None

    async def __aenter__(self) -> "LoopbackCluster":
        await self.namesrv.start()
        config = BrokerConfig(broker_name="broker-api", namesrv_addr=self.namesrv.address, listen_port=0,
                              bind_address="127.0.0.1", broker_ip1="127.0.0.1", broker_ip2="127.0.0.1",
                              fast_channel_enable=False)
        store = MessageStoreConfig(store_path_root_dir=str(self.root / "store"),
                                   mapped_file_size_commit_log=4 * 1024 * 1024,
                                   mapped_file_size_consume_queue=1000 * 20, max_hash_slot_num=1000,
                                   max_index_num=4000)
        self.broker = BrokerController(config, store)
        await self.broker.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop_broker()
        await self.namesrv.shutdown()

    async def stop_broker(self) -> None:
        if self.broker is not None:
            await self.broker.shutdown()
            self.broker = None

    @property
    def namesrv_addr(self) -> str:
        return self.namesrv.address

    async def produce(self, topic: str, count: int) -> list[str]:
        """Send ``count`` messages (bodies ``b"m<i>"``) to ``topic``; their message ids."""
        from rocketmq_py import AsyncProducer, Message

        async with AsyncProducer("api_test_pg", namesrv_addr=self.namesrv_addr, instance_name="api-produce") as p:
            return [(await p.send(Message(topic, f"m{i}".encode()))).msg_id for i in range(count)]

    def committed(self, group: str, topic: str) -> dict[int, int]:
        assert self.broker is not None
        return {queue: offset for queue, offset in self.broker.offsets.query_offsets(group, topic).items()}

    def max_offsets(self, topic: str) -> dict[int, int]:
        assert self.broker is not None
        store = self.broker.store
        config = self.broker.topics.select(topic)
        assert config is not None
        return {queue: store.get_max_offset_in_queue(topic, queue) for queue in range(config.read_queue_nums)}


async def wait_until(condition: Callable[[], bool | Awaitable[bool]], timeout: float = 30.0) -> None:
    """Poll ``condition`` until true; generous timeouts, the machine may be loaded."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if not isinstance(result, bool):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.05)


class ThreadedCluster:
    """A :class:`LoopbackCluster` on a loop of its own thread, for code that runs its own event loop (the
    ``rocketmq-py`` command in process) or other processes: ``with ThreadedCluster(tmp_path) as threaded``,
    then ``threaded.cluster`` and ``threaded.run(coroutine)``."""

    def __init__(self, root: Path) -> None:
        from rocketmq_py.remoting.blocking import BackgroundLoop

        self._loop = BackgroundLoop("threaded-cluster")
        self.cluster = LoopbackCluster(root)

    def __enter__(self) -> "ThreadedCluster":
        self._loop.run(self.cluster.__aenter__())
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._loop.run(self.cluster.__aexit__())
        finally:
            self._loop.close()

    def run(self, coro: Awaitable[_T]) -> _T:
        """Run ``coro`` on the cluster's loop (to reach its servers' state) and wait for it."""
        async def wrapped() -> _T:
            return await coro

        return self._loop.run(wrapped())
