"""A DLedger group of our brokers (``enableDLegerCommitLog=true``) with our name server, in one process on
loopback (issue 31, phase 2).

``DLedgerBrokers(root)`` makes three brokers ``n0..n2`` of one broker name on free ports; ``start()`` starts
them, ``stop(member)`` shuts one down, ``start(member)`` brings it back on its store. Every wait is on the
brokers' notices (their members' role changes and commits) with a generous deadline, looking again a few
times a second for what a notice does not announce (a role handler that finished); none compares times.
"""
from __future__ import annotations

import asyncio
import time
from pathlib import Path

from rocketmq_py import codec
from rocketmq_py.broker import BrokerConfig, BrokerController
from rocketmq_py.common.codes import RequestCode, ResponseCode
from rocketmq_py.common.headers.pull import FLAG_SUBSCRIPTION
from rocketmq_py.common.message import MessageExt
from rocketmq_py.common.route import PermName
from rocketmq_py.common.topic_config import TopicConfig
from rocketmq_py.namesrv import NamesrvConfig, NamesrvController
from rocketmq_py.remoting import ProcessorTable, RemotingClient, RemotingCommand, create_request
from rocketmq_py.store import SLAVE, SYNC_MASTER, MessageStoreConfig

from support.dledger import DATA_FILE_SIZE, WatchedPeers
from support.ports import free_port

#: How often a send answered SYSTEM_BUSY is sent again, as a producer would.
RESENDS = 5
BROKER_NAME = "RaftNode00"
CLUSTER = "RaftCluster"


