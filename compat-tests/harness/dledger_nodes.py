"""Members of a mixed DLedger group as processes: Java's (``Peer dledger-node``, DLedger 0.3.1.2's own
DLedgerServer with its file store) and ours (``python -m rocketmq_py.dledger``), and a client that finds
the leader and appends through it over the peer protocol.

    group = MixedGroup(workdir, kinds=["java", "java", "python"])
    group.start()                       # members n0.. in that order, on free ports
    leader = await group.wait_for_leader()
    acked = await group.append(leader, [b"..."])
    group.members["n0"].kill()          # kill -9
    group.logs()                        # every member's entries, read from its data files

Each member prints JSON lines (``started``, ``role``, ``stopped``) on stdout, kept in ``events``; its
log (DLedger's own, or ours) goes to ``<workdir>/<id>.log``.
"""
from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from rocketmq_py.dledger import DLedgerEntry, ResponseCode
from rocketmq_py.dledger.codes import RequestCode
from rocketmq_py.dledger.entry import BLANK_MAGIC_CODE, decode_entry
from rocketmq_py.dledger.errors import DLedgerError
from rocketmq_py.dledger.protocol import AppendEntryRequest, AppendEntryResponse, MetadataRequest, MetadataResponse
from rocketmq_py.dledger.rpc import build_request
from rocketmq_py.errors import RocketMQError
from rocketmq_py.remoting import RemotingClient

from .build import ensure_built
from .peers import PEER_MAIN, _client_env, _client_jvm
from .processes import JDK17_OPENS, STARTED, die_with_parent, free_port, tail

ROOT = Path(__file__).resolve().parent.parent.parent

#: Small files, so a test's entries span several of them (every member of a group must use the same).
DATA_FILE_SIZE = 256 * 1024
INDEX_FILE_SIZE = 32 * 4096
NODE_JVM_OPTS = ["-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-Xshare:auto", *JDK17_OPENS]
APPEND_TIMEOUT_MS = 10_000


def data_files(data_dir: Path) -> dict[str, bytes]:
    """A DLedger member's data files by name (the files' start offsets)."""
    return {p.name: p.read_bytes() for p in sorted(data_dir.iterdir()) if p.name.isdigit()}


def log_entries(data_dir: Path) -> list[DLedgerEntry]:
    """The entries of a DLedger member's data files, read as far as they hold whole entries (a live member may
    be writing the next one)."""
    entries: list[DLedgerEntry] = []
    if not data_dir.is_dir():
        return entries
    for name, data in data_files(data_dir).items():
        position = 0
        while position + 8 <= len(data):
            magic = int.from_bytes(data[position:position + 4], "big", signed=True)
            if magic == BLANK_MAGIC_CODE or magic == 0:
                break
            try:
                entry = decode_entry(data, position)
            except DLedgerError:
                return entries
            if entry.pos != int(name) + position or (entries and entry.index != entries[-1].index + 1):
                return entries
            entries.append(entry)
            position += entry.size
    return entries


