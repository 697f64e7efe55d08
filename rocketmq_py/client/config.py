"""Client and producer settings (Java's ClientConfig and DefaultMQProducer), in Python spelling.

Times are in milliseconds, as in Java. The name server address comes from
the argument, else from ``NAMESRV_ADDR``; several addresses are separated by
``;``.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from rocketmq_py.client.option_types import check_option_types
from rocketmq_py.common.codes import ResponseCode
from rocketmq_py.common.topic import AUTO_CREATE_TOPIC_KEY_TOPIC
from rocketmq_py.errors import InvalidArgumentError
from rocketmq_py.remoting.tls import TlsConfig, tls_enabled_from_env

DEFAULT_INSTANCE_NAME = "DEFAULT"

#: The response codes after which a sync send tries another queue (DefaultMQProducer.retryResponseCodes).
RETRY_RESPONSE_CODES = frozenset({
    ResponseCode.TOPIC_NOT_EXIST, ResponseCode.SERVICE_NOT_AVAILABLE, ResponseCode.SYSTEM_ERROR,
    ResponseCode.NO_PERMISSION, ResponseCode.NO_BUYER_ID, ResponseCode.NOT_IN_CURRENT_UNIT,
})


def _namesrv_from_env() -> str | None:
    return os.environ.get("NAMESRV_ADDR") or None


@dataclass
class ClientConfig:
    """What every client (producer or consumer) of one client instance shares."""

    namesrv_addr: str | None = field(default_factory=_namesrv_from_env)
    #: ``DEFAULT`` is replaced by ``<pid>#<nanotime>`` when a producer starts, as Java does.
    instance_name: str = field(default_factory=lambda: os.environ.get("ROCKETMQ_CLIENT_NAME", DEFAULT_INSTANCE_NAME))
    client_ip: str | None = None
    namespace: str | None = None
    unit_name: str | None = None
    poll_name_server_interval: int = 30_000
    heartbeat_broker_interval: int = 30_000
    mq_client_api_timeout: int = 3_000
    access_key: str | None = None
    secret_key: str | None = None
    security_token: str | None = None
    #: TLS to name servers and brokers (Java's useTLS); by default ``tls.enable`` (or ``TLS_ENABLE``) from the env.
    use_tls: bool = field(default_factory=tls_enabled_from_env)
    #: Certificates and checks for TLS; None reads Java's ``tls.*`` settings from the environment.
    tls_config: TlsConfig | None = None
    vip_channel_enabled: bool = False
    #: ``"JSON"`` or ``"ROCKETMQ"`` for every request; None follows ROCKETMQ_SERIALIZE_TYPE (JSON by default).
    serialize_type: str | None = None

    def __post_init__(self) -> None:
        check_option_types(self)

    def namesrv_addresses(self) -> list[str]:
        """The name server addresses (``namesrv_addr`` split at ``;``)."""
        if not self.namesrv_addr:
            return []
        return [addr.strip() for addr in self.namesrv_addr.split(";") if addr.strip()]

    def serialize_type_code(self) -> int | None:
        """The serialize type code for requests, or None to follow ROCKETMQ_SERIALIZE_TYPE."""
        if self.serialize_type is None:
            return None
        from rocketmq_py import codec  # lazy: a configuration is made before any frame is

        name = self.serialize_type.strip().upper()
        if name == "JSON":
            return codec.SERIALIZE_JSON
        if name == "ROCKETMQ":
            return codec.SERIALIZE_ROCKETMQ
        raise InvalidArgumentError(f"serialize_type {self.serialize_type!r} is not JSON or ROCKETMQ")

    def with_namespace(self, resource: str) -> str:
        """``namespace%resource`` when a namespace is set (retry and DLQ prefixes stay in front)."""
        if not self.namespace or resource.startswith(self.namespace + "%"):
            return resource
        for prefix in ("%RETRY%", "%DLQ%"):
            if resource.startswith(prefix):
                return f"{prefix}{self.namespace}%{resource[len(prefix):]}"
        return f"{self.namespace}%{resource}"

    def without_namespace(self, resource: str) -> str:
        """``resource`` without this client's namespace prefix (the inverse of :meth:`with_namespace`)."""
        if not self.namespace:
            return resource
        marker = self.namespace + "%"
        if resource.startswith(marker):
            return resource[len(marker):]
        for prefix in ("%RETRY%", "%DLQ%"):
            if resource.startswith(prefix + marker):
                return prefix + resource[len(prefix) + len(marker):]
        return resource


@dataclass
class ProducerConfig(ClientConfig):
    """DefaultMQProducer's settings; the defaults are Java's."""

    producer_group: str = ""
    send_msg_timeout: int = 3_000
    retry_times_when_send_failed: int = 2
    retry_times_when_send_async_failed: int = 2
    retry_another_broker_when_not_store_ok: bool = False
    max_message_size: int = 4 * 1024 * 1024
    compress_msg_body_over_howmuch: int = 4096
    compress_level: int = 5
    #: ``"ZLIB"`` (default), ``"LZ4"`` or ``"ZSTD"``, as Java's ``rocketmq.message.compressType``.
    compress_type: str = "ZLIB"
    create_topic_key: str = AUTO_CREATE_TOPIC_KEY_TOPIC
    default_topic_queue_nums: int = 4
    send_latency_fault_enable: bool = False
    latency_max: tuple[int, ...] = (50, 100, 550, 1000, 2000, 3000, 15000)
    not_available_duration: tuple[int, ...] = (0, 0, 30000, 60000, 120000, 180000, 600000)
    retry_response_codes: frozenset[int] = RETRY_RESPONSE_CODES
    enable_msg_trace: bool = False
    #: The trace topic; None means RMQ_SYS_TRACE_TOPIC.
    custom_trace_topic: str | None = None
    #: The blocking ``Producer.send`` runs in the calling thread, on that thread's own connection to the
    #: broker, instead of hopping to the background loop (see ``client/producer/direct.py``): one connection
    #: per sending thread and broker, where Java shares one. No Java setting.
    send_in_calling_thread: bool = True

    def compression_code(self) -> int:
        """The codec constant of ``compress_type``; InvalidArgumentError when it is not ZLIB, LZ4 or ZSTD."""
        from rocketmq_py import codec  # lazy: a configuration is made before any frame is

        names = {"LZ4": codec.COMPRESSION_LZ4, "ZSTD": codec.COMPRESSION_ZSTD, "ZLIB": codec.COMPRESSION_ZLIB}
        try:
            return names[self.compress_type.strip().upper()]
        except (KeyError, AttributeError):
            raise InvalidArgumentError(
                f"compress_type {self.compress_type!r} is not one of ZLIB, LZ4, ZSTD"
            ) from None

    def validate(self) -> None:
        """Check the values together (ranges, pairs); InvalidArgumentError names the first wrong one."""
        if self.send_msg_timeout <= 0:
            raise InvalidArgumentError(f"send_msg_timeout must be positive, got {self.send_msg_timeout}")
        if self.retry_times_when_send_failed < 0 or self.retry_times_when_send_async_failed < 0:
            raise InvalidArgumentError("the retry counts cannot be negative")
        if self.max_message_size <= 0:
            raise InvalidArgumentError(f"max_message_size must be positive, got {self.max_message_size}")
        if len(self.latency_max) != len(self.not_available_duration):
            raise InvalidArgumentError("latency_max and not_available_duration must have the same length")
        self.compression_code()
        self.serialize_type_code()
        if (self.access_key is None) != (self.secret_key is None):
            raise InvalidArgumentError("set both access_key and secret_key for ACL, or neither")
