"""A DLedger group of brokers as processes, Java 4.9.x brokers and ours mixed (issue 31, phase 2).

``DLedgerBrokerGroup(namesrv_addr, workdir, {"n0": "java", "n1": "java", "n2": "python"})`` writes each
member's ``broker.conf`` (the harness broker's keys plus ``enableDLegerCommitLog`` and the group's
``dLeger*`` keys), ``start()`` starts every member without waiting for a registration (a DLedger broker
registers only once its member follows or leads), ``master()`` reads the name server's brokerId 0 of the
group, ``data_digests(member)`` the member's DLedger data files by name, ``log_entries(member)`` the entries
in them. With ``partitionable=True`` the members reach each other through the relays of
:class:`~harness.link_proxy.LinkProxies` (``group.links``), whose ``cut(member)`` and ``heal()`` partition
the group.
"""
from __future__ import annotations

import hashlib
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rocketmq_py.common.codes import RequestCode
from rocketmq_py.common.route import ClusterInfo
from rocketmq_py.dledger import DLedgerEntry

from . import ha, wire
from .dledger_nodes import log_entries
from .link_proxy import LinkProxies
from .peers import run_peer
from .processes import JavaBroker, free_port
from .py_servers import PythonBroker

BROKER_NAME = "RaftNode00"
CLUSTER = "RaftCluster"


class JavaDLedgerBroker(JavaBroker):
    """A Java broker of a DLedger group: ready once booted and listening (it registers after its election)."""

    def _ready(self) -> bool:
        return self._booted() and wire.port_open("127.0.0.1", self.port)


class PythonDLedgerBroker(PythonBroker):
    def start(self, timeout_s: float = 90.0) -> PythonDLedgerBroker:
        self.launch(self.config(), lambda: wire.port_open("127.0.0.1", self.port), timeout_s)
        self.check_fronts()
        return self


