"""A small HTTP endpoint on the server's own event loop: ``GET /metrics`` in the Prometheus text format and
``GET /health`` as JSON (200 when healthy, 503 when not). Used by the broker and the name server when their
``metricsPort`` is set.

It is served from the event loop rather than prometheus_client's thread so that the figures are read where
they are written, without locks. ``prometheus_client`` (a dependency) is imported only when a server's
``metricsPort`` is set, so clients never load it.
"""
from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, Callable, Iterable

from rocketmq_py.errors import ConfigError

_log = logging.getLogger(__name__)

MAX_REQUEST_HEAD = 8192
READ_TIMEOUT_S = 10.0
_REASONS = {200: "OK", 404: "Not Found", 405: "Method Not Allowed", 400: "Bad Request", 500: "Internal Server Error",
            503: "Service Unavailable"}

#: ``collect()`` of a prometheus_client custom collector: yields metric families.
Collect = Callable[[], Iterable[Any]]
#: Returns (healthy, details) for ``/health``.
Health = Callable[[], "tuple[bool, dict[str, Any]]"]


def load_prometheus() -> Any:
    """The ``prometheus_client`` module, or :class:`ConfigError` when it is not installed.

    It is a dependency of the package, so only an install that left it out meets the error; servers call this
    while they read their configuration (when ``metricsPort`` is set), before they touch a store or a port.
    """
    try:
        import prometheus_client
    except ImportError:
        raise ConfigError("metricsPort is set but prometheus_client is not installed: "
                          "pip install prometheus_client, or remove metricsPort") from None
    return prometheus_client


class _Collector:
    def __init__(self, collect: Collect) -> None:
        self.collect = collect


class MetricsHttpServer:
    def __init__(self, host: str, port: int, collect: Collect, health: Health, name: str) -> None:
        self.host = host
        self.requested_port = port
        self.name = name
        self._health = health
        prometheus = load_prometheus()
        self._registry = prometheus.CollectorRegistry(auto_describe=False)
        self._registry.register(_Collector(collect))
        self._generate = prometheus.generate_latest
        self._content_type = prometheus.CONTENT_TYPE_LATEST
        self._server: asyncio.AbstractServer | None = None
        self.port = 0

    async def start(self) -> None:
        port = 0 if self.requested_port < 0 else self.requested_port
        self._server = await asyncio.start_server(self._serve, self.host, port)
        self.port = self._server.sockets[0].getsockname()[1]
        _log.info("the %s serves Prometheus metrics at http://%s:%d/metrics and its health at /health", self.name,
                  self.host, self.port)

    async def shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT_S)
            status, content_type, body = self._answer(head)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError, ConnectionError):
            writer.close()
            return
        head_out = (f"HTTP/1.1 {status} {_REASONS.get(status, '')}\r\nContent-Type: {content_type}\r\n"
                    f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode("latin-1")
        try:
            writer.write(head_out + body)
            await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    def _answer(self, head: bytes) -> tuple[int, str, bytes]:
        request_line = head.split(b"\r\n", 1)[0].decode("latin-1", "replace").split()
        if len(request_line) != 3:
            return 400, "text/plain", b"bad request\n"
        method, target, _ = request_line
        path = target.split("?", 1)[0]
        if method != "GET":
            return 405, "text/plain", b"only GET is served\n"
        if path == "/metrics":
            try:
                return 200, self._content_type, self._generate(self._registry)
            except Exception:
                _log.exception("collecting the %s metrics failed", self.name)
                return 500, "text/plain", b"collecting the metrics failed\n"
        if path == "/health":
            healthy, details = self._health()
            body = json.dumps({"status": "UP" if healthy else "DOWN", **details}, sort_keys=True).encode()
            return (200 if healthy else 503), "application/json", body
        return 404, "text/plain", b"not found: try /metrics or /health\n"