class DLedgerNode:
    """One member process; ``kind`` is ``"java"`` or ``"python"``."""

    def __init__(self, kind: str, group: str, member_id: str, peers: str, workdir: Path,
                 preferred_leader: str | None = None, batch_push: bool = False) -> None:
        self.kind = kind
        self.batch_push = batch_push
        self.group = group
        self.member_id = member_id
        self.peers = peers
        self.workdir = workdir
        self.preferred_leader = preferred_leader
        self.proc: subprocess.Popen | None = None
        self.events: list[dict] = []
        self._events_changed = threading.Condition()
        self._log = None

    def __repr__(self) -> str:
        return f"{self.kind} {self.member_id}"

    @property
    def log_path(self) -> Path:
        return self.workdir / f"{self.member_id}.log"

    @property
    def data_dir(self) -> Path:
        return self.workdir / f"dledger-{self.member_id}" / "data"

    def _command(self) -> tuple[list[str], dict]:
        options = ["--group", self.group, "--id", self.member_id, "--peers", self.peers,
                   "--store", str(self.workdir), "--data-file-size", str(DATA_FILE_SIZE),
                   "--index-file-size", str(INDEX_FILE_SIZE)]
        if self.preferred_leader:
            options += ["--preferred-leader", self.preferred_leader]
        if self.batch_push:
            options.append("--batch-push")
        if self.kind == "java":
            build = ensure_built()
            return [*_client_jvm(build, NODE_JVM_OPTS), PEER_MAIN, "dledger-node", *options], _client_env()
        return [sys.executable, "-m", "rocketmq_py.dledger", *options], dict(os.environ, PYTHONPATH=str(ROOT))

    def start(self) -> DLedgerNode:
        self.workdir.mkdir(parents=True, exist_ok=True)
        command, env = self._command()
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(die_with_parent(command), stdout=subprocess.PIPE, stderr=self._log, env=env,
                                     stdin=subprocess.DEVNULL, text=True, cwd=self.workdir)
        STARTED.append(self)
        threading.Thread(target=self._read_events, args=(self.proc,), daemon=True).start()
        return self

    def _read_events(self, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.strip()
            if line.startswith("{"):
                with self._events_changed:
                    self.events.append(json.loads(line))
                    self._events_changed.notify_all()

    def wait_event(self, event: str, timeout_s: float = 120.0) -> dict:
        deadline = time.monotonic() + timeout_s
        with self._events_changed:
            while True:
                found = [e for e in self.events if e.get("event") == event]
                if found:
                    return found[-1]
                if not self.is_running():
                    raise RuntimeError(f"{self} exited before {event}:\n{tail(self.log_path, 60)}")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise RuntimeError(f"{self} printed no {event} within {timeout_s} s:\n{tail(self.log_path, 60)}")
                self._events_changed.wait(min(remaining, 1.0))

    def is_running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """kill -9."""
        if self.is_running():
            assert self.proc is not None
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM (both kinds flush their files and write their checkpoint) and wait."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._log is not None:
            self._log.close()
        return self.proc.returncode

    def log_tail(self, lines: int = 40) -> str:
        return f"===== {self} at {self.workdir} =====\n{tail(self.log_path, lines)}"

    # --- the files ---------------------------------------------------------------------------

    def data_files(self) -> dict[str, bytes]:
        return data_files(self.data_dir)

    def log_entries(self) -> list[DLedgerEntry]:
        """The entries of the member's data files, read as far as they hold whole entries."""
        return log_entries(self.data_dir)


class MixedGroup:
    def __init__(self, workdir: Path, kinds: list[str], group: str = "mixed",
                 preferred_leader: str | None = None, batch_push: bool = False) -> None:
        self.workdir = workdir
        self.group = group
        ids = [f"n{i}" for i in range(len(kinds))]
        self.peers = ";".join(f"{member_id}-127.0.0.1:{free_port()}" for member_id in ids)
        self.addresses = {member_id: address for member_id, _, address in
                          (item.partition("-") for item in self.peers.split(";"))}
        self.members = {member_id: DLedgerNode(kind, group, member_id, self.peers, workdir / member_id,
                                               preferred_leader, batch_push)
                        for member_id, kind in zip(ids, kinds)}
        self.client = RemotingClient()

    def start(self, *member_ids: str) -> None:
        """Start the members (all by default) and wait until each has its peer port open."""
        started = [self.members[m].start() for m in (member_ids or list(self.members))]
        for member in started:
            member.wait_event("started")

    def stop_all(self) -> None:
        for member in self.members.values():
            member.stop()

    async def close(self) -> None:
        await self.client.shutdown()

    def running(self) -> list[str]:
        return [m for m, node in self.members.items() if node.is_running()]

    # --- the peer protocol, as a client ------------------------------------------------------

    async def metadata(self, member_id: str) -> MetadataResponse | None:
        request = MetadataRequest(group=self.group, remote_id=member_id)
        try:
            answer = await self.client.invoke(self.addresses[member_id], build_request(RequestCode.METADATA, request),
                                              3000)
        except (RocketMQError, OSError):
            return None
        return MetadataResponse.decode(answer.body)

    async def leader(self) -> str | None:
        """The member that says it leads and that every other running member names as leader."""
        views = {m: await self.metadata(m) for m in self.running()}
        claims = [m for m, view in views.items() if view is not None and view.leader_id == m]
        if len(claims) != 1:
            return None
        leader = claims[0]
        if all(view is not None and view.leader_id == leader for view in views.values()):
            return leader
        return None

    async def wait_for_leader(self, deadline_s: float = 120.0, not_: str | None = None,
                              only: str | None = None) -> str:
        """The settled leader, once there is one (other than ``not_``; ``only`` that member)."""
        loop = asyncio.get_running_loop()
        give_up = loop.time() + deadline_s
        while True:
            leader = await self.leader()
            if leader is not None and leader != not_ and (only is None or leader == only):
                return leader
            if loop.time() > give_up:
                raise AssertionError(f"no settled leader within {deadline_s} s among {self.running()}")
            await asyncio.sleep(0.2)

    async def append_one(self, leader: str, body: bytes) -> AppendEntryResponse:
        request = AppendEntryRequest(group=self.group, remote_id=leader, body=body)
        try:
            answer = await self.client.invoke(self.addresses[leader], build_request(RequestCode.APPEND, request),
                                              APPEND_TIMEOUT_MS)
        except (RocketMQError, OSError) as error:
            return AppendEntryResponse(code=ResponseCode.NETWORK_ERROR, group=str(error))
        return AppendEntryResponse.decode(answer.body)

    async def append(self, leader: str, bodies: list[bytes], window: int = 32) -> dict[int, bytes]:
        """Append ``bodies`` through ``leader``, ``window`` at a time; the acknowledged ones by index.

        A refused or failed append is not retried here (the caller counts them)."""
        acked: dict[int, bytes] = {}
        for start in range(0, len(bodies), window):
            chunk = bodies[start:start + window]
            answers = await asyncio.gather(*(self.append_one(leader, body) for body in chunk))
            for body, answer in zip(chunk, answers):
                if answer.response_code is ResponseCode.SUCCESS:
                    acked[answer.index] = body
        return acked