class DLedgerBrokerGroup:
    def __init__(self, namesrv_addr: str, workdir: Path, kinds: dict[str, str], partitionable: bool = False,
                 **keys: object) -> None:
        """``keys``: more broker keys for every member (``preferredLeaderId``)."""
        self.namesrv_addr = namesrv_addr
        self.workdir = Path(workdir)
        self.kinds = kinds
        self.peer_ports = {member: free_port() for member in kinds}
        self.links = LinkProxies(self.peer_ports).start() if partitionable else None
        self.more_keys = keys
        self.members: dict[str, JavaDLedgerBroker | PythonDLedgerBroker] = {}

    def peers_of(self, member_id: str) -> str:
        """``member_id``'s ``dLegerPeers``: every member's peer port, or its relay to them when partitionable."""
        if self.links is not None:
            return self.links.peers_of(member_id)
        return ";".join(f"{member}-127.0.0.1:{port}" for member, port in self.peer_ports.items())

    def keys(self, member_id: str) -> dict[str, object]:
        return {"enableDLegerCommitLog": "true", "dLegerGroup": BROKER_NAME, "dLegerPeers": self.peers_of(member_id),
                "dLegerSelfId": member_id, **self.more_keys}

    def start(self) -> None:
        """Start every member at once (each boots on its own; the group elects once a majority is up)."""
        for member_id, kind in self.kinds.items():
            workdir = self.workdir / member_id
            workdir.mkdir(parents=True, exist_ok=True)
            if kind == "java":
                self.members[member_id] = JavaDLedgerBroker(self.namesrv_addr, workdir=workdir,
                                                            broker_name=BROKER_NAME, cluster=CLUSTER,
                                                            extra_config=self.keys(member_id))
            else:
                self.members[member_id] = PythonDLedgerBroker(self.namesrv_addr, workdir, BROKER_NAME, CLUSTER,
                                                              **self.keys(member_id))
        with ThreadPoolExecutor(len(self.members)) as starting:
            for started in [starting.submit(member.start) for member in self.members.values()]:
                started.result()

    def stop(self) -> None:
        """Stop every member at once (a Java broker's shutdown hooks take seconds), then the relays."""
        try:
            with ThreadPoolExecutor(max(1, len(self.members))) as stopping:
                for stopped in [stopping.submit(member.stop) for member in self.members.values()]:
                    stopped.result()
        finally:
            if self.links is not None:
                self.links.close()

    def kill(self, deadline_s: float = 60.0) -> None:
        """kill -9 of every member (a Java broker's clean shutdown takes seconds), then wait until the name
        server, which sees their connections close, lists none of them (the next group reuses the name)."""
        for member in self.members.values():
            member.kill()
        give_up = time.monotonic() + deadline_s
        while self.registered():
            assert time.monotonic() < give_up, f"the name server still lists {self.registered()}"
            time.sleep(0.1)

    def __enter__(self) -> DLedgerBrokerGroup:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def registered(self) -> dict[int, str]:
        """brokerId -> address of the group's brokers on the name server."""
        info = ClusterInfo.decode(wire.cluster_info(self.namesrv_addr))
        data = info.broker_addr_table.get(BROKER_NAME)
        return dict(data.broker_addrs) if data is not None else {}

    def master(self) -> str | None:
        return self.registered().get(0)

    def wait_for_master(self, deadline_s: float = 120.0, other_than: str | None = None,
                        member: str | None = None) -> tuple[str, float]:
        """The master's address once the name server has one (not ``other_than``; ``member``'s when given), and
        the seconds it took."""
        started = time.monotonic()
        while True:
            try:
                master = self.master()
            except (OSError, RuntimeError):
                master = None
            if (master is not None and master != other_than
                    and (member is None or master == self.members[member].addr)):
                return master, time.monotonic() - started
            if time.monotonic() - started > deadline_s:
                raise AssertionError(f"no master of {BROKER_NAME} registered within {deadline_s} s")
            time.sleep(0.1)

    def create_topic(self, topic: str, queues: int = 4) -> None:
        """Create ``topic`` on the master (``mqadmin updateTopic -b``; a follower refuses, as a slave does, and
        copies the master's topics every 10 s) and wait for its route. A topic that only a send creates takes
        TBW102's route, which holds every broker of the name server with auto-creation on: the other brokers of
        a shared name server would store some of its messages."""
        master = self.master()
        assert master is not None, f"no master of {BROKER_NAME} to create {topic} on"
        ha.create_topic(master, topic, queues)
        ha.wait_for_route(self.namesrv_addr, topic)

    def stored(self, topic: str, queues: int = 4) -> int:
        """How many messages of ``topic`` the master holds (the sum of its queues' max offsets): a send answered
        with an error may be stored too, and its retry then stores it twice."""
        master = self.master()
        assert master is not None
        total = 0
        for queue_id in range(queues):
            header, _ = wire.request(master, RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": str(queue_id)})
            assert header.get("code") == 0, header
            total += int(header["extFields"]["offset"])
        return total

    def consume_stored(self, topic: str, deadline_s: float) -> tuple[int, list[dict], dict]:
        """Read everything the master holds of ``topic`` with the Java push consumer of a new group: how many it
        holds (:meth:`stored`), the consumer's line of each message and its last line (``count``, ``timedOut``).
        Reading exactly what is stored, not what was acknowledged, counts the copies of retried sends."""
        stored = self.stored(topic)
        lines = run_peer("consume", namesrv=self.namesrv_addr, topic=topic, group=f"dledger_cg_{uuid.uuid4().hex[:6]}",
                         count=stored, timeout_ms=int(deadline_s * 1000), timeout=deadline_s + 60)
        return stored, lines[:-1], lines[-1]

    def member_at(self, address: str) -> str:
        return next(m for m, member in self.members.items() if member.addr == address)

    def data_dir(self, member_id: str) -> Path:
        return self.members[member_id].store_dir / f"dledger-{member_id}" / "data"

    def log_entries(self, member_id: str) -> list[DLedgerEntry]:
        return log_entries(self.data_dir(member_id))

    def data_digests(self, member_id: str) -> dict[str, str]:
        directory = self.data_dir(member_id)
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir())
                if p.name.isdigit()}

    def data_files_equal(self) -> bool:
        """Whether every member's DLedger data files are byte-equal (and there are some)."""
        digests = [self.data_digests(member) for member in self.members]
        return bool(digests[0]) and all(d == digests[0] for d in digests)
