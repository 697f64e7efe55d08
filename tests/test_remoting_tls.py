"""TLS in the remoting layer: enforcing and permissive servers, TLS and plain clients, certificates and settings.

Every scenario runs on asyncio's loop and on uvloop (their SSL transports
differ). The certificates are made here, with the ``cryptography`` package
or else the ``openssl`` command.
"""
from __future__ import annotations

import asyncio
import socket
import ssl
import sys
from pathlib import Path
from typing import Awaitable, Callable

import pytest
from support.cluster import wait_until
from support.remoting import CALL_BACK, CLIENT_CHECK, ECHO, ServerState, build_processors
from support.tls import KeyPair, make_key_pair

from rocketmq_py.errors import (
    RemotingConnectError,
    RemotingSendRequestError,
    TlsConfigError,
    TlsHandshakeError,
)
from rocketmq_py.remoting import (
    ProcessorTable,
    RemotingClient,
    RemotingClientConfig,
    RemotingCommand,
    RemotingServer,
    RemotingServerConfig,
    RequestContext,
    create_request,
    create_response,
)
from rocketmq_py.remoting.tls import (
    ClientAuth,
    TlsConfig,
    TlsMode,
    generate_self_signed_certificate,
    read_properties,
    tls_enabled_from_env,
)

LOOPS = ["asyncio", "uvloop"]


def run(loop_kind: str, scenario: Callable[[], Awaitable[None]], timeout_s: float = 30.0) -> None:
    if loop_kind == "uvloop":
        uvloop = pytest.importorskip("uvloop")
        loop = uvloop.new_event_loop()
    else:
        loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(asyncio.wait_for(scenario(), timeout_s))
    finally:
        loop.close()


# --- certificates -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, KeyPair]:
    directory = tmp_path_factory.mktemp("tls")
    return {name: make_key_pair(directory, name) for name in ("server", "client", "stranger")}


def server_tls(certs: dict[str, KeyPair], mode: TlsMode, **extra: object) -> TlsConfig:
    return TlsConfig(server_mode=mode, server_cert_path=certs["server"].cert, server_key_path=certs["server"].key,
                     **extra)  # type: ignore[arg-type]


def tls_client(tls: TlsConfig | None = None, processors: ProcessorTable | None = None) -> RemotingClient:
    return RemotingClient(processors, config=RemotingClientConfig(use_tls=True, tls=tls or TlsConfig()))


def plain_client() -> RemotingClient:
    return RemotingClient(config=RemotingClientConfig(use_tls=False))


async def start_server(tls: TlsConfig, **config: object) -> tuple[RemotingServer, ServerState]:
    state = ServerState()
    server_config = RemotingServerConfig(tls=tls, shutdown_timeout_seconds=2.0, **config)  # type: ignore[arg-type]
    server = RemotingServer(processors=build_processors(state), config=server_config)
    state.server = server
    await server.start()
    return server, state


async def echo(client: RemotingClient, server: RemotingServer, body: bytes = b"payload") -> RemotingCommand:
    response = await client.invoke(server.address, create_request(ECHO, {"k": "v"}, body, remark="r"), 5000)
    assert (response.code, response.ext_fields, response.body, response.remark) == (0, {"k": "v"}, body, "r")
    return response


