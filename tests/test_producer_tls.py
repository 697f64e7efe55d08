"""The producer with TLS against our name server and broker running TLS enforcing mode.

Everything is set as Java's ``tls.*`` system properties would be, through the
environment: ``tls.server.mode`` and the certificate for the servers,
``tls.enable`` for every client (the broker's registration with the name
server, the producer, the raw client that reads the messages back).
"""
from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from support.broker import BrokerEnv
from support.tls import make_key_pair

from rocketmq_py import codec
from rocketmq_py.client.producer import AsyncProducer, Producer, SendStatus
from rocketmq_py.common.codes import ResponseCode
from rocketmq_py.common.message import Message
from rocketmq_py.errors import RocketMQError
from rocketmq_py.remoting import TlsConfig, TlsMode


@pytest.fixture
def server_cert(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    pair = make_key_pair(tmp_path, "broker")
    monkeypatch.setenv("TLS_CONFIG_FILE", str(tmp_path / "no-such.properties"))
    monkeypatch.setenv("tls.server.mode", "enforcing")
    monkeypatch.setenv("tls.server.certPath", pair.cert)
    monkeypatch.setenv("tls.server.keyPath", pair.key)
    monkeypatch.setenv("tls.enable", "true")
    return pair


async def test_producer_sends_over_tls_to_name_server_and_broker(server_cert, tmp_path: Path) -> None:
    async with BrokerEnv(tmp_path) as env:
        assert env.namesrv is not None and env.broker is not None
        assert env.namesrv.server.tls_mode is TlsMode.ENFORCING and env.broker.server.tls_mode is TlsMode.ENFORCING
        producer = AsyncProducer("tls_pg", namesrv_addr=env.namesrv.address)
        assert producer.config.use_tls  # from tls.enable
        await producer.start()
        try:
            bodies = [f"secret-{i}".encode() * (i + 1) for i in range(20)]
            results = [await producer.send(Message("TLS_TOPIC", body, tags="T")) for body in bodies]
            assert {r.send_status for r in results} == {SendStatus.SEND_OK}
            remoting = producer.instance.remoting
            for addr in (env.namesrv.address, env.addr):
                connection = remoting.connection(addr)
                assert connection is not None and connection.tls, addr
        finally:
            await producer.shutdown()
        stored: dict[bytes, int] = {}
        for queue_id in {r.message_queue.queue_id for r in results}:
            found = await env.pull("TLS_TOPIC", queue_id, 0)
            assert found.code == ResponseCode.SUCCESS
            stored.update({m.body: queue_id for m in codec.decode_store_records(found.body or b"")})
        assert sorted(stored) == sorted(bodies)
        assert all(c.tls for c in env.broker.server.connections)


async def test_blocking_producer_sends_from_its_thread_over_tls(server_cert, tmp_path: Path) -> None:
    """The blocking send from the calling thread (client/producer/direct.py) makes its own TLS connection."""
    async with BrokerEnv(tmp_path) as env:
        assert env.namesrv is not None and env.broker is not None
        producer = Producer("tls_blocking_pg", namesrv_addr=env.namesrv.address,
                            tls_config=TlsConfig(client_auth_server=True, client_trust_cert_path=server_cert.cert))
        loop = asyncio.get_running_loop()
        with ThreadPoolExecutor(1) as caller:
            await loop.run_in_executor(caller, producer.start)
            try:
                bodies = [f"blocking-{i}".encode() for i in range(10)]
                for body in bodies:
                    result = await loop.run_in_executor(caller, producer.send, Message("TLS_TOPIC", body))
                    assert result.send_status is SendStatus.SEND_OK
                connections = list(env.broker.server.connections)
            finally:
                await loop.run_in_executor(caller, producer.shutdown)
        assert len(connections) == 2 and all(c.tls for c in connections)  # the loop's, and the caller's own
        found = await env.pull("TLS_TOPIC", result.message_queue.queue_id, 0)
        assert found.code == ResponseCode.SUCCESS and bodies[-1] in {
            m.body for m in codec.decode_store_records(found.body or b"")}


async def test_plain_producer_cannot_reach_an_enforcing_cluster(server_cert, tmp_path: Path) -> None:
    async with BrokerEnv(tmp_path) as env:
        assert env.namesrv is not None
        plain = AsyncProducer("plain_pg", namesrv_addr=env.namesrv.address, use_tls=False,
                              send_msg_timeout=1500)
        await plain.start()
        try:
            with pytest.raises(RocketMQError):
                await plain.send(Message("TLS_TOPIC", b"never"))
        finally:
            await plain.shutdown()
        # A producer with its own TLS settings, checking the broker's certificate, gets through.
        checked = AsyncProducer("checked_pg", namesrv_addr=env.namesrv.address, use_tls=True,
                                tls_config=TlsConfig(client_auth_server=True, client_trust_cert_path=server_cert.cert))
        await checked.start()
        try:
            assert (await checked.send(Message("TLS_TOPIC", b"checked"))).send_status is SendStatus.SEND_OK
        finally:
            await checked.shutdown()


async def test_producer_with_bad_tls_settings_does_not_start(tmp_path: Path) -> None:
    producer = AsyncProducer("bad_tls_pg", namesrv_addr="127.0.0.1:1", use_tls=True,
                             tls_config=TlsConfig(client_auth_server=True,
                                                  client_trust_cert_path=str(tmp_path / "missing.pem")))
    with pytest.raises(RocketMQError, match="trustCertPath"):
        await producer.start()
