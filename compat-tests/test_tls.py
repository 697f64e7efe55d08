"""TLS against the official Java 4.9.8 processes and clients.

* A Java name server and broker in TLS enforcing mode (certificate made here, PKCS#8 key, test mode off):
  the Python producer with ``use_tls=True`` sends, a Java push consumer with ``tls.enable`` reads every
  message back unchanged; a plain Python producer is refused.
* The session's Java servers run in Java's defaults (permissive, test mode: a self-signed certificate
  that Netty makes at start, which works on JDK 17 with the BouncyCastle jars on the server classpath):
  a TLS Python producer and a plain Java consumer share them.
* The official NettyRemotingClient with TLS calls our RemotingServer in enforcing mode.
* Our name server and broker processes, TLS enforcing through Java's ``tls.*`` settings in their
  environment: the Java producer and consumer with TLS go through them.
"""
from __future__ import annotations

import asyncio
import base64
from pathlib import Path

import pytest
from harness import backend, run_peer, unique_name, wire
from harness.peers import CLIENT_JVM_OPTS
from harness.processes import JavaBroker, JavaNameServer, free_broker_port, free_port
from harness.py_servers import OurServer, broker_workers_key

from rocketmq_py.client.producer import AsyncProducer, SendStatus
from rocketmq_py.common.message import Message
from rocketmq_py.errors import RocketMQError
from rocketmq_py.remoting import RemotingServer, RemotingServerConfig, TlsConfig, TlsMode, create_response
from rocketmq_py.remoting.tls import generate_self_signed_certificate

CONSUME_TIMEOUT_MS = 60000
#: A Java client with TLS: ``tls.enable`` makes ClientConfig.useTLS true; test mode (Java's default) trusts any server.
JAVA_TLS_CLIENT = [*CLIENT_JVM_OPTS, "-Dtls.enable=true"]


@pytest.fixture(scope="module")
def server_cert(tmp_path_factory) -> tuple[str, str]:
    directory = tmp_path_factory.mktemp("tls-cert")
    cert, key = directory / "server.crt", directory / "server.key"
    generate_self_signed_certificate(cert, key, common_name="rocketmq-compat")
    assert key.read_text().startswith("-----BEGIN PRIVATE KEY-----")  # PKCS#8: what Java's TlsHelper reads
    return str(cert), str(key)


def _java_server_tls_opts(cert: str, key: str, workdir: Path) -> list[str]:
    return ["-Dtls.server.mode=enforcing", "-Dtls.test.mode.enable=false", "-Dtls.enable=true",
            f"-Dtls.server.certPath={cert}", f"-Dtls.server.keyPath={key}",
            f"-Dtls.config.file={workdir / 'no-tls.properties'}"]


@pytest.fixture(scope="module")
def java_tls_cluster(java_build, server_cert, tmp_path_factory):
    if backend.backend_name() != "jvm":
        pytest.skip("the TLS cluster needs JVM options: it runs on the jvm backend")
    cert, key = server_cert
    ns_dir, broker_dir = tmp_path_factory.mktemp("tls-namesrv"), tmp_path_factory.mktemp("tls-broker")
    namesrv = JavaNameServer(build=java_build, workdir=ns_dir, jvm_opts=_java_server_tls_opts(cert, key, ns_dir))
    namesrv.start()
    broker = JavaBroker(namesrv, build=java_build, workdir=broker_dir, broker_name="broker-tls",
                        jvm_opts=_java_server_tls_opts(cert, key, broker_dir))
    try:
        broker.start()
    except BaseException:
        namesrv.stop()
        raise
    yield namesrv, broker
    broker.stop()
    namesrv.stop()


def _message(topic: str, i: int) -> Message:
    return Message(topic, f"tls-{i}-".encode() + bytes(range(256)) * (i % 3), tags="TagTLS",
                   keys=[f"key-{i}"], properties={"index": str(i), "user.prop": "värde"})


def _consume(namesrv: str, topic: str, count: int, jvm_opts) -> list[dict]:
    lines = run_peer("consume", namesrv=namesrv, topic=topic, group=unique_name("cg"), count=count,
                     timeout_ms=CONSUME_TIMEOUT_MS, timeout=CONSUME_TIMEOUT_MS / 1000 + 60, jvm_opts=jvm_opts)
    done = lines[-1]
    assert done.get("done") and not done["timedOut"], f"the Java consumer got {done.get('count')} of {count}"
    return lines[:-1]


