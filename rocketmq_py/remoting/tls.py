"""TLS settings of the remoting layer (Java's ``TlsSystemConfig`` and ``TlsHelper``) and their SSL contexts.

:class:`TlsConfig` has one field per Java system property, in Python
spelling; :meth:`TlsConfig.from_env` reads them from the environment, under
the Java name (``tls.server.mode``) or in shell spelling
(``TLS_SERVER_MODE``), then from the properties file named by
``tls.config.file`` (``/etc/rocketmq/tls.properties`` by default), whose
values win except for ``tls.enable`` and ``tls.server.mode``, as in Java.

Where Python differs from Java 4.9.8:

* ``test_mode_enable`` defaults to False (Java: true) and ``server_mode`` to
  ``disabled`` (Java: ``permissive``), so that nothing needs a certificate
  until TLS is asked for. In test mode a server makes a self-signed
  certificate at start, which needs the ``cryptography`` package.
* A server that asks for client certificates (``server_need_client_auth``
  ``optional`` or ``require``) checks them against
  ``server_trust_cert_path``: Python's ``ssl`` cannot accept any
  certificate, as Java does without ``tls.server.authClient``.
* ``client_verify_hostname`` (no Java property, off by default as Netty's
  is) also checks the server's name when ``client_auth_server`` is on.
"""
from __future__ import annotations

import os
import ssl
from dataclasses import dataclass, replace
from enum import Enum
from typing import Mapping

from rocketmq_py.errors import TlsConfigError

__all__ = [
    "ClientAuth",
    "TLS_HANDSHAKE_MAGIC",
    "TlsConfig",
    "TlsMode",
    "generate_self_signed_certificate",
    "read_properties",
]

#: The first byte of a TLS record carrying a handshake: how a permissive server tells TLS from plain frames.
TLS_HANDSHAKE_MAGIC = 0x16

DEFAULT_CONFIG_FILE = "/etc/rocketmq/tls.properties"


class TlsMode(str, Enum):
    """How a server treats TLS (Java's ``TlsMode``)."""

    #: Plain connections only.
    DISABLED = "disabled"
    #: TLS and plain connections on the same port, told apart by their first byte.
    PERMISSIVE = "permissive"
    #: TLS connections only; a plain one is closed at its first byte.
    ENFORCING = "enforcing"

    @classmethod
    def parse(cls, text: str | TlsMode) -> TlsMode:
        if isinstance(text, TlsMode):
            return text
        try:
            return cls(str(text).strip().lower())
        except ValueError:
            raise TlsConfigError(
                f"tls.server.mode {text!r} is not one of disabled, permissive, enforcing"
            ) from None


class ClientAuth(str, Enum):
    """Whether a TLS server asks for client certificates (Netty's ``ClientAuth``)."""

    NONE = "none"
    OPTIONAL = "optional"
    REQUIRE = "require"

    @classmethod
    def parse(cls, text: str | ClientAuth | None) -> ClientAuth:
        if isinstance(text, ClientAuth):
            return text
        if text is None or not str(text).strip():
            return cls.NONE
        try:
            return cls(str(text).strip().lower())
        except ValueError:
            raise TlsConfigError(
                f"tls.server.need.client.auth {text!r} is not one of none, optional, require"
            ) from None


#: Java's property names, by field.
PROPERTY_NAMES = {
    "enable": "tls.enable",
    "test_mode_enable": "tls.test.mode.enable",
    "server_mode": "tls.server.mode",
    "server_need_client_auth": "tls.server.need.client.auth",
    "server_key_path": "tls.server.keyPath",
    "server_key_password": "tls.server.keyPassword",
    "server_cert_path": "tls.server.certPath",
    "server_auth_client": "tls.server.authClient",
    "server_trust_cert_path": "tls.server.trustCertPath",
    "client_key_path": "tls.client.keyPath",
    "client_key_password": "tls.client.keyPassword",
    "client_cert_path": "tls.client.certPath",
    "client_auth_server": "tls.client.authServer",
    "client_trust_cert_path": "tls.client.trustCertPath",
}
CONFIG_FILE_PROPERTY = "tls.config.file"
#: Java reads these from system properties only, never from the config file.
_NOT_FROM_FILE = ("enable", "server_mode")

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off", ""}


def _parse_bool(name: str, text: str | bool) -> bool:
    if isinstance(text, bool):
        return text
    value = str(text).strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise TlsConfigError(f"{name} must be true or false, got {text!r}")


