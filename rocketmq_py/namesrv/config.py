"""Name server settings (Java's common/namesrv/NamesrvConfig plus the NettyServerConfig keys it uses).

Names are Java's in Python spelling, so a ``namesrv.properties`` written for
the Java name server loads here unchanged (:func:`load_namesrv_config`).
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from rocketmq_py.common.config_file import apply_properties, load_properties
from rocketmq_py.common.metrics_http import load_prometheus

_log = logging.getLogger(__name__)

DEFAULT_LISTEN_PORT = 9876


def _home_path(*parts: str) -> str:
    return str(Path.home().joinpath(*parts))


@dataclass
class NamesrvConfig:
    rocketmq_home: str = field(default_factory=lambda: os.environ.get("ROCKETMQ_HOME", ""))
    kv_config_path: str = field(default_factory=lambda: _home_path("namesrv", "kvConfig.json"))
    config_store_path: str = field(default_factory=lambda: _home_path("namesrv", "namesrv.properties"))
    product_env_name: str = "center"
    cluster_test: bool = False
    #: Adds ``orderTopicConf`` from the ORDER_TOPIC_CONFIG namespace to topic routes.
    order_message_enable: bool = False
    #: Keys UPDATE_NAMESRV_CONFIG may not change, ``;``-separated.
    config_black_list: str = "configBlackList;configStorePath;kvConfigPath"
    listen_port: int = DEFAULT_LISTEN_PORT
    #: The address to listen on (all interfaces by default, as Java's name server).
    bind_address: str = "0.0.0.0"
    server_channel_max_idle_time_seconds: int = 120
    server_async_semaphore_value: int = 64
    server_oneway_semaphore_value: int = 256
    server_socket_backlog: int = 1024
    #: How long a broker may go without registering before it is dropped (Java: 2 minutes).
    broker_channel_expired_millis: int = 120_000
    #: How often brokers are checked for expiry (Java: every 10 s).
    scan_not_active_broker_interval_millis: int = 10_000
    #: Serve Prometheus metrics and ``/health`` over HTTP on this port (0: off; -1: any free port).
    metrics_port: int = 0

    def black_listed_keys(self) -> set[str]:
        keys = {"configBlackList", "configStorePath", "kvConfigPath", "rocketmqHome"}
        keys.update(k for k in self.config_black_list.split(";") if k)
        return keys


def load_namesrv_config(path: str | os.PathLike[str] | None = None, **overrides: object) -> NamesrvConfig:
    """Defaults, then the properties file at ``path``, then ``overrides``; unknown keys are logged, not fatal."""
    config = NamesrvConfig()
    if path is not None:
        unknown = apply_properties(config, load_properties(path))
        for key in unknown:
            _log.warning("unknown name server config key %r in %s; ignored", key, path)
    for name, value in overrides.items():
        if value is not None:
            setattr(config, name, value)
    if config.metrics_port:
        load_prometheus()
    return config