def _assert_all_arrived(sent: list[Message], got: list[dict]) -> None:
    by_id = {line["msgId"]: line for line in got}
    assert len(by_id) == len(sent)
    for message in sent:
        line = by_id[message.properties["UNIQ_KEY"]]
        assert base64.b64decode(line["bodyBase64"]) == message.body
        assert line["tags"] == message.tags and line["keys"] == message.keys
        assert line["properties"]["index"] == message.properties["index"]
        assert line["properties"]["user.prop"] == "värde"


async def _send_with_tls(namesrv: str, topic: str, count: int, **options) -> tuple[list[Message], list[bool]]:
    """Send ``count`` messages with a TLS producer; also say whether each connection it used was TLS."""
    producer = AsyncProducer(unique_name("pg"), namesrv_addr=namesrv, use_tls=True, **options)
    await producer.start()
    try:
        sent = [_message(topic, i) for i in range(count)]
        for message in sent[: count // 2]:
            assert (await producer.send(message)).send_status is SendStatus.SEND_OK
        results = await asyncio.gather(*(producer.send(message) for message in sent[count // 2:]))
        assert {r.send_status for r in results} == {SendStatus.SEND_OK}
        instance = producer.instance
        assert instance is not None
        broker_addrs = sorted({addr for r in results
                               for addr in instance.broker_addrs.get(r.message_queue.broker_name, {}).values()})
        connections = [instance.remoting.connection(addr) for addr in (namesrv, *broker_addrs)]
        return sent, [c is not None and c.tls for c in connections]
    finally:
        await producer.shutdown()


# --- Java servers ------------------------------------------------------------------------------------


async def test_python_tls_producer_to_java_tls_consumer_through_enforcing_java_servers(java_tls_cluster):
    namesrv, _ = java_tls_cluster
    topic = unique_name("TlsTopic")
    sent, tls_used = await _send_with_tls(namesrv.addr, topic, 30)
    assert tls_used == [True, True]  # the name server and the broker
    got = await asyncio.to_thread(_consume, namesrv.addr, topic, len(sent), JAVA_TLS_CLIENT)
    _assert_all_arrived(sent, got)


async def test_plain_python_producer_is_refused_by_enforcing_java_servers(java_tls_cluster):
    namesrv, _ = java_tls_cluster
    producer = AsyncProducer(unique_name("plain_pg"), namesrv_addr=namesrv.addr, use_tls=False, send_msg_timeout=2000)
    await producer.start()
    try:
        with pytest.raises(RocketMQError):
            await producer.send(Message(unique_name("Never"), b"plain"))
    finally:
        await producer.shutdown()


async def test_python_producer_checks_the_java_broker_certificate(java_tls_cluster, server_cert):
    namesrv, _ = java_tls_cluster
    cert, _ = server_cert
    topic = unique_name("Checked")
    sent, tls_used = await _send_with_tls(
        namesrv.addr, topic, 4, tls_config=TlsConfig(client_auth_server=True, client_trust_cert_path=cert))
    assert tls_used == [True, True]
    # A Java consumer that checks the certificate too (test mode off, authServer on).
    checking = [*JAVA_TLS_CLIENT, "-Dtls.test.mode.enable=false", "-Dtls.client.authServer=true",
                f"-Dtls.client.trustCertPath={cert}", "-Dtls.config.file=/nonexistent/tls.properties"]
    _assert_all_arrived(sent, await asyncio.to_thread(_consume, namesrv.addr, topic, len(sent), checking))


async def test_default_java_servers_take_tls_and_plain_clients_together(java_namesrv, java_broker):
    topic = unique_name("Permissive")
    sent, tls_used = await _send_with_tls(java_namesrv.addr, topic, 10)
    assert tls_used == [True, True]
    got = await asyncio.to_thread(_consume, java_namesrv.addr, topic, len(sent), CLIENT_JVM_OPTS)  # plain
    _assert_all_arrived(sent, got)


# --- the Java remoting client against our server ----------------------------------------------------

ECHO_CODE = 1000


@pytest.fixture
async def tls_echo_server(server_cert):
    cert, key = server_cert
    server = RemotingServer(config=RemotingServerConfig(tls=TlsConfig(
        server_mode=TlsMode.ENFORCING, server_cert_path=cert, server_key_path=key)))

    async def echo(ctx, request):
        return create_response(request, remark=request.remark, ext_fields=request.ext_fields, body=request.body)

    server.processors.register(ECHO_CODE, echo)
    await server.start()
    yield server
    await server.shutdown()


@pytest.mark.parametrize("serialize", ["JSON", "ROCKETMQ"])
async def test_java_tls_client_calls_our_enforcing_server(tls_echo_server, serialize):
    body = bytes(range(256)) * 64
    args = ["--addr", tls_echo_server.address, "--code", str(ECHO_CODE), "--serialize", serialize,
            "--remark", "über TLS", "--ext", "k=v", "--body-base64", base64.b64encode(body).decode()]
    for mode in ("sync", "async"):
        [response] = await asyncio.to_thread(run_peer, "remoting-call", *args, "--mode", mode, "--tls")
        assert response["code"] == 0 and response["remark"] == "über TLS" and response["extFields"] == {"k": "v"}
        assert base64.b64decode(response["bodyBase64"]) == body
        assert response["serializeType"] == serialize
    assert all(c.tls for c in tls_echo_server.connections)
    # Without TLS the same client is turned away, and the server goes on.
    plain = await asyncio.to_thread(run_peer, "remoting-call", *args, "--mode", "sync", "--timeout-ms", "3000",
                                    check=False)
    assert any("error" in line for line in plain)
    [again] = await asyncio.to_thread(run_peer, "remoting-call", *args, "--mode", "sync", "--tls")
    assert again["code"] == 0


# --- our servers, Java clients ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def our_tls_cluster(server_cert, tmp_path_factory):
    cert, key = server_cert
    root = tmp_path_factory.mktemp("our-tls")
    tls_env = {"tls.server.mode": "enforcing", "tls.server.certPath": cert, "tls.server.keyPath": key,
               "tls.enable": "true", "tls.config.file": str(root / "no-tls.properties")}
    ns_port, broker_port = free_port(), free_broker_port()
    ns_addr, broker_addr = f"127.0.0.1:{ns_port}", f"127.0.0.1:{broker_port}"
    namesrv, broker = OurServer("namesrv", root, env=tls_env), OurServer("broker", root, env=tls_env)
    store = root / "store"
    broker_config = {
        "brokerName": "pybroker-tls", "namesrvAddr": ns_addr, "listenPort": broker_port,
        "brokerIP1": "127.0.0.1", "brokerIP2": "127.0.0.1", "storePathRootDir": store,
        "storePathCommitLog": store / "commitlog", "autoCreateTopicEnable": True,
        "mappedFileSizeCommitLog": 64 * 1024 * 1024, "mappedFileSizeConsumeQueue": 30000 * 20,
        **broker_workers_key(),
    }
    namesrv.launch({"listenPort": ns_port, "kvConfigPath": root / "kv.json"},
                   lambda: wire.cluster_info(ns_addr, timeout=1.0, tls=True) is not None)
    try:
        broker.launch(broker_config, lambda: broker_addr.encode() in wire.cluster_info(ns_addr, timeout=1.0, tls=True)
                      and wire.broker_runtime_info_ready(broker_addr, timeout=1.0, tls=True))
    except BaseException:
        namesrv.stop()
        raise
    yield ns_addr, broker_addr
    assert broker.stop() == 0
    assert namesrv.stop() == 0


def test_java_tls_clients_through_our_enforcing_name_server_and_broker(our_tls_cluster):
    ns_addr, broker_addr = our_tls_cluster
    with pytest.raises(ConnectionError):  # a plain probe is closed at once
        wire.cluster_info(ns_addr, timeout=2.0)
    topic, count = unique_name("OurTls"), 20
    sent = run_peer("produce", namesrv=ns_addr, topic=topic, count=count, tags="TagOurs", keys="k-{i}",
                    prop=["origin=java"], body="java-over-tls-{i}", jvm_opts=JAVA_TLS_CLIENT)
    assert len(sent) == count and {line["status"] for line in sent} == {"SEND_OK"}
    got = _consume(ns_addr, topic, count, JAVA_TLS_CLIENT)
    assert sorted(base64.b64decode(line["bodyBase64"]) for line in got) == sorted(
        f"java-over-tls-{i}".encode() for i in range(count))
    assert {line["tags"] for line in got} == {"TagOurs"}
    assert {line["properties"]["origin"] for line in got} == {"java"}
    assert {line["msgId"] for line in got} == {line["msgId"] for line in sent}
    assert {line["brokerName"] for line in sent} == {"pybroker-tls"}
    # A Java producer without TLS is turned away by our enforcing name server.
    refused = run_peer("produce", namesrv=ns_addr, topic=topic, count=1, timeout_ms=3000, retries=0,
                       jvm_opts=CLIENT_JVM_OPTS, check=False, timeout=120)
    assert any("error" in line for line in refused)