def env_lookup(environ: Mapping[str, str], name: str) -> str | None:
    """The value of a Java property from the environment: ``tls.enable`` or else ``TLS_ENABLE``."""
    value = environ.get(name)
    if value is None:
        value = environ.get(name.upper().replace(".", "_"))
    return value


def tls_enabled_from_env(environ: Mapping[str, str] | None = None) -> bool:
    """``tls.enable`` (or ``TLS_ENABLE``) from the environment: whether clients use TLS by default."""
    value = env_lookup(os.environ if environ is None else environ, PROPERTY_NAMES["enable"])
    return False if value is None else _parse_bool("tls.enable", value)


def read_properties(path: str | os.PathLike[str]) -> dict[str, str]:
    """``key=value`` (or ``key: value``, ``key value``) lines of a Java properties file; ``#``/``!`` comments."""
    from pathlib import Path  # lazy: this module is on every client's import path; files are read rarely

    result: dict[str, str] = {}
    pending = ""
    for raw in Path(path).read_text(encoding="latin-1").splitlines():
        line = pending + raw.lstrip()
        pending = ""
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = line[:-1]
            continue
        for index, char in enumerate(line):
            if char in "=: \t":
                key, rest = line[:index], line[index + 1:].lstrip()
                if char in " \t" and rest[:1] in ("=", ":"):
                    rest = rest[1:].lstrip()
                break
        else:
            key, rest = line, ""
        result[key] = rest.strip()
    return result


