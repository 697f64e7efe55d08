"""Settings of the remoting client and server (Java's ``NettyClientConfig`` and ``NettyServerConfig``).

Names follow Java's fields in Python spelling; a zero water mark keeps the
event loop's own write buffer limits.
"""
from __future__ import annotations

from dataclasses import dataclass

from rocketmq_py import codec


@dataclass
class RemotingClientConfig:
    connect_timeout_millis: int = 3000
    client_channel_max_idle_time_seconds: float = 120.0
    client_async_semaphore_value: int = 65535
    client_oneway_semaphore_value: int = 65535
    write_buffer_high_water_mark: int = 0
    write_buffer_low_water_mark: int = 0
    max_frame_length: int = codec.MAX_FRAME_LENGTH


@dataclass
class RemotingServerConfig:
    server_channel_max_idle_time_seconds: float = 120.0
    server_async_semaphore_value: int = 64
    server_oneway_semaphore_value: int = 256
    server_socket_backlog: int = 1024
    write_buffer_high_water_mark: int = 0
    write_buffer_low_water_mark: int = 0
    max_frame_length: int = codec.MAX_FRAME_LENGTH
    #: How long :meth:`RemotingServer.shutdown` lets running processors finish.
    shutdown_timeout_seconds: float = 5.0
