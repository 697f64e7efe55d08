"""Settings of the remoting client and server (Java's ``NettyClientConfig`` and ``NettyServerConfig``).

Names follow Java's fields in Python spelling; a zero water mark keeps the
event loop's own write buffer limits. TLS settings (Java's system properties,
see :mod:`rocketmq_py.remoting.tls`) are read from the environment when
``tls`` is None.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from rocketmq_py import codec
from rocketmq_py.remoting.tls import TlsConfig, tls_enabled_from_env


@dataclass
class RemotingClientConfig:
    connect_timeout_millis: int = 3000
    client_channel_max_idle_time_seconds: float = 120.0
    client_async_semaphore_value: int = 65535
    client_oneway_semaphore_value: int = 65535
    write_buffer_high_water_mark: int = 0
    write_buffer_low_water_mark: int = 0
    max_frame_length: int = codec.MAX_FRAME_LENGTH
    #: Connect with TLS (Java's ``useTLS``); by default ``tls.enable`` (or ``TLS_ENABLE``) from the environment.
    use_tls: bool = field(default_factory=tls_enabled_from_env)
    #: Certificates and checks for TLS; None means :meth:`TlsConfig.from_env` when the client is created.
    tls: TlsConfig | None = None


@dataclass
class RemotingServerConfig:
    server_channel_max_idle_time_seconds: float = 120.0
    server_async_semaphore_value: int = 64
    server_oneway_semaphore_value: int = 256
    server_socket_backlog: int = 1024
    write_buffer_high_water_mark: int = 0
    write_buffer_low_water_mark: int = 0
    max_frame_length: int = codec.MAX_FRAME_LENGTH
    #: Python only: how many front processes own the client sockets (see :mod:`rocketmq_py.remoting.relay`);
    #: 0 serves them in this process.
    worker_processes: int = 0
    #: How long :meth:`RemotingServer.shutdown` lets running processors finish.
    shutdown_timeout_seconds: float = 5.0
    #: ``server_mode`` (disabled, permissive, enforcing) and certificates; None means
    #: :meth:`TlsConfig.from_env` when the server starts (disabled unless ``tls.server.mode`` is set).
    tls: TlsConfig | None = None