@dataclass
class TlsConfig:
    """Java's TLS system properties in Python spelling (see the module text for the differences)."""

    #: ``tls.enable``: clients connect with TLS (Java's default for ``ClientConfig.useTLS``).
    enable: bool = False
    #: ``tls.test.mode.enable``: a server uses a self-signed certificate; a client trusts any server.
    test_mode_enable: bool = False
    #: ``tls.server.mode``: disabled, permissive or enforcing.
    server_mode: TlsMode = TlsMode.DISABLED
    #: ``tls.server.need.client.auth``: none, optional or require.
    server_need_client_auth: ClientAuth = ClientAuth.NONE
    server_key_path: str | None = None
    server_key_password: str | None = None
    #: ``tls.server.certPath``: the server's X.509 certificate chain, PEM.
    server_cert_path: str | None = None
    server_auth_client: bool = False
    #: ``tls.server.trustCertPath``: PEM certificates that client certificates are checked against.
    server_trust_cert_path: str | None = None
    client_key_path: str | None = None
    client_key_password: str | None = None
    client_cert_path: str | None = None
    #: ``tls.client.authServer``: check the server's certificate (else any certificate is accepted).
    client_auth_server: bool = False
    #: ``tls.client.trustCertPath``: PEM certificates the server's is checked against (else the system's).
    client_trust_cert_path: str | None = None
    #: Python only: with ``client_auth_server``, also match the server's name or IP in its certificate.
    client_verify_hostname: bool = False
    #: Python only: how long a TLS handshake may take (Netty's SslHandler waits 10 s).
    handshake_timeout_seconds: float = 10.0

    def __post_init__(self) -> None:
        self.server_mode = TlsMode.parse(self.server_mode)
        self.server_need_client_auth = ClientAuth.parse(self.server_need_client_auth)

    # --- loading --------------------------------------------------------------------

    @classmethod
    def from_properties(cls, properties: Mapping[str, str], base: TlsConfig | None = None) -> TlsConfig:
        """``base`` (or the defaults) with the values that ``properties`` has under Java's names."""
        config = cls() if base is None else replace(base)
        for field_name, prop in PROPERTY_NAMES.items():
            if prop in properties:
                config._set(field_name, properties[prop])
        return config

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> TlsConfig:
        """The settings from the environment, then from the ``tls.config.file`` properties file if it exists."""
        environ = os.environ if environ is None else environ
        config = cls()
        for field_name, prop in PROPERTY_NAMES.items():
            value = env_lookup(environ, prop)
            if value is not None:
                config._set(field_name, value)
        config_file = env_lookup(environ, CONFIG_FILE_PROPERTY) or DEFAULT_CONFIG_FILE
        if os.path.isfile(config_file) and os.access(config_file, os.R_OK):
            from_file = read_properties(config_file)
            for field_name, prop in PROPERTY_NAMES.items():
                if field_name not in _NOT_FROM_FILE and prop in from_file:
                    config._set(field_name, from_file[prop])
        return config

    def _set(self, field_name: str, text: str) -> None:
        current = getattr(self, field_name)
        value: object
        if isinstance(current, bool):
            value = _parse_bool(PROPERTY_NAMES.get(field_name, field_name), text)
        elif field_name == "server_mode":
            value = TlsMode.parse(text)
        elif field_name == "server_need_client_auth":
            value = ClientAuth.parse(text)
        else:
            value = str(text) if str(text) else None
        setattr(self, field_name, value)

    # --- SSL contexts ---------------------------------------------------------------

    def client_context(self) -> ssl.SSLContext:
        """The context a client connects with (Java's ``TlsHelper.buildSslContext(true)``)."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        if self.test_mode_enable or not self.client_auth_server:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        else:
            context.check_hostname = self.client_verify_hostname
            context.verify_mode = ssl.CERT_REQUIRED
            if self.client_trust_cert_path:
                _load_trust(context, "tls.client.trustCertPath", self.client_trust_cert_path)
            else:
                context.load_default_certs(ssl.Purpose.SERVER_AUTH)
        if not self.test_mode_enable:
            _load_key_pair(context, "tls.client", self.client_cert_path, self.client_key_path,
                           self.client_key_password, required=False)
        return context

    def server_context(self) -> ssl.SSLContext:
        """The context a server accepts TLS with (Java's ``TlsHelper.buildSslContext(false)``)."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        if self.test_mode_enable:
            import tempfile  # lazy: only a test-mode server writes files

            with tempfile.TemporaryDirectory(prefix="rocketmq-py-tls-") as directory:
                cert_path, key_path = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
                generate_self_signed_certificate(cert_path, key_path)
                context.load_cert_chain(cert_path, key_path)
            return context
        _load_key_pair(context, "tls.server", self.server_cert_path, self.server_key_path,
                       self.server_key_password, required=True)
        if self.server_need_client_auth is not ClientAuth.NONE:
            context.verify_mode = (
                ssl.CERT_REQUIRED if self.server_need_client_auth is ClientAuth.REQUIRE else ssl.CERT_OPTIONAL
            )
            if not self.server_trust_cert_path:
                raise TlsConfigError(
                    f"tls.server.need.client.auth={self.server_need_client_auth.value} needs "
                    "tls.server.trustCertPath: the certificates that client certificates are checked against"
                )
            _load_trust(context, "tls.server.trustCertPath", self.server_trust_cert_path)
        return context


def _load_trust(context: ssl.SSLContext, prop: str, path: str) -> None:
    try:
        context.load_verify_locations(cafile=path)
    except (OSError, ssl.SSLError) as error:
        raise TlsConfigError(f"{prop} {path!r} cannot be loaded: {error}") from error


def _load_key_pair(
    context: ssl.SSLContext, prefix: str, cert_path: str | None, key_path: str | None, password: str | None,
    *, required: bool,
) -> None:
    if not cert_path and not key_path and not required:
        return
    if not cert_path or not key_path:
        what = "a server" if prefix == "tls.server" else "a client certificate"
        hint = (" (or tls.test.mode.enable=true for a self-signed certificate, which needs the "
                "cryptography package)") if prefix == "tls.server" else ""
        raise TlsConfigError(f"{what} needs both {prefix}.certPath and {prefix}.keyPath{hint}")
    try:
        context.load_cert_chain(cert_path, key_path, password or None)
    except (OSError, ssl.SSLError) as error:
        raise TlsConfigError(
            f"{prefix}.certPath {cert_path!r} and {prefix}.keyPath {key_path!r} cannot be loaded: {error}"
        ) from error


def generate_self_signed_certificate(
    cert_path: str | os.PathLike[str],
    key_path: str | os.PathLike[str],
    *,
    common_name: str = "localhost",
    hosts: tuple[str, ...] = ("localhost", "127.0.0.1", "::1"),
    days: int = 365,
) -> None:
    """Write a self-signed certificate and its unencrypted PKCS#8 key (what Java's TlsHelper reads), PEM.

    Needs the ``cryptography`` package.
    """
    import datetime  # lazy: as cryptography, needed only when a certificate is made
    import ipaddress
    from pathlib import Path

    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import rsa
        from cryptography.x509.oid import NameOID
    except ImportError:
        raise TlsConfigError(
            "a self-signed certificate (tls.test.mode.enable) needs the cryptography package: "
            "pip install cryptography, or give tls.server.certPath and tls.server.keyPath"
        ) from None
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    alt_names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            alt_names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            alt_names.append(x509.DNSName(host))
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
    )
    if alt_names:
        builder = builder.add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
    certificate = builder.sign(key, hashes.SHA256())
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption(),
    )
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as key_file:
        key_file.write(key_pem)
    Path(cert_path).write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