async def raw_exchange(port: int, data: bytes, timeout_s: float = 5.0) -> bytes:
    """Send ``data`` on a bare TCP connection and read until the server closes it."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        return await asyncio.wait_for(reader.read(), timeout_s)
    except ConnectionResetError:
        return b""
    finally:
        writer.close()


# --- enforcing -----------------------------------------------------------------------------------


@pytest.mark.parametrize("loop_kind", LOOPS)
def test_enforcing_server_serves_tls_clients(loop_kind: str, certs: dict[str, KeyPair]) -> None:
    async def scenario() -> None:
        server, _ = await start_server(server_tls(certs, TlsMode.ENFORCING))

        async def check(ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
            return create_response(request, 0, "ok")

        client_processors = ProcessorTable()
        client_processors.register(CLIENT_CHECK, check)
        client = tls_client(processors=client_processors)
        try:
            assert server.tls_mode is TlsMode.ENFORCING and client.use_tls
            await echo(client, server)
            await echo(client, server, b"\x00" + bytes(range(256)) * 8192)  # 2 MiB in many TLS records
            responses = await asyncio.gather(*(
                client.invoke(server.address, create_request(ECHO, {"i": str(i)}), 5000) for i in range(200)
            ))
            assert [r.ext_fields for r in responses] == [{"i": str(i)} for i in range(200)]
            # The server calls the client back over the same TLS connection.
            assert (await client.invoke(server.address, create_request(CALL_BACK), 5000)).remark == "client said ok"
            await client.invoke_oneway(server.address, create_request(ECHO), 3000)
            connection = client.connection(server.address)
            assert connection is not None and connection.tls
            assert [c.tls for c in server.connections] == [True]
            assert "TLS" in repr(connection)
        finally:
            await client.shutdown()
            await server.shutdown()

    run(loop_kind, scenario)


@pytest.mark.parametrize("loop_kind", LOOPS)
def test_enforcing_server_closes_plain_clients_and_goes_on(loop_kind: str, certs: dict[str, KeyPair]) -> None:
    async def scenario() -> None:
        server, _ = await start_server(server_tls(certs, TlsMode.ENFORCING))
        plain, secure = plain_client(), tls_client()
        try:
            await echo(secure, server)
            with pytest.raises(RemotingSendRequestError):
                await plain.invoke(server.address, create_request(ECHO), 5000)
            assert await raw_exchange(server.port, b"GET / HTTP/1.1\r\n\r\n") == b""
            # Every plain attempt was closed alone: the TLS client's connection and the server are fine.
            await echo(secure, server)
            assert [c.tls for c in server.connections] == [True]
            with pytest.raises(RemotingSendRequestError):
                await plain.invoke(server.address, create_request(ECHO), 5000)
            await echo(tls_client(), server)
        finally:
            await plain.shutdown()
            await secure.shutdown()
            await server.shutdown()

    run(loop_kind, scenario)


# --- permissive ----------------------------------------------------------------------------------


@pytest.mark.parametrize("loop_kind", LOOPS)
def test_permissive_server_serves_plain_and_tls_on_one_port(loop_kind: str, certs: dict[str, KeyPair]) -> None:
    async def scenario() -> None:
        server, _ = await start_server(server_tls(certs, TlsMode.PERMISSIVE))
        plain, secure = plain_client(), tls_client()
        try:
            await echo(plain, server)
            await echo(secure, server)
            big = bytes(range(256)) * 4096
            await asyncio.gather(echo(plain, server, big), echo(secure, server, big))
            assert sorted(c.tls for c in server.connections) == [False, True]
            plain_connection, secure_connection = plain.connection(server.address), secure.connection(server.address)
            assert plain_connection is not None and not plain_connection.tls
            assert secure_connection is not None and secure_connection.tls
            # The server calls back on the plain connection too (the client has no processor for it).
            answer = await plain.invoke(server.address, create_request(CALL_BACK), 5000)
            assert answer.remark is not None and answer.remark.startswith("client said")
        finally:
            await plain.shutdown()
            await secure.shutdown()
            await server.shutdown()

    run(loop_kind, scenario)


@pytest.mark.parametrize("loop_kind", LOOPS)
def test_permissive_server_survives_a_broken_handshake(loop_kind: str, certs: dict[str, KeyPair]) -> None:
    async def scenario() -> None:
        server, _ = await start_server(server_tls(certs, TlsMode.PERMISSIVE))
        secure = tls_client()
        try:
            await echo(secure, server)
            # A record that claims to be a handshake, then garbage: this connection fails its handshake alone.
            await raw_exchange(server.port, b"\x16\x03\x01\x00\x05hello" + b"\x00" * 64)  # closed by the server
            await wait_until(lambda: len(server.connections) == 1, timeout=5.0)
            await echo(secure, server)
            await echo(plain_client(), server)
        finally:
            await secure.shutdown()
            await server.shutdown()

    run(loop_kind, scenario)


@pytest.mark.parametrize("loop_kind", LOOPS)
def test_silent_connection_is_closed_after_the_idle_time_and_shutdown_is_prompt(
    loop_kind: str, certs: dict[str, KeyPair],
) -> None:
    async def scenario() -> None:
        server, _ = await start_server(server_tls(certs, TlsMode.PERMISSIVE), server_channel_max_idle_time_seconds=0.3)
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        assert await asyncio.wait_for(reader.read(), 5) == b""  # closed: nothing came within 0.3 s
        writer.close()
        # A connection still being looked at when the server shuts down does not hold the shutdown.
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        loop = asyncio.get_running_loop()
        started = loop.time()
        await server.shutdown()
        assert loop.time() - started < 2.0
        assert await asyncio.wait_for(reader.read(), 5) == b""
        writer.close()
        with pytest.raises(RemotingConnectError):
            await plain_client().invoke(server.address, create_request(ECHO), 1000)

    run(loop_kind, scenario)


# --- plain servers, certificates ------------------------------------------------------------------


@pytest.mark.parametrize("loop_kind", LOOPS)
def test_tls_client_against_a_plain_server_fails_with_a_typed_error(loop_kind: str) -> None:
    async def scenario() -> None:
        server, _ = await start_server(TlsConfig())
        secure, plain = tls_client(), plain_client()
        try:
            assert server.tls_mode is TlsMode.DISABLED
            with pytest.raises(TlsHandshakeError) as caught:
                await secure.invoke(server.address, create_request(ECHO), 5000)
            assert isinstance(caught.value, RemotingConnectError) and server.address in str(caught.value)
            await echo(plain, server)
        finally:
            await secure.shutdown()
            await plain.shutdown()
            await server.shutdown()

    run(loop_kind, scenario)


@pytest.mark.parametrize("loop_kind", LOOPS)
def test_client_checks_the_server_certificate_when_asked(loop_kind: str, certs: dict[str, KeyPair]) -> None:
    async def scenario() -> None:
        server, _ = await start_server(server_tls(certs, TlsMode.ENFORCING))
        trusting = tls_client(TlsConfig(client_auth_server=True, client_trust_cert_path=certs["server"].cert,
                                        client_verify_hostname=True))
        distrusting = tls_client(TlsConfig(client_auth_server=True, client_trust_cert_path=certs["stranger"].cert))
        test_mode = tls_client(TlsConfig(test_mode_enable=True, client_auth_server=True,
                                         client_trust_cert_path=certs["stranger"].cert))
        try:
            await echo(trusting, server)
            with pytest.raises(TlsHandshakeError, match="certificate"):
                await distrusting.invoke(server.address, create_request(ECHO), 5000)
            await echo(test_mode, server)  # test mode trusts any server, as Java's
            await echo(trusting, server)
        finally:
            for client in (trusting, distrusting, test_mode):
                await client.shutdown()
            await server.shutdown()

    run(loop_kind, scenario)


@pytest.mark.parametrize("loop_kind", LOOPS)
def test_server_requiring_client_certificates(loop_kind: str, certs: dict[str, KeyPair]) -> None:
    async def scenario() -> None:
        server, _ = await start_server(server_tls(
            certs, TlsMode.ENFORCING, server_need_client_auth=ClientAuth.REQUIRE,
            server_trust_cert_path=certs["client"].cert,
        ))
        known = tls_client(TlsConfig(client_cert_path=certs["client"].cert, client_key_path=certs["client"].key))
        anonymous = tls_client()
        stranger = tls_client(TlsConfig(client_cert_path=certs["stranger"].cert, client_key_path=certs["stranger"].key))
        try:
            await echo(known, server)
            for refused in (anonymous, stranger):
                # With TLS 1.3 the client may learn of the refusal only when it reads: either error is fine.
                with pytest.raises((TlsHandshakeError, RemotingSendRequestError)):
                    await refused.invoke(server.address, create_request(ECHO), 5000)
            await echo(known, server)
            assert [c.tls for c in server.connections] == [True]
        finally:
            for client in (known, anonymous, stranger):
                await client.shutdown()
            await server.shutdown()

    run(loop_kind, scenario)


@pytest.mark.parametrize("loop_kind", LOOPS)
def test_test_mode_server_makes_its_own_certificate(loop_kind: str) -> None:
    pytest.importorskip("cryptography")

    async def scenario() -> None:
        server, _ = await start_server(TlsConfig(server_mode=TlsMode.ENFORCING, test_mode_enable=True))
        client = tls_client()
        try:
            await echo(client, server)
        finally:
            await client.shutdown()
            await server.shutdown()

    run(loop_kind, scenario)


def test_test_mode_without_cryptography_asks_for_certificate_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cryptography", None)
    with pytest.raises(TlsConfigError, match="cryptography.*tls.server.certPath"):
        TlsConfig(server_mode=TlsMode.PERMISSIVE, test_mode_enable=True).server_context()


async def test_server_without_certificates_does_not_start() -> None:
    server = RemotingServer(config=RemotingServerConfig(tls=TlsConfig(server_mode=TlsMode.PERMISSIVE)))
    with pytest.raises(TlsConfigError, match=r"tls\.server\.certPath and tls\.server\.keyPath"):
        await server.start()
    assert not server.is_serving


def test_bad_settings_fail_with_config_errors(tmp_path: Path, certs: dict[str, KeyPair]) -> None:
    with pytest.raises(TlsConfigError, match="enforcin"):
        TlsConfig(server_mode="enforcin")  # type: ignore[arg-type]
    with pytest.raises(TlsConfigError, match="need.client.auth"):
        TlsConfig(server_need_client_auth="always")  # type: ignore[arg-type]
    with pytest.raises(TlsConfigError, match="trustCertPath"):
        server_tls(certs, TlsMode.ENFORCING, server_need_client_auth=ClientAuth.OPTIONAL).server_context()
    with pytest.raises(TlsConfigError, match="cannot be loaded"):
        TlsConfig(server_cert_path=str(tmp_path / "missing.crt"), server_key_path=certs["server"].key).server_context()
    with pytest.raises(TlsConfigError, match="keyPath"):
        TlsConfig(client_cert_path=certs["client"].cert).client_context()
    with pytest.raises(TlsConfigError, match="trustCertPath"):
        RemotingClient(config=RemotingClientConfig(use_tls=True, tls=TlsConfig(
            client_auth_server=True, client_trust_cert_path=str(tmp_path / "missing.pem"))))
    # Test mode ignores the client's certificate settings, as Java's does.
    assert TlsConfig(test_mode_enable=True, client_cert_path="nowhere").client_context().verify_mode == ssl.CERT_NONE


# --- settings from the environment --------------------------------------------------------------


def test_settings_from_java_property_names_and_shell_names(tmp_path: Path) -> None:
    env = {
        "tls.enable": "true",
        "TLS_SERVER_MODE": "enforcing",
        "tls.server.certPath": "/certs/server.crt",
        "TLS_SERVER_KEYPATH": "/certs/server.key",
        "tls.server.need.client.auth": "optional",
        "TLS_CLIENT_AUTHSERVER": "TRUE",
        "tls.client.trustCertPath": "/certs/ca.pem",
        "tls.test.mode.enable": "false",
        "tls.config.file": str(tmp_path / "absent.properties"),
    }
    config = TlsConfig.from_env(env)
    assert config.enable and config.client_auth_server and not config.test_mode_enable
    assert config.server_mode is TlsMode.ENFORCING
    assert config.server_need_client_auth is ClientAuth.OPTIONAL
    assert (config.server_cert_path, config.server_key_path) == ("/certs/server.crt", "/certs/server.key")
    assert config.client_trust_cert_path == "/certs/ca.pem"
    # The exact Java name wins over the shell spelling.
    assert TlsConfig.from_env({"tls.server.mode": "permissive", "TLS_SERVER_MODE": "enforcing",
                               "TLS_CONFIG_FILE": str(tmp_path / "absent")}).server_mode is TlsMode.PERMISSIVE
    with pytest.raises(TlsConfigError, match="tls.client.authServer"):
        TlsConfig.from_env({"tls.client.authServer": "maybe", "TLS_CONFIG_FILE": str(tmp_path / "absent")})


def test_config_file_wins_except_for_mode_and_enable(tmp_path: Path) -> None:
    properties = tmp_path / "tls.properties"
    properties.write_text(
        "# written by hand\n"
        "! another comment\n"
        "tls.server.mode=enforcing\n"
        "tls.enable=true\n"
        "tls.server.certPath = /from/file.crt\n"
        "tls.server.keyPath: /from/file.key\n"
        "tls.client.authServer true\n"
        "tls.client.trustCertPath=/from/\\\n"
        "    ca.pem\n"
    )
    assert read_properties(properties)["tls.client.trustCertPath"] == "/from/ca.pem"
    config = TlsConfig.from_env({
        "tls.config.file": str(properties),
        "tls.server.mode": "permissive",
        "tls.server.certPath": "/from/env.crt",
    })
    assert config.server_mode is TlsMode.PERMISSIVE and not config.enable
    assert (config.server_cert_path, config.server_key_path) == ("/from/file.crt", "/from/file.key")
    assert config.client_auth_server and config.client_trust_cert_path == "/from/ca.pem"
    overridden = TlsConfig.from_properties({"tls.server.mode": "disabled", "tls.client.keyPath": ""}, base=config)
    assert overridden.server_mode is TlsMode.DISABLED and overridden.client_key_path is None
    assert config.server_mode is TlsMode.PERMISSIVE  # the base is not changed


def test_clients_follow_tls_enable_and_servers_tls_server_mode(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    monkeypatch.setenv("TLS_CONFIG_FILE", str(tmp_path / "absent"))
    for name in ("tls.enable", "TLS_ENABLE"):
        monkeypatch.delenv(name, raising=False)
    assert not tls_enabled_from_env() and not RemotingClientConfig().use_tls
    monkeypatch.setenv("TLS_ENABLE", "true")
    assert tls_enabled_from_env() and RemotingClientConfig().use_tls
    assert RemotingClient().use_tls
    assert not RemotingClientConfig(use_tls=False).use_tls

    async def scenario() -> None:
        monkeypatch.setenv("TLS_SERVER_MODE", "permissive")
        server = RemotingServer()
        with pytest.raises(TlsConfigError):  # permissive from the environment, but no certificate
            await server.start()
        monkeypatch.setenv("TLS_SERVER_MODE", "disabled")
        server = RemotingServer()
        await server.start()
        try:
            assert server.tls_mode is TlsMode.DISABLED
        finally:
            await server.shutdown()

    run("asyncio", scenario)


def test_generated_key_is_pkcs8_and_private(tmp_path: Path) -> None:
    x509 = pytest.importorskip("cryptography.x509")
    generate_self_signed_certificate(tmp_path / "c.pem", tmp_path / "k.pem", hosts=("broker.local", "10.0.0.1"))
    assert (tmp_path / "k.pem").read_text().startswith("-----BEGIN PRIVATE KEY-----")  # PKCS#8, as Java reads
    assert (tmp_path / "k.pem").stat().st_mode & 0o077 == 0
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(str(tmp_path / "c.pem"))
    certificate = x509.load_pem_x509_certificate((tmp_path / "c.pem").read_bytes())
    names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(name.value) for name in names] == ["broker.local", "10.0.0.1"]


def test_listening_on_every_interface(certs: dict[str, KeyPair]) -> None:
    async def scenario() -> None:
        state = ServerState()
        server = RemotingServer("0.0.0.0", 0, build_processors(state),
                                config=RemotingServerConfig(tls=server_tls(certs, TlsMode.PERMISSIVE)))
        await server.start()
        try:
            client = tls_client()
            response = await client.invoke(f"127.0.0.1:{server.port}", create_request(ECHO), 5000)
            assert response.code == 0
            await client.shutdown()
            with socket.create_connection(("127.0.0.1", server.port), timeout=5):
                pass
        finally:
            await server.shutdown()

    run("asyncio", scenario)
