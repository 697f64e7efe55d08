"""A deliberately tiny RemotingCommand client used only to probe the Java servers.

The harness must not depend on the project's own Python implementation (that is what is under
test), so readiness checks talk to the name server with this minimal JSON-header client.
"""

from __future__ import annotations

import json
import socket
import ssl
import struct

GET_BROKER_CLUSTER_INFO = 106
GET_BROKER_RUNTIME_INFO = 28


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed by peer")
        buf += chunk
    return bytes(buf)


def _tls_context() -> ssl.SSLContext:
    """Trusts any server, as Java's clients do in TLS test mode: the probes check readiness, not certificates."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def request(addr: str, code: int, ext_fields: dict | None = None, body: bytes = b"",
            timeout: float = 3.0, tls: bool = False) -> tuple[dict, bytes]:
    """Send one JSON-serialized request and return (response header dict, response body); ``tls`` for a
    server in TLS enforcing mode."""
    with connect(addr, timeout, tls) as sock:
        return exchange(sock, code, ext_fields, body)


def connect(addr: str, timeout: float = 3.0, tls: bool = False) -> socket.socket:
    """A connection for :func:`exchange` (the caller closes it): for requests whose effect lasts while the
    connection does, such as a broker registration."""
    host, port = addr.rsplit(":", 1)
    raw = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout)
    return _tls_context().wrap_socket(raw) if tls else raw


def exchange(sock: socket.socket, code: int, ext_fields: dict | None = None, body: bytes = b"") -> tuple[dict, bytes]:
    """One JSON-serialized request on ``sock`` and its answer (header dict, body)."""
    header = {"code": code, "flag": 0, "language": "PYTHON", "opaque": 1, "serializeTypeCurrentRPC": "JSON",
              "version": 0}
    if ext_fields:
        header["extFields"] = {str(k): str(v) for k, v in ext_fields.items()}
    h = json.dumps(header, separators=(",", ":")).encode()
    sock.sendall(struct.pack(">II", 4 + len(h) + len(body), len(h)) + h + body)
    while True:  # skip the requests a broker may send first (NOTIFY_CONSUMER_IDS_CHANGED after a heartbeat)
        (length,) = struct.unpack(">I", _recv_exact(sock, 4))
        content = _recv_exact(sock, length)
        (hl,) = struct.unpack(">I", content[:4])
        if hl >> 24 != 0:
            raise ValueError("expected a JSON-serialized response")
        hl &= 0xFFFFFF
        answer = json.loads(content[4:4 + hl])
        if answer.get("flag", 0) & 1:
            return answer, content[4 + hl:]


def cluster_info(namesrv_addr: str, timeout: float = 3.0, tls: bool = False) -> bytes:
    """Raw body of GET_BROKER_CLUSTER_INFO (fastjson text, not always strict JSON)."""
    header, body = request(namesrv_addr, GET_BROKER_CLUSTER_INFO, timeout=timeout, tls=tls)
    if header.get("code") != 0:
        raise RuntimeError(f"GET_BROKER_CLUSTER_INFO answered {header}")
    return body


def broker_runtime_info_ready(broker_addr: str, timeout: float = 3.0, tls: bool = False) -> bool:
    """Whether the broker answers GET_BROKER_RUNTIME_INFO.

    A 4.9 broker fails that request (SYSTEM_ERROR, NoSuchElementException)
    until its stats service has taken a first sample, and mqadmin's
    clusterList and brokerStatus send it.
    """
    try:
        header, _ = request(broker_addr, GET_BROKER_RUNTIME_INFO, timeout=timeout, tls=tls)
    except (OSError, ValueError):
        return False
    return header.get("code") == 0


def port_open(host: str, port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False