class DLedgerBrokers(WatchedPeers):
    def __init__(self, root: Path, size: int = 3, **store_options: object) -> None:
        super().__init__()
        self.root = root
        self.ids = [f"n{i}" for i in range(size)]
        self.peers = ";".join(f"{member}-127.0.0.1:{free_port()}" for member in self.ids)
        self.store_options = store_options
        self.namesrv = NamesrvController(NamesrvConfig(listen_port=0, bind_address="127.0.0.1",
                                                       kv_config_path=str(root / "kv.json")))
        self.brokers: dict[str, BrokerController] = {}
        self.client = RemotingClient(ProcessorTable())
        #: Bodies sent again after a SYSTEM_BUSY answer: each may be stored twice (see ``send``).
        self.resent: set[bytes] = set()

    async def __aenter__(self) -> DLedgerBrokers:
        await self.namesrv.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        for member_id in list(self.brokers):
            await self.stop(member_id)
        await self.client.shutdown()
        await self.namesrv.shutdown()

    # --- brokers -----------------------------------------------------------------------------------

    def store_dir(self, member_id: str) -> Path:
        return self.root / member_id

    def make(self, member_id: str, **store_options: object) -> BrokerController:
        config = BrokerConfig(broker_name=BROKER_NAME, broker_cluster_name=CLUSTER,
                              namesrv_addr=self.namesrv.address, listen_port=0, bind_address="127.0.0.1",
                              broker_ip1="127.0.0.1", broker_ip2="127.0.0.1", fast_channel_enable=False)
        options = {"enable_d_leger_commit_log": True, "d_leger_group": BROKER_NAME, "d_leger_peers": self.peers,
                   "d_leger_self_id": member_id, **self.store_options, **store_options}
        store = MessageStoreConfig(store_path_root_dir=str(self.store_dir(member_id)),
                                   mapped_file_size_commit_log=DATA_FILE_SIZE,
                                   mapped_file_size_consume_queue=1000 * 20, max_hash_slot_num=1000,
                                   max_index_num=4000, **options)  # type: ignore[arg-type]
        return BrokerController(config, store)

    async def start(self, *member_ids: str, **store_options: object) -> None:
        for member_id in member_ids or self.ids:
            broker = self.make(member_id, **store_options)
            if broker.dledger is not None:
                broker.dledger.add_role_listener(lambda term, role: self._notice())
                broker.dledger.server.add_commit_listener(lambda index: self._notice())
                broker.dledger.server.transport.reachable = self._link_from(member_id)
            self.brokers[member_id] = broker
            await broker.start()

    async def stop(self, member_id: str) -> None:
        broker = self.brokers.pop(member_id)
        await broker.shutdown()
        self._notice()

    def describe(self) -> list[str]:
        return [f"{m}: {b.store_config.broker_role} id={b.config.broker_id} {b.dledger!r}"
                for m, b in self.brokers.items()]

    def master(self, among: list[str] | None = None) -> BrokerController | None:
        """The broker that leads and serves as master, when every other running broker (of ``among``) follows it
        as a slave with its own brokerId."""
        brokers = {m: b for m, b in self.brokers.items() if among is None or m in among}
        masters = [b for b in brokers.values() if b.config.broker_id == 0]
        if len(masters) != 1:
            return None
        master = masters[0]
        assert master.dledger is not None
        if master.store_config.broker_role != SYNC_MASTER or not master.dledger.server.is_leader:
            return None
        for member_id, broker in brokers.items():
            if broker is master:
                continue
            assert broker.dledger is not None
            server = broker.dledger.server
            if (broker.store_config.broker_role != SLAVE or broker.config.broker_id != int(member_id[1:]) + 1
                    or server.leader_id != master.dledger.server.self_id or server.term != master.dledger.server.term):
                return None
        return master

    async def wait_for_master(self, among: list[str] | None = None) -> BrokerController:
        await self.wait_for("a master that every broker follows", lambda: self.master(among) is not None)
        master = self.master(among)
        assert master is not None
        return master

    def caught_up(self) -> bool:
        """Every running broker holds, has committed and has dispatched the master's whole ledger."""
        master = self.master()
        if master is None or master.dledger is None:
            return False
        end = master.dledger.server.ledger_end_index
        return all(b.dledger is not None and b.dledger.server.committed_index == end
                   and b.dledger.server.ledger_end_index == end and b.store.dispatch_behind_bytes() == 0
                   for b in self.brokers.values())

    async def wait_caught_up(self) -> None:
        await self.wait_for("every broker caught up with the master", self.caught_up)

    # --- requests ----------------------------------------------------------------------------------

    async def create_topic(self, topic: str, queues: int = 4) -> None:
        """Create ``topic`` on the master, as mqadmin does, and on every follower at once: the slave
        synchronisation would copy it within 3..40 s (it learns its master at a registration)."""
        master = self.master()
        assert master is not None, "create topics once a master serves"
        fields = {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": queues, "writeQueueNums": queues,
                  "perm": 6, "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": "false"}
        response = await self.call(master, RequestCode.UPDATE_AND_CREATE_TOPIC, fields)
        assert response.code == ResponseCode.SUCCESS, response.remark
        for broker in self.brokers.values():
            if broker is not master:
                broker.topics.update(TopicConfig(topic, queues, queues, PermName.READ | PermName.WRITE))

    async def call(self, broker: BrokerController, code: int, fields: dict[str, object],
                   body: bytes | None = None, timeout_ms: float = 10_000) -> RemotingCommand:
        request = create_request(code, {k: str(v) for k, v in fields.items()}, body)
        return await self.client.invoke(broker.broker_addr, request, timeout_ms)

    async def send(self, broker: BrokerController, topic: str, body: bytes, queue_id: int = -1,
                   wait: bool = True, delay_level: int = 0, resend_busy: bool = True) -> RemotingCommand:
        """One send; answered SYSTEM_BUSY, the same message again (``resend_busy``), as a producer retries.

        A DLedger master answers SYSTEM_BUSY when no majority holds the entry within DLedger's ack wait (2.5 s),
        which a loaded machine can exceed; the entry may still be committed, so a body sent again may be stored
        twice (``resent`` names them).
        """
        properties = {"WAIT": str(wait).lower(), "UNIQ_KEY": codec.UniqueIdGenerator(b"\x7f\x00\x00\x01").next_id(),
                      "KEYS": body.decode()}
        if delay_level:
            properties["DELAY"] = str(delay_level)
        fields = {"a": "pg", "b": topic, "c": "TBW102", "d": 4, "e": queue_id, "f": 0,
                  "g": int(time.time() * 1000), "h": 0, "i": codec.properties_to_string(properties), "k": "false",
                  "m": "false"}
        answer = await self.call(broker, RequestCode.SEND_MESSAGE_V2, fields, body)
        for _ in range(RESENDS if resend_busy else 0):
            if answer.code != ResponseCode.SYSTEM_BUSY:
                break
            self.resent.add(body)
            answer = await self.call(broker, RequestCode.SEND_MESSAGE_V2, fields, body)
        return answer

    async def send_all(self, broker: BrokerController, topic: str, bodies: list[bytes],
                       chunk: int = 20) -> list[RemotingCommand]:
        """Send ``bodies`` in chunks of concurrent sends; every answer."""
        answers: list[RemotingCommand] = []
        for start in range(0, len(bodies), chunk):
            answers += await asyncio.gather(*(self.send(broker, topic, body) for body in bodies[start:start + chunk]))
        return answers

    async def pull_all(self, broker: BrokerController, topic: str, queues: int = 4) -> list[MessageExt]:
        """Every message of ``topic`` the broker serves, queue by queue, from offset 0."""
        messages: list[MessageExt] = []
        for queue_id in range(queues):
            offset = 0
            while True:
                fields = {"consumerGroup": "cg", "topic": topic, "queueId": queue_id, "queueOffset": offset,
                          "maxMsgNums": 32, "sysFlag": FLAG_SUBSCRIPTION, "commitOffset": 0,
                          "suspendTimeoutMillis": 0, "subscription": "*", "subVersion": 0, "expressionType": "TAG"}
                response = await self.call(broker, RequestCode.PULL_MESSAGE, fields)
                if response.code != ResponseCode.SUCCESS:
                    break
                found = codec.decode_store_records(response.body or b"")
                messages += found
                offset = int(response.ext_fields["nextBeginOffset"])
        return messages

    # --- files -------------------------------------------------------------------------------------

    def data_files(self, member_id: str) -> dict[str, bytes]:
        directory = self.store_dir(member_id) / f"dledger-{member_id}" / "data"
        return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.name.isdigit()}

    def consume_queue_files(self, member_id: str) -> dict[str, bytes]:
        root = self.store_dir(member_id) / "consumequeue"
        return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
