"""Our name server and broker in process on loopback, for the robustness tests, and a log watcher that keeps
every record a traceback rides on (a traceback in a server log means a bug in our code)."""
from __future__ import annotations

import logging
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from .child import child_env

from rocketmq_py import codec
from rocketmq_py.broker import BrokerConfig, BrokerController
from rocketmq_py.common.codes import RequestCode
from rocketmq_py.namesrv import NamesrvConfig, NamesrvController
from rocketmq_py.remoting import RemotingClient, RemotingCommand, create_request
from rocketmq_py.store import MessageStoreConfig


class TracebackWatcher(logging.Handler):
    """Collects the log records that carry a traceback, and counts WARNING lines per logger."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.tracebacks: list[str] = []
        self.warnings = 0

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info or record.stack_info:
            self.tracebacks.append(self.format(record))
        elif record.levelno >= logging.WARNING:
            self.warnings += 1

    def __enter__(self) -> "TracebackWatcher":
        logging.getLogger().addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        logging.getLogger().removeHandler(self)


class Servers:
    """A name server and a broker with small store files under ``root``; restartable on the same store."""

    def __init__(self, root: Path, **store_options) -> None:
        self.root = root
        self.store_options = store_options
        self.namesrv: NamesrvController | None = None
        self.broker: BrokerController | None = None

    def make_broker(self) -> BrokerController:
        assert self.namesrv is not None
        config = BrokerConfig(broker_name="broker-f", namesrv_addr=self.namesrv.address, listen_port=0,
                              bind_address="127.0.0.1", broker_ip1="127.0.0.1", broker_ip2="127.0.0.1",
                              fast_channel_enable=False)
        options = dict(mapped_file_size_commit_log=4 * 1024 * 1024, mapped_file_size_consume_queue=1000 * 20,
                       max_hash_slot_num=1000, max_index_num=4000)
        options.update(self.store_options)
        store = MessageStoreConfig(store_path_root_dir=str(self.root / "store"), **options)
        return BrokerController(config, store)

    async def start(self) -> "Servers":
        self.namesrv = NamesrvController(NamesrvConfig(listen_port=0, bind_address="127.0.0.1",
                                                       kv_config_path=str(self.root / "kv.json")))
        await self.namesrv.start()
        self.broker = self.make_broker()
        await self.broker.start()
        return self

    async def restart_broker(self) -> None:
        assert self.broker is not None
        await self.broker.shutdown()
        self.broker = self.make_broker()
        await self.broker.start()

    async def stop(self) -> None:
        if self.broker is not None:
            await self.broker.shutdown()
        if self.namesrv is not None:
            await self.namesrv.shutdown()

    @property
    def broker_addr(self) -> str:
        assert self.broker is not None
        return self.broker.broker_addr

    @property
    def namesrv_addr(self) -> str:
        assert self.namesrv is not None
        return self.namesrv.address


def send_fields(topic: str, queue_id: int = 0, group: str = "pg", **properties: str) -> dict[str, str]:
    """The extFields of a valid SEND_MESSAGE_V2."""
    props = {"WAIT": "true", "UNIQ_KEY": codec.UniqueIdGenerator(b"\x7f\x00\x00\x01").next_id(), **properties}
    return {"a": group, "b": topic, "c": "TBW102", "d": "4", "e": str(queue_id), "f": "0",
            "g": str(int(time.time() * 1000)), "h": "0", "i": codec.properties_to_string(props), "k": "false",
            "m": "false"}


def pull_fields(topic: str, queue_id: int, offset: int, group: str = "cg") -> dict[str, str]:
    """The extFields of a valid PULL_MESSAGE that does not suspend."""
    return {"consumerGroup": group, "topic": topic, "queueId": str(queue_id), "queueOffset": str(offset),
            "maxMsgNums": "32", "sysFlag": "4", "commitOffset": "0", "suspendTimeoutMillis": "0",
            "subscription": "*", "subVersion": "0", "expressionType": "TAG"}


async def call(client: RemotingClient, addr: str, code: int, fields: dict[str, str] | None = None,
               body: bytes | None = None, timeout_ms: float = 15000) -> RemotingCommand:
    return await client.invoke(addr, create_request(code, fields or {}, body), timeout_ms)


async def send_and_consume(addr: str, topic: str, body: bytes) -> None:
    """A fresh client sends ``body`` and pulls it back from the offset the broker gave; asserts both."""
    client = RemotingClient()
    try:
        sent = await call(client, addr, RequestCode.SEND_MESSAGE_V2, send_fields(topic), body)
        assert sent.code == 0, (sent.code, sent.remark)
        offset = int(sent.ext_fields["queueOffset"])
        pulled = await call(client, addr, RequestCode.PULL_MESSAGE, pull_fields(topic, 0, offset))
        assert pulled.code == 0, (pulled.code, pulled.remark)
        assert codec.decode_store_records(pulled.body)[0].body == body
    finally:
        await client.shutdown()


# --- a broker as its own process (`rocketmq-py broker -c broker.conf`) ------------------------------------


def write_broker_conf(path: Path, store: Path, port: int, **extra: object) -> Path:
    """A broker.conf for a broker on loopback with small store files (``extra`` in Java's key spelling)."""
    settings = {"brokerName": "proc-broker", "listenPort": port, "brokerIP1": "127.0.0.1", "brokerIP2": "127.0.0.1",
                "storePathRootDir": store, "mappedFileSizeCommitLog": 4 * 1024 * 1024,
                "mappedFileSizeConsumeQueue": 20_000, "maxHashSlotNum": 1000, "maxIndexNum": 4000,
                "namesrvAddr": "127.0.0.1:1", "fastChannelEnable": "false", **extra}
    path.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
    return path


def start_broker_process(conf: Path, log: Path) -> subprocess.Popen:
    with open(log, "ab") as out:
        return subprocess.Popen([sys.executable, "-m", "rocketmq_py", "broker", "-c", str(conf)], stdout=out,
                                stderr=subprocess.STDOUT, env=child_env())


def wait_for_port(port: int, proc: subprocess.Popen, log: Path, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            assert proc.poll() is None, f"the broker exited with {proc.returncode}:\n{log.read_text()}"
            assert time.monotonic() < deadline, f"the broker did not listen in {timeout_s} s:\n{log.read_text()}"
            time.sleep(0.1)


def stop_process(proc: subprocess.Popen, timeout_s: float = 60) -> int:
    """SIGTERM, then wait; kills it (and fails the caller's check) only when it does not stop."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode
